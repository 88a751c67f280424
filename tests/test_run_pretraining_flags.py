"""configs/pretrain/*.flags: every flag is one run_pretraining defines; the paper's recipe where it says so;
and the README's quick start runs end to end."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAPER = {
    "train_batch_size": "4096",
    "optimizer": "lamb",
    "learning_rate": "0.00176",
    "num_train_steps": "125000",
    "num_warmup_steps": "3125",
    "max_seq_length": "512",
    "max_predictions_per_seq": "20",
}


PARSE = """
import json, sys
from albert_tf import run_pretraining
flags = run_pretraining.FLAGS
flags(["run_pretraining", f"--flagfile={sys.argv[1]}", "--input_file=given", "--output_dir=given"])
print(json.dumps({name: flags[name].serialize().partition("=")[2] for name in flags if flags[name].present}))
"""


def parse(name):
    """The flag values run_pretraining's own absl parser reads from configs/pretrain/NAME.flags."""
    path = f"configs/pretrain/{name}.flags"
    result = subprocess.run([sys.executable, "-c", PARSE, path], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["tiny", "base", "large", "xlarge", "xxlarge"])
def test_flagfile_parses_and_names_existing_files(name):
    values = parse(name)
    assert (ROOT / values["albert_config_file"]).exists()
    if name != "tiny":
        assert {k: values[k] for k in PAPER} == PAPER
    assert values["albert_config_file"] == f"configs/albert_{name}.json"


def test_tiny_flagfile_points_at_bundled_files():
    lines = (ROOT / "configs" / "pretrain" / "tiny.flags").read_text().splitlines()
    values = dict(line.removeprefix("--").split("=", 1) for line in lines if line.startswith("--"))
    for key in ("albert_config_file", "input_file", "eval_input_file", "spm_model_file"):
        assert (ROOT / values[key]).exists(), key


@pytest.mark.slow
def test_quick_start_runs_and_the_loss_falls(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.run_pretraining", "--flagfile=configs/pretrain/tiny.flags",
         f"--output_dir={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    losses = [float(x) for x in re.findall(r"\| loss ([0-9.]+) \|", result.stderr)]
    assert len(losses) == 12 and losses[-1] < losses[0] - 2.0, losses
    assert (tmp_path / "eval_results.json").exists() and (tmp_path / "spm.model").exists()
