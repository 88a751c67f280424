"""Shared fixtures: every test starts from the float32 policy and a fixed seed; the quick start's model."""

import os
import pathlib
import subprocess
import sys

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _deterministic_float32():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="session")
def quick_start(tmp_path_factory):
    """The README's quick start, run once: (its CompletedProcess, the model directory it wrote)."""
    output = tmp_path_factory.mktemp("work") / "tiny"
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_pretraining", "--flagfile=configs/pretrain/tiny.flags",
         f"--output_dir={output}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env=dict(os.environ),
    )  # fmt: skip
    return result, output
