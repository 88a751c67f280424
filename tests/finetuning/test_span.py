"""run_squad end to end on small SQuAD v1.1 / v2.0 files in the official JSON format."""

import json
import os
import random

import keras
import pytest

from albert_tf.models import AlbertEncoder, AlbertPretrainer, AlbertSpanLabeler, model_dir
from albert_tf.serving.servable import Servable
from albert_tf.text.span_settings import SpanSettings
from tests import commands
from tests.helpers import fresh_command, imported_tensorflow, tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")
COLOURS = ("red", "green", "blue", "yellow", "black", "white", "orange", "purple")


def squad_json(rng, sentences, count, prefix, unanswerable=0.0, length=3):
    """Paragraphs of `length` corpus sentences with "The colour is <colour>." at a random place among them.

    The question asks for the colour; with probability `unanswerable` the colour sentence is left out and
    the question is marked is_impossible (v2.0).
    """
    paragraphs = []
    for index in range(count):
        parts = rng.sample(sentences, length)
        colour = rng.choice(COLOURS)
        impossible = rng.random() < unanswerable
        qa = {"id": f"{prefix}{index}", "question": "Which colour is it?"}
        if not impossible:
            parts.insert(rng.randrange(length + 1), f"The colour is {colour}.")
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
        # Contexts of 12 sentences: several windows of 64 tokens each.
        data = squad_json(rng, sentences, 30, "long-", unanswerable, length=12)
        (base / f"long-{version}.json").write_text(json.dumps(data), encoding="utf-8")
    return base


def squad_flags(setup, output, version, *extra):
    """run_squad's flags for the version's files, then extra."""
    return [
        f"--model_dir={setup / 'model'}", f"--output_dir={output}",
        f"--train_file={setup / f'train-{version}.json'}", f"--predict_file={setup / f'dev-{version}.json'}",
        "--max_seq_length=64", "--doc_stride=24", "--max_query_length=8", "--train_batch_size=16",
        "--eval_batch_size=32", "--learning_rate=0.001", "--train_step=160", "--warmup_step=10",
        "--save_checkpoints_steps=40", *extra,
    ]  # fmt: skip


def run_squad(setup, output, version, *extra):
    """run_squad on the version's files."""
    return commands.run("albert_tf.run_squad", squad_flags(setup, output, version, *extra))


def run_squad_fresh(setup, output, version, *extra):
    """run_squad in a fresh interpreter that lists the modules it imports on stderr (fresh_command)."""
    return fresh_command("albert_tf.run_squad", *squad_flags(setup, output, version, *extra))


def export_answers_run_squads(setup, output, version, taken):
    """run_squad's predictions of long contexts (windowed) and the span export's answers are the same. The
    fine-tuned directory predicts with no window, decoding or version flags: it brings its own (`taken`, what
    the command says it took)."""
    predicted = commands.run(
        "albert_tf.run_squad",
        [f"--model_dir={output}", f"--output_dir={output / 'long'}", "--nodo_train", "--nodo_eval",
         "--do_predict", f"--predict_file={setup / f'long-{version}.json'}", "--eval_batch_size=32"],
    )  # fmt: skip
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert f"fine-tuned model in {output} gives {taken}" in predicted.stderr
    exported = commands.run(
        "albert_tf.export_saved_model",
        [f"--model_dir={output}", "--task=span", f"--export_dir={output / 'served' / '1'}"],
    )
    assert exported.returncode == 0, exported.stderr[-3000:]
    paragraphs = json.loads((setup / f"long-{version}.json").read_text())["data"][0]["paragraphs"]
    with Servable(output / "served" / "1") as servable:
        got = servable.run(
            "serving_default",
            {
                "text": [p["qas"][0]["question"] for p in paragraphs],
                "text_b": [p["context"] for p in paragraphs],
            },
        )
    predictions = json.loads((output / "long" / "predictions.json").read_text())
    answers = [text.decode() for text in got["answer_text"]]
    assert answers == [predictions[p["qas"][0]["id"]] for p in paragraphs]
    # The fine-tuned model in a notebook, on the same raw text: the same answers, with no settings given.
    model = AlbertSpanLabeler.from_model_dir(str(output))
    questions = [p["qas"][0]["question"] for p in paragraphs]
    predicted_here = model.predict((questions, [p["context"] for p in paragraphs]))
    assert list(predicted_here["answer_text"]) == answers
    return answers


@pytest.mark.slow
def test_v1_learns_the_spans_and_writes_official_predictions(setup, tmp_path):
    result = run_squad(
        setup, tmp_path / "out", "v1.1", "--do_predict", "--n_best_size=10", "--max_answer_length=20"
    )
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
    taken = (
        "--max_seq_length=64 --doc_stride=24 --max_query_length=8 --n_best_size=10 --max_answer_length=20\n"
    )
    answers = export_answers_run_squads(setup, tmp_path / "out", "v1.1", taken)
    assert sum(answer in COLOURS for answer in answers) > len(answers) / 2  # windowed, still found


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
    taken = "--max_seq_length=64 --version_2_with_negative --doc_stride=24 --max_query_length=8\n"
    answers = export_answers_run_squads(setup, tmp_path / "out", "v2.0", taken)
    assert "" in answers and set(answers) & set(COLOURS)


@pytest.mark.slow
def test_a_v2_sweep_scores_its_seeds_against_never_answering(setup, tmp_path):
    """run_squad given two seeds: a sweep whose constant prediction is no answer at all, the unanswerable
    share of the dev questions."""
    output = tmp_path / "sweep"
    result = run_squad(setup, output, "v2.0", "--version_2_with_negative", "--seed=1,2", "--train_step=10")
    assert result.returncode == 0, result.stderr[-3000:]
    paragraphs = json.loads((setup / "dev-v2.0.json").read_text())["data"][0]["paragraphs"]
    questions = [qa for paragraph in paragraphs for qa in paragraph["qas"]]
    unanswerable = 100 * sum(qa["is_impossible"] for qa in questions) / len(questions)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["metric"] == "f1" and summary["baseline"] == pytest.approx(
        {"f1": unanswerable, "exact_match": unanswerable}
    )
    runs = summary["settings"][0]["runs"]
    assert [run["seed"] for run in runs] == [1, 2]
    for run in runs:
        scores = json.loads((output / run["run"] / "eval_results.json").read_text())
        assert run["f1"] == scores["f1"] and (run["failed"] is None) == (scores["f1"] > unanswerable)


def test_windows_without_room_are_refused_before_tensorflow_starts(setup, tmp_path):
    result = run_squad_fresh(setup, tmp_path / "out", "v1.1", "--doc_stride=0")
    assert result.returncode == 1
    assert "max_query_length 8 and doc_stride 0 leave no room for the question" in result.stderr
    assert not imported_tensorflow(result.stderr)


def test_answer_settings_that_choose_nothing_are_refused_before_tensorflow_starts(setup, tmp_path):
    result = run_squad_fresh(setup, tmp_path / "out", "v1.1", "--max_answer_length=0")
    assert result.returncode == 1
    assert "--max_answer_length must be at least 1, got 0" in result.stderr
    assert not imported_tensorflow(result.stderr) and not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="--n_best_size must be at least 1, got 0"):  # the export's too
        SpanSettings(n_best_size=0)


def test_v2_data_needs_the_v2_flag_before_tensorflow_starts(setup, tmp_path):
    result = run_squad_fresh(setup, tmp_path / "out", "v2.0", "--train_step=1")
    assert result.returncode == 1
    assert "train-v2.0.json" in result.stderr and "--version_2_with_negative" in result.stderr
    assert not imported_tensorflow(result.stderr)
