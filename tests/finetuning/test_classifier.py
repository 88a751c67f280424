"""run_classifier end to end on a small SST-2-format dataset built from the sample corpus."""

import csv
import dataclasses
import json
import os
import re

import keras
import numpy as np
import pytest

from albert_tf import model_files
from albert_tf.models import AlbertClassifier, AlbertEncoder, AlbertPretrainer, model_dir
from tests import commands
from tests.helpers import fresh_command, imported_tensorflow, tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny model directory and an SST-2 folder whose label is told by the first word of each text."""
    base = tmp_path_factory.mktemp("classifier")
    keras.utils.set_random_seed(5)  # module fixtures run before the per-test seeding
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000))), base / "model", SPM
    )
    with open(os.path.join(ROOT, "data", "sample", "sample_corpus.txt"), encoding="utf-8") as file:
        sentences = [line.strip().replace("\t", " ") for line in file if len(line.split()) > 3][:240]
    glue = base / "SST-2"
    glue.mkdir()
    for name, part in (
        ("train.tsv", sentences[:160]),
        ("dev.tsv", sentences[160:200]),
        ("test.tsv", sentences[200:]),
    ):
        rows = []
        for index, sentence in enumerate(part):
            label = index % 2
            text = f"{'splendid' if label else 'dreadful'} {sentence}"
            rows.append(f"{index}\t{text}" if name == "test.tsv" else f"{text}\t{label}")
        header = "index\tsentence" if name == "test.tsv" else "sentence\tlabel"
        (glue / name).write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return base


def flags(setup, output, *extra):
    """run_classifier's flags for the SST-2 folder, then extra."""
    return [
        "--task_name=sst-2", f"--data_dir={setup / 'SST-2'}", f"--model_dir={setup / 'model'}",
        f"--output_dir={output}", "--max_seq_length=16", "--train_batch_size=16", "--eval_batch_size=16",
        "--learning_rate=0.0005", "--train_step=120", "--warmup_step=6", "--save_checkpoints_steps=30",
        *extra,
    ]  # fmt: skip


def run(setup, output, *extra):
    """run_classifier on the SST-2 folder."""
    return commands.run("albert_tf.run_classifier", flags(setup, output, *extra))


@pytest.mark.slow
def test_fine_tunes_keeps_the_best_and_predicts(setup, tmp_path):
    result = run(setup, tmp_path / "out", "--do_predict")
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "eval_results.json").read_text())
    assert set(results) == {"accuracy", "global_step"} and results["accuracy"] > 0.8, results
    assert result.stderr.count("run_classifier: step ") == 4
    model = model_dir.load_task_model(str(tmp_path / "out"))
    assert model.num_classes == 2 and model.labels == ("0", "1")  # SST-2's label names, kept for serving
    predictions = (tmp_path / "out" / "test_results.tsv").read_text().splitlines()
    assert predictions[0] == "index\tprediction" and len(predictions) == 41
    # The fine-tuned directory evaluates as it was kept, at the step it was saved at (the best evaluation's):
    # --model_dir may be a fine-tuned model.
    history = (tmp_path / "out" / "eval_history.jsonl").read_text()
    assert [json.loads(line)["global_step"] for line in history.splitlines()] == [30, 60, 90, 120]
    again = run(setup, tmp_path / "again", "--nodo_train", f"--model_dir={tmp_path / 'out'}")
    assert again.returncode == 0, again.stderr[-3000:]
    evaluated = json.loads((tmp_path / "again" / "eval_results.json").read_text())
    assert evaluated == results and f"eval at step {results['global_step']}: accuracy" in again.stderr
    # Evaluated again in place, it reports the same and keeps the run's history: the entry of the step it
    # evaluates is replaced by an equal one, the others are the run's.
    in_place = run(setup, tmp_path / "out", "--nodo_train", f"--model_dir={tmp_path / 'out'}")
    assert in_place.returncode == 0, in_place.stderr[-3000:]
    assert json.loads((tmp_path / "out" / "eval_results.json").read_text()) == results
    assert (tmp_path / "out" / "eval_history.jsonl").read_text() == history


MNLI_HEADER = "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2"
MNLI_WORDS = {"contradiction": "dreadful", "entailment": "splendid", "neutral": "ordinary"}


def mnli_rows(sentences, labels):
    """MNLI rows (train and dev layout) of consecutive sentences, each label told by sentence1's first
    word."""
    return [
        f"{i}\t{i}\t{i}n\tfiction\tx\tx\tx\tx\t{MNLI_WORDS[label]} {sentences[i]}\t{sentences[i + 1]}\t"
        f"{label}\t{label}"
        for i, label in enumerate(labels)
    ]


@pytest.mark.slow
def test_mnli_is_evaluated_and_predicted_on_its_matched_and_mismatched_sets(setup, tmp_path):
    """GLUE reports MNLI on two dev sets: `accuracy` (matched, which picks the best model) and
    `accuracy_mismatched`; --do_predict writes both test sets' predictions. The test files hold the dev
    files' pairs, so each reported accuracy is checked against the predictions written for them."""
    with open(os.path.join(ROOT, "data", "sample", "sample_corpus.txt"), encoding="utf-8") as file:
        sentences = [line.strip().replace("\t", " ") for line in file if len(line.split()) > 3][:200]
    names = sorted(MNLI_WORDS)
    # Label shares that differ between the dev sets (1/3 each against 12, 6 and 3 of 21), so that one set's
    # figures reported as the other's differ even from a model that answers one label whatever the text.
    dev = {
        "matched": mnli_rows(sentences[100:131], [names[i % 3] for i in range(30)]),
        "mismatched": mnli_rows(sentences[140:162], [names[0]] * 12 + [names[1]] * 6 + [names[2]] * 3),
    }
    folder = tmp_path / "MNLI"
    folder.mkdir()
    files = {"train.tsv": [MNLI_HEADER + "\tlabel1\tgold_label"]
             + mnli_rows(sentences[:97], [names[i % 3] for i in range(96)])}  # fmt: skip
    for kind, rows in dev.items():
        files[f"dev_{kind}.tsv"] = [MNLI_HEADER + "\tlabel1\tgold_label", *rows]
        files[f"test_{kind}.tsv"] = [MNLI_HEADER] + [row.rsplit("\t", 2)[0] for row in rows]
    for name, rows in files.items():
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    output = tmp_path / "out"
    result = commands.run(
        "albert_tf.run_classifier",
        ["--task_name=mnli", f"--data_dir={folder}", f"--model_dir={setup / 'model'}",
         f"--output_dir={output}", "--max_seq_length=16", "--train_batch_size=16", "--learning_rate=0.0005",
         "--train_step=30", "--warmup_step=3", "--save_checkpoints_steps=15", "--do_predict"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((output / "eval_results.json").read_text())
    assert set(results) == {"accuracy", "accuracy_mismatched", "global_step"}, results
    written = {"matched": "test_results.tsv", "mismatched": "test_mismatched_results.tsv"}
    for kind, metric in (("matched", "accuracy"), ("mismatched", "accuracy_mismatched")):
        predicted = [line.split("\t")[1] for line in (output / written[kind]).read_text().splitlines()[1:]]
        labels = [row.rsplit("\t", 1)[1] for row in dev[kind]]
        assert len(predicted) == len(labels), (kind, len(predicted))
        right = np.mean([p == g for p, g in zip(predicted, labels, strict=True)])
        assert results[metric] == pytest.approx(right), (kind, results)
    line = f"eval at step {results['global_step']}: accuracy {results['accuracy']:.4f}, accuracy_mismatched"
    assert line in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_a_collapse_in_fine_tuning_is_rolled_back_and_the_results_are_those_of_the_kept_model(
    setup, tmp_path, capsys
):
    # 60 steps learn the task (the loss falls from ln 2 to about 0.1); then the run is continued to 120 and
    # its classifier head wrecked (confidently wrong) as it resumes. The guard, restored from the checkpoint
    # with the best loss it had read, flags the next progress line; the run rolls back to step 60's weights
    # and trains on at a lower rate. What it reports is what its saved model scores.
    from albert_tf.finetuning import classifier, task
    from albert_tf.finetuning.settings import ClassifierSettings
    from albert_tf.training.engine import Engine
    from albert_tf.training.run_log import RunLog

    settings = ClassifierSettings(
        task_name="sst-2", data_dir=str(setup / "SST-2"), model_dir=str(setup / "model"),
        output_dir=str(tmp_path / "out"), max_seq_length=16, train_batch_size=16, eval_batch_size=16,
        learning_rate=0.0005, train_step=60, warmup_step=6, save_checkpoints_steps=10,
        rollback_on_collapse=True,
    )  # fmt: skip
    classifier.run(settings)
    continued = dataclasses.replace(settings, train_step=120)
    run_ = classifier.ClassifierTask(continued)
    log = RunLog("run_classifier", settings.output_dir, True)
    engine = Engine(run_, task.engine_settings(continued), run_.strategy, log)
    engine.restore()
    for variable in run_.model.trainable_variables:
        if variable.path.startswith("logits/"):
            variable.assign(-30.0 * variable)
    results = engine.train()
    log = capsys.readouterr().err
    assert re.search(r"step 70/120 \| loss [\d.]+ .*\| collapse: loss spike", log), log[-3000:]
    assert "rolled back to" in log and "(step 60)" in log and "step 120/120" in log, log[-3000:]
    history = [
        json.loads(line) for line in (tmp_path / "out" / "eval_history.jsonl").read_text().splitlines()
    ]
    # Steps 10 to 60; step 70's, collapsed; then 70 to 120 again after the rollback.
    assert [(entry["global_step"], entry.get("rollbacks", 0)) for entry in history] == [
        *((step, 0) for step in range(10, 80, 10)),
        *((step, 1) for step in range(70, 130, 10)),
    ], history
    assert history[6]["collapse"].startswith("loss spike") and history[7]["rolled_back"].endswith(
        "at step 70: rolled back to step 60"
    )
    assert results in history and "collapse" not in results, results
    run_.save(results["global_step"], results["rollbacks"])
    assert results["rollbacks"] == 1 and model_files.rollbacks(str(tmp_path / "out")) == 1
    again = classifier.run(
        dataclasses.replace(settings, model_dir=str(tmp_path / "out"), output_dir=str(tmp_path / "again"),
                            do_train=False)
    )  # fmt: skip
    assert again == {name: results[name] for name in ("accuracy", "global_step", "rollbacks")}


@pytest.fixture(scope="module")
def pairs(setup, tmp_path_factory):
    """run_classifier --task_name=text on CSV rows with text_b, at 16 tokens, its labels given in an order
    of their own: (the folder of train.csv and dev.csv, the output directory, the command's result)."""
    folder = tmp_path_factory.mktemp("pairs")
    texts = [line.split("\t")[0] for line in (setup / "SST-2" / "train.tsv").read_text().splitlines()[1:]]
    pairs = zip(texts[:-1], texts[1:], strict=True)
    rows = [(a, b, ("other", "same")[i % 2]) for i, (a, b) in enumerate(pairs)]
    for name, part in (("train.csv", rows[:48]), ("dev.csv", rows[48:64])):
        with open(folder / name, "w", newline="", encoding="utf-8") as file:
            csv.writer(file).writerows([("text", "text_b", "label"), *part])
    result = commands.run(
        "albert_tf.run_classifier",
        ["--task_name=text", f"--train_file={folder / 'train.csv'}", f"--dev_file={folder / 'dev.csv'}",
         "--labels=same,other", f"--model_dir={setup / 'model'}", f"--output_dir={folder / 'out'}",
         "--max_seq_length=16", "--train_batch_size=16", "--train_step=4", "--warmup_step=1",
         "--save_checkpoints_steps=4"],
    )  # fmt: skip
    return folder, folder / "out", result


@pytest.mark.slow
@pytest.mark.xdist_group("classifier_pairs")  # one process runs the shared fine-tuning once
def test_the_text_task_fine_tunes_on_sentence_pairs_from_a_text_b_field(pairs):
    """run_classifier --task_name=text on CSV rows with text_b: the model it writes takes pairs."""
    _, tuned, result = pairs
    assert result.returncode == 0, result.stderr[-3000:]
    model = model_dir.load_task_model(str(tuned))
    assert model.preprocessing.text_pair is True and model.labels == ("same", "other")
    # It ends saying where its model and results went, as run_pretraining does.
    files = model_files.files(str(tuned))
    assert {"albert_config.json", "spm.model", "task_model.keras"} <= set(files), files
    assert result.stderr.splitlines()[-3:] == [
        f"run_classifier: model directory: {tuned} ({', '.join(files)})",
        f"run_classifier: evaluation: {tuned / 'eval_results.json'}, {tuned / 'eval_history.jsonl'}",
        f"run_classifier: TensorBoard: tensorboard --logdir {tuned}",
    ]


@pytest.mark.slow
@pytest.mark.xdist_group("classifier_pairs")
def test_a_fine_tuned_text_classifier_predicts_with_its_own_length_and_labels(pairs):
    """A fine-tuned directory brings the settings it was tuned with: predicting a test file with no --labels
    and no --max_seq_length gives the labels the model itself predicts on the same pairs."""
    folder, tuned, _ = pairs
    result = commands.run(
        "albert_tf.run_classifier",
        ["--task_name=text", f"--model_dir={tuned}", f"--output_dir={folder / 'predicted'}", "--nodo_train",
         "--nodo_eval", "--do_predict", f"--test_file={folder / 'dev.csv'}"],
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"fine-tuned model in {tuned} gives --max_seq_length=16 --labels=same,other" in result.stderr
    with open(folder / "dev.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    model = model_dir.load_task_model(str(tuned))
    probabilities = model.predict(([r["text"] for r in rows], [r["text_b"] for r in rows]), verbose=0)
    expected = [model.labels[i] for i in np.argmax(probabilities, axis=-1)]
    lines = (folder / "predicted" / "test_results.tsv").read_text().splitlines()[1:]
    assert [line.split("\t")[1] for line in lines] == expected
    # No model trained, no evaluation: it names the predictions alone.
    assert result.stderr.splitlines()[-1] == (
        f"run_classifier: predictions: {folder / 'predicted' / 'test_results.tsv'}"
    )
    assert "model directory:" not in result.stderr and "evaluation:" not in result.stderr


def saved_classifier(setup, folder, labels=("no", "yes")):
    """A model directory holding a 2-class classifier of the setup's model at 16 tokens, not trained."""
    classifier = AlbertClassifier.from_model_dir(
        str(setup / "model"), num_classes=2, labels=labels, max_seq_length=16
    )
    model_dir.copy_config_and_spm(str(setup / "model"), str(folder))
    model_dir.save_task_model(classifier, str(folder))
    return folder


def test_another_tasks_fine_tuned_model_is_refused_before_tensorflow_starts(setup, tmp_path):
    tuned = saved_classifier(setup, tmp_path / "tuned")
    result = fresh_command(
        "albert_tf.run_squad", f"--model_dir={tuned}", f"--output_dir={tmp_path / 'out'}", "--nodo_train",
        f"--predict_file={tmp_path / 'dev.json'}",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"{tuned} holds a fine-tuned AlbertClassifier; run_squad fine-tunes" in result.stderr
    assert not imported_tensorflow(result.stderr) and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kept", "flags", "differs"),
    [
        (("no", "yes"), [], ("labels=('no', 'yes')", "labels=('a', 'b')")),
        (("a", "b"), ["--max_seq_length=12"], ("max_seq_length=16", "max_seq_length=12")),
    ],
    ids=["other_labels", "other_length"],
)
def test_training_into_a_fine_tuned_output_dir_of_other_settings_is_refused_before_tensorflow_starts(
    setup, tmp_path, kept, flags, differs
):
    """Training resumes the run an --output_dir holds: with other labels (the same count) its weights would
    be saved and served under the new names; at another length, for another length. Refused, naming both,
    and the directory is left as it was."""
    tuned = saved_classifier(setup, tmp_path / "tuned", labels=kept)
    before = {path.name: path.read_bytes() for path in tuned.iterdir() if path.is_file()}
    (tmp_path / "train.csv").write_text("text,label\nfine,a\nodd,b\n", encoding="utf-8")
    result = fresh_command(
        "albert_tf.run_classifier", "--task_name=text", f"--train_file={tmp_path / 'train.csv'}",
        "--nodo_eval", f"--model_dir={setup / 'model'}", f"--output_dir={tuned}", "--max_seq_length=16",
        "--train_batch_size=2", *flags,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    refused = f"--output_dir={tuned} holds a run fine-tuned with {differs[0]}, and training there resumes it"
    assert refused in result.stderr and f"this run has {differs[1]}," in result.stderr, result.stderr[-2000:]
    assert not imported_tensorflow(result.stderr)
    assert {path.name: path.read_bytes() for path in tuned.iterdir() if path.is_file()} == before


def test_a_flag_given_wins_over_the_fine_tuned_models_even_at_its_default(setup, tmp_path):
    """--max_seq_length=128 (the default) on the command line or in a flagfile is kept, and said to differ
    from the model's 16; the model's position embeddings (16) then refuse it."""
    tuned = saved_classifier(setup, tmp_path / "tuned")
    (tmp_path / "test.csv").write_text("text\nfine\n", encoding="utf-8")
    (tmp_path / "length.flags").write_text("--max_seq_length=128\n", encoding="utf-8")
    common = ["--task_name=text", f"--model_dir={tuned}", f"--output_dir={tmp_path / 'out'}", "--nodo_train",
              "--nodo_eval", "--do_predict", f"--test_file={tmp_path / 'test.csv'}"]  # fmt: skip
    for given in ("--max_seq_length=128", f"--flagfile={tmp_path / 'length.flags'}"):
        result = fresh_command("albert_tf.run_classifier", *common, given)
        assert result.returncode == 1, result.stderr[-2000:]
        assert f"--max_seq_length=128 given; the fine-tuned model in {tuned} has --max_seq_length=16" in (
            result.stderr
        )
        assert "exceeds the model's max_position_embeddings=16" in result.stderr
        assert f"fine-tuned model in {tuned} gives --labels=no,yes\n" in result.stderr
        assert not imported_tensorflow(result.stderr)


def test_a_classifier_without_label_names_needs_labels_before_tensorflow_starts(setup, tmp_path):
    """A classifier fitted on class indices keeps no names: predicting a text file needs --labels (without,
    it would be taken for a regression)."""
    tuned = saved_classifier(setup, tmp_path / "tuned", labels=None)
    (tmp_path / "test.csv").write_text("text\nfine\n", encoding="utf-8")
    result = fresh_command(
        "albert_tf.run_classifier", "--task_name=text", f"--model_dir={tuned}",
        f"--output_dir={tmp_path / 'out'}", "--nodo_train", "--nodo_eval", "--do_predict",
        f"--test_file={tmp_path / 'test.csv'}",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"{tuned} holds a 2-class classifier without label names: give --labels" in result.stderr
    assert not imported_tensorflow(result.stderr)


GOOD_CSV = 'text,label\n"fine, and more",a\nodd,b\n'


@pytest.mark.parametrize(
    ("train", "flags", "refused"),
    [
        ("text,label\nfine,a\nodd,b,c\n", [], "train.csv:3: 3 fields, the header has 2 (text, label)"),
        ("text,label\nfine,a\nodd,\n", [], "train.csv:3: the label is empty"),
        ("text,label\n", [], "train.csv: no examples"),
        ("text,category\nfine,a\n", [], "train.csv:1: the header (text, category) has no label column"),
        (GOOD_CSV, ["--train_batch_size=3"], "2 training examples, fewer than --train_batch_size=3"),
        (None, [], "--task_name=text needs --train_file (for --do_train), or --nodo_train"),
        (GOOD_CSV, ["--do_predict"], "needs --test_file (for --do_predict), or --nodo_predict"),
    ],
    ids=[
        "extra_field",
        "empty_label",
        "no_rows",
        "no_label_column",
        "fewer_than_a_batch",
        "no_train_file",
        "no_test_file",
    ],
)
def test_text_files_that_cannot_make_the_run_are_refused_before_tensorflow_starts(
    setup, tmp_path, train, flags, refused
):
    """A CSV row with more fields than its header, an empty label, a file without rows, a header without the
    label column (named with the header found), fewer training examples than a batch (training would make no
    batch at all) and a step without its file: each named, in the command's first second, with nothing
    written."""
    (tmp_path / "dev.csv").write_text(GOOD_CSV, encoding="utf-8")
    given = [f"--dev_file={tmp_path / 'dev.csv'}", "--train_batch_size=2", *flags]
    if train is not None:
        (tmp_path / "train.csv").write_text(train, encoding="utf-8")
        given.append(f"--train_file={tmp_path / 'train.csv'}")
    result = fresh_command(
        "albert_tf.run_classifier", "--task_name=text", f"--model_dir={setup / 'model'}",
        f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16", *given,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert refused in result.stderr, result.stderr[-2000:]
    assert not imported_tensorflow(result.stderr) and not (tmp_path / "out").exists()


def test_an_output_dir_under_a_file_is_refused_before_tensorflow_starts(setup, tmp_path):
    (tmp_path / "a_file").write_text("")
    result = fresh_command("albert_tf.run_classifier", *flags(setup, tmp_path / "a_file" / "out"))
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"--output_dir={tmp_path / 'a_file' / 'out'}: {tmp_path / 'a_file'} is a file" in result.stderr
    assert not imported_tensorflow(result.stderr)


def test_bad_label_names_file_and_line_before_tensorflow_starts(setup, tmp_path):
    folder = tmp_path / "SST-2"
    folder.mkdir()
    (folder / "train.tsv").write_text("sentence\tlabel\nfine\t1\nodd\tpositive\n", encoding="utf-8")
    (folder / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n", encoding="utf-8")
    result = fresh_command(
        "albert_tf.run_classifier", "--task_name=sst-2", f"--data_dir={folder}",
        f"--model_dir={setup / 'model'}", f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16",
    )  # fmt: skip
    assert result.returncode == 1
    assert "train.tsv:3: label 'positive' is not one of 0, 1" in result.stderr
    assert not imported_tensorflow(result.stderr)


@pytest.mark.slow
def test_task_data_that_is_not_utf8_is_named_by_the_command_or_read_with_errors_replace(setup, tmp_path):
    """The command as a user runs it: a byte that is not UTF-8 in train.tsv ends the run naming the file,
    line and offset, and writes nothing; with --errors=replace the run trains and evaluates."""
    folder = tmp_path / "SST-2"
    folder.mkdir()
    (folder / "train.tsv").write_bytes(b"sentence\tlabel\nfine\t1\nbad \xff byte\t0\n")
    (folder / "dev.tsv").write_text("sentence\tlabel\nfine\t1\nbad\t0\n", encoding="utf-8")
    given = ["--task_name=sst-2", f"--data_dir={folder}", f"--model_dir={setup / 'model'}",
             "--max_seq_length=16", "--train_batch_size=2", "--train_step=2", "--warmup_step=1",
             "--save_checkpoints_steps=2"]  # fmt: skip
    refused = commands.run("albert_tf.run_classifier", [*given, f"--output_dir={tmp_path / 'strict'}"])
    assert refused.returncode == 1 and not (tmp_path / "strict").exists()
    assert "train.tsv:3: byte 0xff at offset 26 is not UTF-8" in refused.stderr, refused.stderr[-2000:]
    replaced = commands.run(
        "albert_tf.run_classifier", [*given, f"--output_dir={tmp_path / 'replace'}", "--errors=replace"]
    )
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    assert (tmp_path / "replace" / "eval_results.json").is_file()


def test_sequence_longer_than_the_model_is_refused_before_tensorflow_starts(setup, tmp_path):
    result = fresh_command("albert_tf.run_classifier", *flags(setup, tmp_path / "out", "--max_seq_length=17"))
    assert result.returncode == 1
    assert "--max_seq_length=17 exceeds the model's max_position_embeddings=16" in result.stderr
    assert not imported_tensorflow(result.stderr)


def test_nodo_train_on_a_pretrained_model_is_refused_before_tensorflow_starts(setup, tmp_path):
    """Evaluating or predicting needs a fine-tuned model: a pretrained one's head would be random."""
    result = fresh_command(
        "albert_tf.run_classifier", *flags(setup, tmp_path / "out", "--nodo_train", "--do_predict")
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert re.search(r"--nodo_train needs a fine-tuned --model_dir .*model holds a pretrained", result.stderr)
    assert not imported_tensorflow(result.stderr) and not (tmp_path / "out").exists()


def test_the_evaluator_task_of_a_cluster_is_refused(setup, tmp_path):
    """Fine-tuning evaluates in its training tasks: a process TF_CONFIG names the evaluator would train a
    copy of its own."""
    cluster = {"worker": ["localhost:1"], "evaluator": ["localhost:2"]}
    config = json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}})
    result = commands.run(
        "albert_tf.run_classifier", flags(setup, tmp_path / "out"), env={**os.environ, "TF_CONFIG": config}
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "TF_CONFIG names this process the cluster's evaluator" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_tokenizer_larger_than_the_models_vocabulary_is_one_line_before_training(setup, tmp_path):
    small = tmp_path / "model"
    model_dir.save_model_dir(AlbertPretrainer(AlbertEncoder(tiny_config())), small, SPM)  # 97 ids, 8k pieces
    result = commands.run(
        "albert_tf.run_classifier",
        ["--task_name=sst-2", f"--data_dir={setup / 'SST-2'}", f"--model_dir={small}",
         f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16"],
    )  # fmt: skip
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert re.search(r"spm\.model has 8,000 pieces but .*albert_config\.json has vocab_size 97", last), last
    assert "Traceback" not in result.stderr
