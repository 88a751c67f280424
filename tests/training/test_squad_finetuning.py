"""run_squad end to end on small SQuAD v1.1 / v2.0 files in the official JSON format."""

import json
import os
import random
import subprocess
import sys

import keras
import pytest

from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from tests.helpers import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "data", "sample", "spm_8k.model")
COLOURS = ("red", "green", "blue", "yellow", "black", "white", "orange", "purple")


def squad_json(rng, sentences, count, prefix, unanswerable=0.0):
    """Paragraphs of three corpus sentences with "The colour is <colour>." at a random place among them.

    The question asks for the colour; with probability `unanswerable` the colour sentence is left out and
    the question is marked is_impossible (v2.0).
    """
    paragraphs = []
    for index in range(count):
        parts = rng.sample(sentences, 3)
        colour = rng.choice(COLOURS)
        impossible = rng.random() < unanswerable
        qa = {"id": f"{prefix}{index}", "question": "Which colour is it?"}
        if not impossible:
            parts.insert(rng.randrange(4), f"The colour is {colour}.")
        context = " ".join(parts)
        answers = [] if impossible else [{"text": colour, "answer_start": context.index(f"is {colour}.") + 3}]
        qa["answers"] = answers
        if unanswerable:
            qa["is_impossible"] = impossible
        paragraphs.append({"context": context, "qas": [qa]})
    return {
        "version": "v2.0" if unanswerable else "1.1",
        "data": [{"title": prefix, "paragraphs": paragraphs}],
    }


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("squad")
    keras.utils.set_random_seed(3)  # module fixtures run before the per-test seeding
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000, max_position_embeddings=64))),
        base / "model",
        SPM,
    )
    with open(os.path.join(ROOT, "data", "sample", "sample_corpus.txt"), encoding="utf-8") as file:
        sentences = [line.strip() for line in file if 4 <= len(line.split()) <= 8][:300]
    rng = random.Random(0)
    for version, unanswerable in (("v1.1", 0.0), ("v2.0", 0.3)):
        for split, count in (("train", 200), ("dev", 40)):
            data = squad_json(rng, sentences, count, f"{split}-", unanswerable)
            (base / f"{split}-{version}.json").write_text(json.dumps(data), encoding="utf-8")
    return base


def run_squad(setup, output, version, *extra):
    return subprocess.run(
        [sys.executable, "-m", "albert_tf.run_squad", f"--model_dir={setup / 'model'}",
         f"--output_dir={output}",
         f"--train_file={setup / f'train-{version}.json'}", f"--predict_file={setup / f'dev-{version}.json'}",
         "--max_seq_length=64", "--doc_stride=24", "--max_query_length=8", "--train_batch_size=16",
         "--eval_batch_size=32", "--learning_rate=0.001", "--train_step=160", "--warmup_step=10",
         "--save_checkpoints_steps=40", *extra],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip


@pytest.mark.slow
def test_v1_learns_the_spans_and_writes_official_predictions(setup, tmp_path):
    result = run_squad(setup, tmp_path / "out", "v1.1", "--do_predict")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.count("run_squad: step ") == 4
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert set(results) == {"exact_match", "f1", "global_step"}
    assert results["exact_match"] > 80, results
    predictions = json.loads((tmp_path / "out" / "predictions.json").read_text())
    dev = json.loads((setup / "dev-v1.1.json").read_text())["data"][0]["paragraphs"]
    assert set(predictions) == {p["qas"][0]["id"] for p in dev}
    assert all(predictions[p["qas"][0]["id"]] in p["context"] for p in dev)
    assert model_dir.load_task_model(str(tmp_path / "out")).answerability is False


@pytest.mark.slow
def test_v2_decides_answerability(setup, tmp_path):
    result = run_squad(setup, tmp_path / "out", "v2.0", "--version_2_with_negative", "--do_predict")
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert results["exact_match"] > 80, results
    no_answer = json.loads((tmp_path / "out" / "null_odds.json").read_text())
    predictions = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert set(no_answer) == set(predictions) and "" in predictions.values()
    # The default threshold 0 on the answerability logit is a no-answer probability of 0.5.
    assert all((no_answer[q] > 0.5) == (text == "") for q, text in predictions.items())
    assert model_dir.load_task_model(str(tmp_path / "out")).answerability is True


def test_v2_data_needs_the_v2_flag(setup, tmp_path):
    result = run_squad(setup, tmp_path / "out", "v2.0", "--train_step=1")
    assert result.returncode == 1
    assert "train-v2.0.json" in result.stderr and "--version_2_with_negative" in result.stderr
