"""Shared fixtures: every test starts from the float32 policy and a fixed seed; the quick start's model.
Under pytest-xdist each worker's TensorFlow gets its share of the cores, and the slow tests start first."""

import os
import pathlib
import subprocess
import sys

# Before TensorFlow starts (keras imports it): its intra-op thread pool defaults to one thread per core in
# every process, so N xdist workers on N cores run N times too many threads, which wait on each other. One
# share per worker, inherited by the commands the tests start (the quick start, the notebook's kernel); the
# inter-op pool stays as TensorFlow sizes it (one thread there can deadlock ops that block on each other).
# Measured on a 2-core Xeon, 2026-11-26: the suite in 20 min 10 s with it, 24 min 18 s and 27 min 18 s
# without.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import keras  # noqa: E402
import pytest  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _deterministic_float32():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


# A guard against a hung run, not a speed target: the quick start's time is the CPU's. With the tiny config
# at 4 layers (until 2026-11-27) the README's first command alone, install included, took 6 min 46 s on a
# 2-core Intel Xeon with AMX and 10 min 40 s on a 2-core AMD EPYC with AVX2 only; under the suite (one
# intra-op thread, the other worker busy) that EPYC ran 48 examples/s, about 17 min for the 1,500 steps of
# 32 it had then (CI, 2026-11-26), which the earlier 900 s guard cut off. At 2 layers, 1,000 steps of 32 x 128
# (2,000 of 32 x 64 since 2026-11-28: the same tokens) it is about a third of that.
QUICK_START_TIMEOUT = 2400


@pytest.fixture(scope="session")
def quick_start(tmp_path_factory):
    """The README's quick start, run once: (its CompletedProcess, the model directory it wrote)."""
    output = tmp_path_factory.mktemp("work") / "tiny"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_pretraining", "--flagfile=configs/pretrain/tiny.flags",
         f"--output_dir={output}"],
        cwd=ROOT, capture_output=True, text=True, timeout=QUICK_START_TIMEOUT, env=dict(os.environ),
    )  # fmt: skip
    return result, output


def pytest_collection_modifyitems(items):
    """The quick start's test first, then the other tests marked slow, in their order, then the rest. xdist's
    loadgroup hands out the largest group first (the export tests, which share their exports), then the
    tests one by one in this order: the longest test (the quick start, minutes on one core) starts at once
    on the other worker instead of keeping one busy after the others end."""
    items.sort(
        key=lambda item: ("quick_start" not in item.fixturenames, item.get_closest_marker("slow") is None)
    )
