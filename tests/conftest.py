"""Shared fixtures: every test starts from the float32 policy and a fixed seed; the quick start's model.
Under pytest-xdist each worker's TensorFlow gets its share of the cores, and the slow tests start first."""

import os
import subprocess

# Before TensorFlow starts (keras imports it): its intra-op thread pool defaults to one thread per core in
# every process, so N xdist workers on N cores run N times too many threads, which wait on each other. One
# share per worker, inherited by the commands the tests start (the quick start, the notebook's kernel); the
# inter-op pool stays as TensorFlow sizes it (one thread there can deadlock ops that block on each other).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import pytest  # noqa: E402

from tests.helpers import install_wheel  # noqa: E402


@pytest.fixture(autouse=True)
def _deterministic_float32():
    import keras  # here, not at the top: xdist's controller process loads this file and runs no test

    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


# A guard against a hung run, not a speed target: the quick start's time is the CPU's, and under the suite it
# shares the cores (one intra-op thread, the other worker busy), so the bound leaves room for a slow CPU
# without AVX-512 (bench/README.md has the quick start's measured times).
QUICK_START_TIMEOUT = 2400


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory):
    """The interpreter of a fresh virtual environment holding the package's wheel (helpers.install_wheel),
    built once per worker: the quick start and tests/test_wheel.py share it, their tests one xdist group
    (`installed_wheel`), so one worker builds it."""
    return install_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def quick_start(installed_wheel, tmp_path_factory):
    """The README's quick start as a user runs it: `python -m albert_tf.run_pretraining --flagfile=tiny` with
    only the wheel installed, in an empty folder, once. Returns (its CompletedProcess, the model directory it
    wrote)."""
    python, work = installed_wheel, tmp_path_factory.mktemp("quick_start")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        [str(python), "-m", "albert_tf.run_pretraining", "--flagfile=tiny"],
        cwd=work, capture_output=True, text=True, timeout=QUICK_START_TIMEOUT, env=environment,
    )  # fmt: skip
    return result, work / "runs" / "tiny"


def pytest_collection_modifyitems(items):
    """The quick start's test first, then the other tests marked slow, in their order, then the rest. xdist's
    loadgroup hands out groups by size, in turn to each worker: the export tests (which share their exports),
    then the quick start's group (the wheel's tests, which share its environment), then the smaller ones and
    the tests one by one in this order. The longest test (the quick start, minutes on one core) starts at
    once on the second worker instead of keeping one busy after the others end."""
    items.sort(
        key=lambda item: ("quick_start" not in item.fixturenames, item.get_closest_marker("slow") is None)
    )
