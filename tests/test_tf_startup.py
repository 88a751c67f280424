"""Commands keep TensorFlow's C++ start-up notices out of the terminal; the user's TF_CPP_MIN_LOG_LEVEL and
real warnings still show; importing the library changes nothing."""

import os
import re
import subprocess
import sys

import pytest

from albert_tf import tf_startup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTICES = (
    "absl::InitializeLog()",
    "oneDNN custom operations are on",
    "cudart_stub",
    "cuInit",
    "cpu_feature_guard",
)
CPP_LOG_LINE = re.compile(r"^[IWEF]\d{4} ", re.MULTILINE)  # absl's format: severity, month, day


def run(args, **env):
    """A fresh Python process (args after `python`) with no TF_CPP_MIN_LOG_LEVEL unless given in env."""
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**environment, **env}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


SUMMARY = ["-m", "albert_tf.model_summary", "--albert_config_file=albert_tiny"]


def test_a_command_prints_no_start_up_notices():
    result = run(SUMMARY)
    assert "encoder" in result.stdout
    assert not [notice for notice in NOTICES if notice in result.stderr], result.stderr
    assert not CPP_LOG_LINE.search(result.stderr), result.stderr


# Commands given a remote path (ram://: TensorFlow's in-memory file system, empty in a new process), which
# they read through TensorFlow: their flags, and the refusal each prints.
REMOTE = {
    "run_classifier": (
        ["--task_name=sst-2", "--data_dir={tmp}", "--model_dir=ram://no_model", "--output_dir={tmp}/out"],
        "run_classifier: error: ram://no_model has no spm.model",
    ),
    "train_tokenizer": (
        ["--input=ram://none/*.txt", "--model_prefix={tmp}/spm"],
        "train_tokenizer: error: --input: 'ram://none/*.txt' matches no file",
    ),
    "create_pretraining_data": (
        [
            f"--input_file={ROOT}/data/sample/sample_corpus.txt",
            "--spm_model_file=ram://none/spm.model",
            "--output_file={tmp}/records",
        ],
        "create_pretraining_data: error: --spm_model_file=ram://none/spm.model: --runner=local reads",
    ),  # fmt: skip
    "summarize_sweep": (["--output_dir=ram://none"], "summarize_sweep: error: ram://none holds no sweep"),
}


@pytest.mark.parametrize("command", sorted(REMOTE))
def test_a_command_reading_a_remote_path_prints_no_start_up_notices(command, tmp_path):
    """Reading a remote path starts TensorFlow before the command's own work; it starts quietly all the
    same."""
    flags, refusal = REMOTE[command]
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-m", f"albert_tf.{command}", *(flag.format(tmp=tmp_path) for flag in flags)],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1 and refusal in result.stderr, result.stderr[-3000:]
    assert not [notice for notice in NOTICES if notice in result.stderr], result.stderr
    assert not CPP_LOG_LINE.search(result.stderr), result.stderr


# A command's main under absl's app.run, which sets TensorFlow's Python logging to INFO; the environment's
# TF_CPP_MIN_LOG_LEVEL keeps TensorFlow unimported, so this checks the logging rule alone.
LOGGING_LEVEL = """
from absl import app, logging
from albert_tf import tf_startup
def main(argv):
    tf_startup.import_tensorflow_quietly()
    print(logging.get_verbosity())
app.run(main)
"""


def test_commands_hold_back_python_info_lines_unless_verbosity_is_given():
    """Without it, every SavedModel signature and checkpoint save prints an INFO line among the command's."""
    assert run(["-c", LOGGING_LEVEL], TF_CPP_MIN_LOG_LEVEL="1").stdout.split() == ["-1"]  # WARNING
    assert run(["-c", LOGGING_LEVEL, "--verbosity=0"], TF_CPP_MIN_LOG_LEVEL="1").stdout.split() == ["0"]


def test_an_explicit_log_level_wins():
    result = run(SUMMARY, TF_CPP_MIN_LOG_LEVEL="0")
    assert "absl::InitializeLog()" in result.stderr and "oneDNN custom operations are on" in result.stderr
    assert "encoder" in result.stdout


def test_a_real_warning_at_start_up_still_shows():
    result = run(SUMMARY, TF_ENABLE_ONEDNN_OPTS="sometimes")
    assert "TF_ENABLE_ONEDNN_OPTS is not set to either '0', 'false', '1', or 'true'" in result.stderr
    assert "oneDNN custom operations are on" not in result.stderr


def test_importing_the_library_leaves_logging_alone():
    code = "import os, albert_tf.finetuning.task; print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    result = run(["-c", code])
    assert result.stdout.strip() == "None" and "oneDNN custom operations are on" in result.stderr


def test_notices_are_told_from_other_lines():
    """On the lines TensorFlow really prints at start-up (all of them, at level 0)."""
    code = "import tensorflow as tf; tf.config.list_physical_devices()"
    lines = run(["-c", code], TF_CPP_MIN_LOG_LEVEL="0").stderr.splitlines()
    cuda = [line for line in lines if "cudart_stub" in line or "cuInit" in line]
    always = [line for line in lines if "absl::InitializeLog()" in line or "oneDNN custom operations" in line]
    assert cuda and always
    # TensorFlow's own filter (level 1) drops the CPU-feature notice; ours leaves it and anything else alone.
    others = [line for line in lines if line not in cuda and line not in always]
    assert all(tf_startup.is_startup_notice(line, gpu_driver=False) for line in cuda + always)
    assert all(tf_startup.is_startup_notice(line, gpu_driver=True) for line in always)
    # Where an NVIDIA driver is installed, a failing CUDA start is the reason the GPU is not used.
    assert not any(tf_startup.is_startup_notice(line, gpu_driver=True) for line in cuda)
    assert not any(tf_startup.is_startup_notice(line, gpu_driver=False) for line in others)
    warning = "W0000 00:00:1.0 1 port.cc:148] TF_ENABLE_ONEDNN_OPTS is not set to either '0' or '1'"
    assert not tf_startup.is_startup_notice(warning, gpu_driver=False)


def test_build_md_shows_what_importing_tensorflow_prints():
    """BUILD.md's list of the notices is what TensorFlow prints at start-up here (at level 0: nothing held
    back), every log line of it, each listed one printed."""
    from tests.test_readme import blocks

    shown = next(b.text for b in blocks("BUILD.md") if "absl::InitializeLog" in b.text).splitlines()
    listed = [line.partition("] ")[2].removesuffix(" ...") or line for line in shown]
    code = "import tensorflow as tf; tf.config.list_physical_devices()"
    printed = run(["-c", code], TF_CPP_MIN_LOG_LEVEL="0", TF_ENABLE_ONEDNN_OPTS="1").stderr
    assert len(listed) == 5 and all(message in printed for message in listed), (listed, printed)
    logged = [line for line in printed.splitlines() if CPP_LOG_LINE.match(line) or line.startswith("WARNING")]
    assert all(any(message in line for message in listed) for line in logged), logged


SERVING_SNIPPET = re.compile(r"python - <<'EOF'\n(?P<code>.*?)\nEOF\n", re.DOTALL)


@pytest.mark.slow
def test_the_servable_snippet_of_serving_md_prints_its_answers_alone(tmp_path):
    """docs/serving.md's Servable snippet, on a classifier export where it looks: no start-up notice and none
    of the C++ loader's INFO lines (about fifteen lines without tf_startup), only what it prints."""
    import keras

    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.serving.export import export_saved_model
    from tests.helpers import tiny_config
    from tests.test_readme import blocks

    keras.utils.set_random_seed(7)
    model = AlbertClassifier(AlbertEncoder(tiny_config(vocab_size=8000)), num_classes=2, labels=("a", "b"))
    spm = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")
    export_dir = tmp_path / "models" / "doc_topics" / "1"  # where the snippet looks
    export_saved_model(model, spm, str(export_dir), "classifier", max_seq_length=16, pair=False)
    snippet = next(b.text for b in blocks("docs/serving.md") if "Servable(" in b.text)
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run(
        [sys.executable, "-c", SERVING_SNIPPET.search(snippet)["code"]], cwd=tmp_path, env=environment,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "serving_default" in result.stdout and "[b'" in result.stdout
    assert result.stderr == "", result.stderr
