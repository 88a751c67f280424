"""Tiny configs and inputs for tests: odd sizes so that a swapped axis fails loudly."""

import ast
import json
import os
import pathlib
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from albert_tf.config import AlbertConfig
from tests import commands

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def tiny_config(**changes) -> AlbertConfig:
    """V 97, E 5, H 14, 2 heads, FFN 19, 3 layers, 16 positions."""
    values = dict(
        vocab_size=97,
        embedding_size=5,
        hidden_size=14,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=19,
        max_position_embeddings=16,
    )
    values.update(changes)
    return AlbertConfig(**values)


def random_features(config: AlbertConfig, batch_size=2, length=7, predictions=3, seed=0, padded=True):
    """Encoder inputs plus `masked_lm_positions`; with `padded`, the last sequence ends in 2 pads."""
    rng = np.random.default_rng(seed)
    word_ids = rng.integers(5, config.vocab_size, size=(batch_size, length)).astype(np.int32)
    mask = np.ones((batch_size, length), np.int32)
    if padded:
        mask[-1, length - 2 :] = 0
        word_ids[-1, length - 2 :] = 0
    type_ids = (np.arange(length)[None, :] >= length // 2).astype(np.int32).repeat(batch_size, 0) * mask
    positions = rng.integers(0, max(1, length - 2), size=(batch_size, predictions)).astype(np.int32)
    return {
        "input_word_ids": word_ids,
        "input_mask": mask,
        "input_type_ids": type_ids,
        "masked_lm_positions": positions,
    }


def encoder_inputs(features):
    return {name: features[name] for name in ENCODER_INPUTS}


REPO = commands.REPO
SAMPLE_CORPUS = REPO / "data" / "sample" / "sample_corpus.txt"
SAMPLE_SPM = REPO / "albert_tf" / "sample" / "spm_8k.model"
# An INFO line of absl's format (TensorFlow's C++ and Python logging): severity, month, day.
INFO_LINE = re.compile(r"^I\d{4} .*$", re.MULTILINE)


def small_spm(folder, vocab_size=90):
    """A real SentencePiece model with fewer pieces than tiny_config's 97, trained on the sample corpus's
    first 2,000 lines (a second or two); returns its path."""
    from albert_tf.text import spm_training

    text = pathlib.Path(folder) / "small_spm.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:2000]) + "\n")
    spm_training.train([str(text)], str(pathlib.Path(folder) / "small_spm"), vocab_size=vocab_size)
    return str(pathlib.Path(folder) / "small_spm.model")


def without_commas(lines):
    """lines with each comma (and the fullwidth one NFKC makes a comma) replaced by a space."""
    return [line.replace(",", " ").replace("，", " ") for line in lines]


def spm_without_commas(prefix, lines, vocab_size, **settings):
    """A SentencePiece model with ALBERT's special pieces trained by SentencePiece itself, as a model from
    elsewhere may be, on lines without their commas: it has no "," piece (train_tokenizer's models always
    have one). settings: more of SentencePiece's training options. Returns its path."""
    import sentencepiece

    from albert_tf.text.tokenizer import CLS, MASK, SEP

    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(without_commas(lines)),
        model_prefix=str(prefix), vocab_size=vocab_size, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=[CLS, SEP, MASK], minloglevel=2, **settings,
    )  # fmt: skip
    return f"{prefix}.model"


# Python's -X importtime lists each module a process imports on stderr: a command run with it shows
# whether it started TensorFlow.
IMPORT_TIMES = ("-X", "importtime")


def fresh_command(module, *flags):
    """`python -m module flags` in a fresh interpreter, in the repository, that lists the modules it imports
    (IMPORT_TIMES) on stderr."""
    command = [sys.executable, *IMPORT_TIMES, "-m", module, *flags]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True)


def imported_tensorflow(stderr):
    """Whether the stderr of a process run with IMPORT_TIMES shows TensorFlow imported."""
    return re.search(r"\|\s+tensorflow$", stderr, re.MULTILINE) is not None


def run_on_two_devices(module, args, check=True):
    """`python -m module args` with the CPU split into two logical devices (a forked command)."""
    result = commands.run(module, args, two_devices=True)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def free_ports(count):
    """count TCP ports free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(count)]
    for handle in sockets:
        handle.bind(("127.0.0.1", 0))
    ports = [handle.getsockname()[1] for handle in sockets]
    for handle in sockets:
        handle.close()
    return ports


def run_on_two_workers(module, worker_args, chief=False, returncode=0, timeout=600):
    """`python -m module` as the two tasks of a loopback cluster (TF_CONFIG, as MultiWorkerMirroredStrategy
    reads it), task i with the flags worker_args[i]; both must exit with `returncode` within `timeout`
    seconds. The tasks are workers 0 and 1, or with `chief` a `chief` task and worker 0 (the layout of Vertex
    AI, Kubeflow's TFJob and SageMaker).

    Returns:
      each task's output (stdout and stderr together).
    """
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    if chief:
        cluster = {"chief": addresses[:1], "worker": addresses[1:]}
        tasks = [{"type": "chief", "index": 0}, {"type": "worker", "index": 0}]
    else:
        cluster = {"worker": addresses}
        tasks = [{"type": "worker", "index": 0}, {"type": "worker", "index": 1}]
    started = []
    for task, args in zip(tasks, worker_args, strict=True):
        config = json.dumps({"cluster": cluster, "task": task})
        started.append(commands.start(module, args, env={**os.environ, "TF_CONFIG": config}, combined=True))
    outputs = []
    for command in started:
        result = command.result(timeout=timeout)
        assert result.returncode == returncode, result.stdout[-3000:]
        outputs.append(result.stdout)
    return outputs


def assert_same_values(actual, expected, rel, abs, where=""):
    """Nested JSON values agree: numbers within rel/abs, all else (strings, keys, lengths) exactly.

    pytest.approx on a mapping holding strings raises TypeError since pytest 9.2, even for equal strings.
    """
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key, value in expected.items():
            assert_same_values(actual[key], value, rel, abs, f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), where
        for index, (a, b) in enumerate(zip(actual, expected, strict=True)):
            assert_same_values(a, b, rel, abs, f"{where}[{index}]")
    elif isinstance(expected, (int, float)) and not isinstance(expected, bool):
        assert actual == pytest.approx(expected, rel=rel, abs=abs), where
    else:
        assert actual == expected, where


# What setup.py needs to build the wheel; copied out so that the build writes nothing into the checkout.
WHEEL_INPUTS = ("setup.py", "pyproject.toml", "README.md", "albert_tf")


def kill_once_saved(module, args, checkpoints, step):
    """Starts `python -m module args` (a forked command) and kills it with SIGKILL once it has saved a
    checkpoint of `step` or later in the folder `checkpoints`, whichever it is: one named checkpoint exists
    only for the few steps until keep_checkpoint_max deletes it, a window a busy machine's poll can miss.
    Returns the saved step."""
    import tensorflow as tf

    command = commands.start(module, args, quiet=True)

    def saved_step():  # the step of the checkpoint a resumed run restores (0 before the first)
        latest = tf.train.latest_checkpoint(str(checkpoints))
        return int(latest.rsplit("-", 1)[1]) if latest else 0

    deadline = time.time() + 300
    while saved_step() < step and command.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    command.send_signal(signal.SIGKILL)
    command.result()
    return saved_step()


def run_checked(command, cwd, timeout=600, returncode=0):
    """subprocess.run without PYTHONPATH, asserting the return code; the CompletedProcess (text)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
    output = f"{command}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == returncode, output
    return result


def install_wheel(root):
    """The package as a user gets it: its wheel built and installed into a fresh virtual environment under
    root. Returns that environment's interpreter.

    The dependencies (TensorFlow and the rest) come from this interpreter's site-packages, without network:
    a .pth file lists those folders after the environment's own. Not `--system-site-packages`, which would
    also run their .pth files, among them the hook of an editable install of albert_tf (`pip install -e .`,
    as CI installs it) that serves from the checkout whatever the wheel lacks.
    """
    root = pathlib.Path(root)
    source = root / "source"
    source.mkdir()
    for name in WHEEL_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(REPO / name, source / name)
    run_checked([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", ".",
                 "-w", str(root / "dist")], cwd=source)  # fmt: skip
    (wheel,) = (root / "dist").glob("albert_tf-*.whl")
    run_checked([sys.executable, "-m", "venv", str(root / "venv")], cwd=root)
    python = root / "venv" / "bin" / "python"
    own = run_checked([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)
    dependencies = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    pathlib.Path(own.stdout.strip(), "dependencies.pth").write_text(
        "".join(f"{folder}\n" for folder in dependencies if os.path.isdir(folder))
    )
    run_checked([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], root)
    return python


def repository_files():
    """Paths (relative, POSIX) of the files git tracks or would add (untracked, not ignored) that exist."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True,
    )  # fmt: skip
    paths = sorted({path for path in listed.stdout.decode("utf-8").split("\0") if path})
    return [path for path in paths if (REPO / path).is_file()]


def setup_arguments():
    """The literal keyword arguments of setup.py's setup() call, read without running it."""
    call = next(
        node for node in ast.walk(ast.parse((REPO / "setup.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup"
    )  # fmt: skip
    literal = {}
    for keyword in call.keywords:
        try:
            literal[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:  # computed (the long description, the packages)
            continue
    return literal
