"""The peak memory a run reports."""

import subprocess
import sys

import numpy as np

from tests.helpers import REPO

TOUCH = """
import numpy as np
from albert_tf.training import memory
devices = memory.device_peak_bytes()  # first: listing the devices starts TensorFlow's runtime
before = memory.host_peak_bytes()
block = np.ones(500 * 2**20, np.uint8)  # 500 MiB, every page written
after = memory.host_peak_bytes()
print(before, after, devices, memory.peak_text())
"""


def test_the_host_peak_grows_by_the_memory_the_process_touches():
    # A fresh process: its resident set is at its peak after imports, so the block raises the peak by about
    # its size (less what the imports had freed, which is far below 100 MiB). Started by this process, which
    # may be large: the child's peak is its own, not its parent's before exec.
    ballast = np.ones(300 * 2**20, np.uint8)  # this process holds 300 MiB more than the child ever will
    result = subprocess.run([sys.executable, "-c", TOUCH], cwd=REPO, capture_output=True, text=True)
    del ballast
    assert result.returncode == 0, result.stderr[-2000:]
    before, after, devices, text = result.stdout.strip().split(" ", 3)
    assert 400 * 2**20 < int(after) - int(before) < 600 * 2**20, (before, after)
    assert devices == "{}"  # no GPU or TPU here
    assert text == f"peak memory {int(after) / 1e9:.2f} GB host"
