"""run_race end to end on a few RACE-format files."""

import json
import os

import pytest

from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from tests import commands
from tests.helpers import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")


def race_folder(tmp_path):
    """A tiny model directory and a RACE folder whose every split holds the same 8 questions, answers A to D
    twice."""
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000))), tmp_path / "model", SPM
    )
    for split in ("train", "dev", "test"):
        for level in ("high", "middle"):
            folder = tmp_path / "RACE" / split / level
            folder.mkdir(parents=True)
            record = {
                "id": f"{level}1.txt",
                "article": "The library opens at nine. Readers borrow books there.",
                "questions": [
                    "When does the library open?",
                    "Readers _ books.",
                    "Who borrow books?",
                    "The library opens _.",
                ],
                "options": [
                    ["at nine", "at ten", "never", "noon"],
                    ["burn", "borrow", "eat", "hide"],
                    ["birds", "cars", "readers", "rivers"],
                    ["late", "rarely", "twice", "at nine"],
                ],
                "answers": ["A", "B", "C", "D"],
            }
            (folder / "1.txt").write_text(json.dumps(record), encoding="utf-8")


def run_race(tmp_path, output, *extra):
    """run_race on race_folder's data and model, 4 steps, into tmp_path / output; then extra flags."""
    race_folder(tmp_path)
    return commands.run(
        "albert_tf.run_race",
        [f"--data_dir={tmp_path / 'RACE'}", f"--model_dir={tmp_path / 'model'}",
         f"--output_dir={tmp_path / output}", "--max_seq_length=16", "--train_batch_size=2",
         "--eval_batch_size=4", "--train_step=4", "--warmup_step=1", "--save_checkpoints_steps=2", *extra],
    )  # fmt: skip


@pytest.mark.slow
def test_run_race_trains_evaluates_and_predicts(tmp_path):
    result = run_race(tmp_path, "out", "--do_predict")
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert set(results) == {"accuracy", "global_step"}
    predictions = (tmp_path / "out" / "test_results.tsv").read_text().split()
    assert len(predictions) == 2 + 2 * 8 and predictions[2::2] == [str(i) for i in range(8)]
    letters = predictions[3::2]
    assert set(letters) <= set("ABCD")
    # The test split holds the dev questions, and predictions come from the best evaluation's model: the
    # reported accuracy is the share of its letters that are the answers.
    gold = list("ABCD") * 2
    assert results["accuracy"] == sum(p == g for p, g in zip(letters, gold, strict=True)) / len(gold)
    assert model_dir.load_task_model(str(tmp_path / "out")).num_choices == 4


@pytest.mark.slow
def test_a_race_sweep_scores_its_seeds_against_the_best_single_letter(tmp_path):
    result = run_race(tmp_path, "sweep", "--seed=1,2")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert summary["baseline"] == {"accuracy": 0.25}  # each letter is the answer to 2 of the 8
    runs = summary["settings"][0]["runs"]
    for run in runs:
        accuracy = json.loads((tmp_path / "sweep" / run["run"] / "eval_results.json").read_text())["accuracy"]
        assert run["accuracy"] == accuracy and (run["failed"] is None) == (accuracy > 0.25)
    assert [run["seed"] for run in runs] == [1, 2]
