"""The sample corpus's pretraining records at another shape than the shipped ones (albert_tf/sample/records,
64 tokens), built into a benchmark's scratch folder by data/sample/make_sample_records.py."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(folder, max_seq_length, max_predictions_per_seq):
    """Builds the records into folder (2-3 s); returns folder. The same bytes as the shipped records would
    be at that shape: the build is deterministic."""
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "data", "sample", "make_sample_records.py"),
            f"--output_dir={folder}",
            f"--max_seq_length={max_seq_length}",
            f"--max_predictions_per_seq={max_predictions_per_seq}",
        ],
        check=True,
        capture_output=True,
    )
    return folder
