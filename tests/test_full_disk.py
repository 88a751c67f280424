"""A disk that fills while a run writes: each kind of file the toolkit writes (a checkpoint, the evaluation
history, a model directory, an export) names what could not be written, keeps what was there, leaves no
half-written file, and the same command goes on once there is space. On small tmpfs file systems mounted for
the test (the tests run as root, as CI does)."""

import contextlib
import errno
import os
import re
import subprocess

import keras
import pytest

from albert_tf import file_io, model_files
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from tests import commands
from tests.helpers import SAMPLE_SPM, tiny_config


@contextlib.contextmanager
def small_disk(folder, megabytes):
    """A tmpfs file system of `megabytes` mounted at folder (made), unmounted at the end."""
    folder.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def fill(folder):
    """Fills folder's file system to its last byte with one file; returns its path (delete it for space)."""
    path = folder / "filler"
    with open(path, "wb", buffering=0) as file:
        for block in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    file.write(b"\0" * block)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
    return path


def listing(folder):
    """Every file under folder, relative, with its bytes."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                found[os.path.relpath(path, folder)] = file.read()
    return found


def run_pretraining(output_dir, *flags):
    return commands.run(
        "albert_tf.run_pretraining",
        ["--flagfile=tiny", f"--output_dir={output_dir}", "--num_train_steps=40", "--num_warmup_steps=5",
         "--save_checkpoints_steps=10", "--log_every_steps=10", "--steps_per_loop=10", "--eval_every_steps=0",
         "--max_eval_steps=1", *flags],
    )  # fmt: skip


@pytest.mark.slow
def test_a_full_disk_mid_checkpoint_names_what_is_kept_and_the_same_command_resumes(tmp_path):
    # The tiny recipe's checkpoints take 9.1 MB each: 24 MB hold two, and the third finds the disk full.
    with small_disk(tmp_path / "disk", 24) as disk:
        run = disk / "run"
        stopped = run_pretraining(run)
        assert stopped.returncode == 1, stopped.stderr[-3000:]
        checkpoints = run / "checkpoints"
        assert re.search(
            rf"run_pretraining: error: no space left on the disk of {checkpoints}/ckpt-30: it could not be "
            rf"written\. Step 20 is kept in {checkpoints}/ckpt-20 \(a checkpoint takes 9\.\d MB there\): "
            r"free space, then run the same command again; it goes on from step 20\n$",
            stopped.stderr,
        ), stopped.stderr[-3000:]
        assert sorted(os.listdir(checkpoints)) == [
            "checkpoint", "ckpt-10.data-00000-of-00001", "ckpt-10.index", "ckpt-20.data-00000-of-00001",
            "ckpt-20.index",
        ]  # fmt: skip
        # A run killed while saving leaves TensorFlow's partial folder; the next start removes it.
        (checkpoints / "ckpt-30_temp").mkdir()
        (checkpoints / "ckpt-30_temp" / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"\0" * 4096)
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)  # space, freed
        resumed = run_pretraining(run)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"removed {checkpoints}/ckpt-30_temp, a checkpoint a stopped run left half-written" in (
            resumed.stderr
        )
        assert re.search(r"resumed from .*ckpt-20 at step 20\n", resumed.stderr), resumed.stderr[-3000:]
        assert "step 40/40" in resumed.stderr and model_files.global_step(str(run)) == 40
        assert not list(checkpoints.glob("*_temp"))


@pytest.mark.slow
def test_a_full_disk_keeps_the_history_the_model_directory_and_exports_it_could_not_replace(tmp_path):
    with small_disk(tmp_path / "disk", 48) as disk:
        run = disk / "run"
        assert run_pretraining(run, "--num_train_steps=10").returncode == 0
        before = {name: data for name, data in listing(run).items() if "events" not in name}
        filler = fill(disk)
        # Evaluated again in place, its history and results cannot be replaced: named, kept as they were.
        evaluated = run_pretraining(run, "--num_train_steps=10", "--nodo_train")
        assert evaluated.returncode == 1, evaluated.stderr[-3000:]
        full = f"run_pretraining: error: no space left on the disk of {run}/eval_history.jsonl: it could "
        assert full in evaluated.stderr
        # An export finds no room: nothing is published, no temporary folder is left.
        exported = commands.run(
            "albert_tf.export_saved_model", [f"--model_dir={run}", f"--export_dir={disk / 'export' / '1'}"]
        )
        assert exported.returncode == 1, exported.stderr[-3000:]
        assert f"export_saved_model: error: no space left on the disk of {disk / 'export' / '1'}: it " in (
            exported.stderr
        )
        assert os.listdir(disk / "export") == []
        # A model directory saved over the run's: each file is replaced whole or not at all.
        keras.utils.set_random_seed(3)
        other = AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000)))
        with pytest.raises(file_io.DiskFullError, match=rf"no space left on the disk of {run}/"):
            model_dir.save_model_dir(other, str(run), str(SAMPLE_SPM), step=7)
        assert {name: data for name, data in listing(run).items() if "events" not in name} == before
        filler.unlink()
