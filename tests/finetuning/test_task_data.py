"""What a fine-tuning run reads and checks before TensorFlow starts (task_data.read), in this process: the
model directory against the settings, the splits each command asks for, and the run an --output_dir would
resume. The commands' own tests (test_classifier, test_span, test_race) check the same refusals end to end."""

import dataclasses
import json
import shutil
import zipfile

import pytest

from albert_tf import model_files
from albert_tf.finetuning import task_data
from albert_tf.finetuning.glue import DataError
from albert_tf.finetuning.settings import ClassifierSettings, SquadSettings
from albert_tf.text.tokenizer import TokenizerError
from tests.helpers import SAMPLE_SPM, tiny_config


def model_dir(folder, task_model=None, **config):
    """A model directory as task_data.read sees it: config and SentencePiece model (the sample's), and a
    task_model.keras holding only its config.json when task_model = (class name, config) is given."""
    folder.mkdir(parents=True, exist_ok=True)
    tiny_config(**{"vocab_size": 8000, "max_position_embeddings": 64, **config}).to_json_file(
        folder / model_files.CONFIG_FILE
    )
    shutil.copy(SAMPLE_SPM, folder / model_files.SPM_FILE)
    if task_model:
        keras_file(folder / model_files.TASK_MODEL_FILE, *task_model)
    return str(folder)


def keras_file(path, class_name, config):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": class_name, "config": config}))


def csv(path, rows, header="text,label"):
    path.write_text(header + "\n" + "".join(row + "\n" for row in rows), encoding="utf-8")
    return str(path)


def text_settings(tmp_path, **changes):
    values = dict(
        model_dir=model_dir(tmp_path / "model"), output_dir=str(tmp_path / "out"), task_name="text",
        train_file=csv(tmp_path / "train.csv", ["A fine film.,pos", "Dull.,neg", "Great.,pos"]),
        dev_file=csv(tmp_path / "dev.csv", ["Good.,pos"]), max_seq_length=64, train_batch_size=2,
    )  # fmt: skip
    return ClassifierSettings(**{**values, **changes})


def test_a_classifier_run_reads_the_tokenizer_and_the_splits_asked_for(tmp_path):
    test_file = csv(tmp_path / "test.csv", ["Fine.", "Bad."], header="text")
    data = task_data.read(text_settings(tmp_path, test_file=test_file, do_predict=True), "run_classifier")
    assert (data.spm, data.do_lower_case, data.keep_accents) == (
        str(tmp_path / "model" / "spm.model"),
        True,
        False,
    )
    assert data.labels == ("neg", "pos")  # sorted: the index order
    assert {split: [(e.text_a, e.label) for e in examples] for split, examples in data.splits.items()} == {
        "train": [("A fine film.", 1), ("Dull.", 0), ("Great.", 1)],
        "dev": [("Good.", 1)],
        "test": [("Fine.", None), ("Bad.", None)],  # read without labels
    }
    # A cased model that keeps its marks is fine-tuned as it was pretrained: both settings read.
    model_files.write_tokenizer_settings(tmp_path / "model", False, True)
    only_train = task_data.read(text_settings(tmp_path, dev_file=None, do_eval=False), "run_classifier")
    assert (only_train.do_lower_case, only_train.keep_accents) == (False, True)
    assert set(only_train.splits) == {"train"}


def test_the_model_directory_is_checked_against_the_settings(tmp_path):
    settings = text_settings(tmp_path)
    (tmp_path / "model" / "spm.model").unlink()
    with pytest.raises(FileNotFoundError, match=f"^{tmp_path / 'model'} has no spm.model$"):
        task_data.read(settings, "run_classifier")
    small = text_settings(tmp_path, model_dir=model_dir(tmp_path / "small", vocab_size=100))
    with pytest.raises(
        TokenizerError, match=r"has 8,000 pieces but .*small/albert_config\.json has vocab_size"
    ):
        task_data.read(small, "run_classifier")
    with pytest.raises(
        ValueError, match=r"^--max_seq_length=65 exceeds the model's max_position_embeddings=64$"
    ):
        task_data.read(text_settings(tmp_path, max_seq_length=65), "run_classifier")
    task_data.read(text_settings(tmp_path, max_seq_length=64), "run_classifier")  # all positions: fine
    with pytest.raises(ValueError) as error:
        task_data.read(text_settings(tmp_path, do_train=False), "run_classifier")
    assert str(error.value) == (
        "--nodo_train needs a fine-tuned --model_dir (task_model.keras, what a fine-tuning run writes to its "
        f"--output_dir): {tmp_path / 'model'} holds a pretrained model, whose task head would be random"
    )
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match=r"^--output_dir=.*a_file/out: .*a_file is a file, not a folder$"):
        task_data.read(text_settings(tmp_path, output_dir=str(tmp_path / "a_file" / "out")), "run_classifier")


def test_a_fine_tuned_model_directory_evaluates_without_training(tmp_path):
    fine_tuned = model_dir(tmp_path / "tuned", task_model=("AlbertClassifier", {"num_classes": 2}))
    settings = text_settings(tmp_path, model_dir=fine_tuned, do_train=False, train_file=None)
    data = task_data.read(settings, "run_classifier")
    assert set(data.splits) == {"dev"} and data.labels == ("pos",)


def test_fewer_training_examples_than_a_batch_are_refused(tmp_path):
    with pytest.raises(DataError) as error:
        task_data.read(text_settings(tmp_path, train_batch_size=4), "run_classifier")
    assert (
        str(error.value) == "3 training examples, fewer than --train_batch_size=4: lower it, or add examples"
    )
    task_data.read(text_settings(tmp_path, train_batch_size=3), "run_classifier")  # one full batch


def classifier_config(max_seq_length=64, text_pair=False, num_classes=2, labels=("neg", "pos")):
    preprocessing = {"max_seq_length": max_seq_length, "text_pair": text_pair}
    return {"preprocessing": preprocessing, "num_classes": num_classes, "labels": list(labels)}


def test_training_into_a_fine_tuned_output_dir_resumes_only_the_same_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    settings = text_settings(tmp_path)
    keras_file(out / model_files.TASK_MODEL_FILE, "AlbertClassifier", classifier_config())
    task_data.read(settings, "run_classifier")  # the same run: resumed
    keras_file(out / model_files.TASK_MODEL_FILE, "AlbertMultipleChoice", classifier_config())
    with pytest.raises(ValueError) as error:
        task_data.read(settings, "run_classifier")
    assert str(error.value) == (
        f"--output_dir={out} holds a fine-tuned AlbertMultipleChoice, and training there resumes its run: "
        "use a new --output_dir for this one"
    )
    keras_file(out / model_files.TASK_MODEL_FILE, "AlbertClassifier", classifier_config(32, True, 3, "abc"))
    with pytest.raises(ValueError) as error:
        task_data.read(settings, "run_classifier")
    assert str(error.value) == (
        f"--output_dir={out} holds a run fine-tuned with max_seq_length=32, text_pair=True, num_classes=3, "
        "labels=('a', 'b', 'c'), and training there resumes it: this run has max_seq_length=64, "
        "text_pair=False, num_classes=2, labels=('neg', 'pos'), under which its weights would be saved and "
        "served. Use a new --output_dir, or delete that one"
    )
    # A run stopped before it saved its model: the model it recorded when it started, beside its checkpoints.
    (out / model_files.TASK_MODEL_FILE).unlink()
    (out / "checkpoints").mkdir()
    (out / model_files.CHECKPOINT_STATE_FILE).write_text("")
    (out / model_files.RUN_MODEL_FILE).write_text(
        json.dumps({"class_name": "AlbertClassifier", "config": classifier_config(labels=("bad", "good"))})
    )
    with pytest.raises(ValueError, match=r"labels=\('bad', 'good'\), and training there resumes it"):
        task_data.read(settings, "run_classifier")


def glue_settings(tmp_path, **changes):
    return ClassifierSettings(
        **{"model_dir": "m", "output_dir": "o", "task_name": "SST-2", "data_dir": str(tmp_path), **changes}
    )


def test_a_glue_task_reads_the_splits_asked_for_with_its_labels(tmp_path):
    (tmp_path / "train.tsv").write_text("sentence\tlabel\nit 's charming .\t1\nbleak\t0\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine .\t1\n", encoding="utf-8")
    splits, labels = task_data.classifier_splits(glue_settings(tmp_path))
    assert labels == ("0", "1") and {split: len(examples) for split, examples in splits.items()} == {
        "train": 2,
        "dev": 1,
    }
    splits, _ = task_data.classifier_splits(glue_settings(tmp_path, do_train=False))
    assert set(splits) == {"dev"}
    with pytest.raises(ValueError, match="^--data_dir is required for the GLUE task sst-2$"):
        task_data.classifier_splits(glue_settings(tmp_path, data_dir=None))
    for name in ("dev_file", "test_file"):
        with pytest.raises(ValueError, match=f"^--{name} is for --task_name=text; the GLUE task sst-2 reads"):
            task_data.classifier_splits(glue_settings(tmp_path, **{name: "x.csv"}))
    with pytest.raises(ValueError) as error:
        task_data.classifier_splits(glue_settings(tmp_path, task_name="sst"))
    assert str(error.value) == (
        "--task_name must be a GLUE task (cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte, wnli) or 'text', "
        "got 'sst'"
    )


def test_the_text_task_names_the_files_its_steps_need(tmp_path):
    settings = ClassifierSettings(model_dir="m", output_dir="o", task_name="Text", do_predict=True)
    with pytest.raises(ValueError) as error:
        task_data.classifier_splits(settings)
    assert str(error.value) == (
        "--task_name=text needs --train_file (for --do_train) and --dev_file (for --do_eval) and --test_file "
        "(for --do_predict), or --nodo_train and --nodo_eval and --nodo_predict"
    )
    dev = csv(tmp_path / "dev.csv", ["Good.,pos"])
    test = csv(tmp_path / "test.csv", ["Fine."], header="text")
    splits, labels = task_data.classifier_splits(
        ClassifierSettings(model_dir="m", output_dir="o", task_name="text", do_train=False, dev_file=dev,
                           test_file=test, labels=("neg", "pos"))
    )  # fmt: skip
    assert labels == ("neg", "pos") and [e.label for e in splits["dev"]] == [1]
    # A test file given without --do_predict is not read (it may not exist yet).
    splits, _ = task_data.classifier_splits(
        ClassifierSettings(model_dir="m", output_dir="o", task_name="text", do_train=False, dev_file=dev,
                           test_file=str(tmp_path / "missing.csv"))
    )  # fmt: skip
    assert set(splits) == {"dev"}


def race_file(folder, answer="B"):
    folder.mkdir(parents=True, exist_ok=True)
    record = {"article": "A cat sat.", "questions": ["Who sat?"], "options": [["A cat", "A dog", "A", "B"]],
              "answers": [answer], "id": "r1"}  # fmt: skip
    (folder / "1.txt").write_text(json.dumps(record), encoding="utf-8")


def test_race_reads_the_splits_asked_for_with_the_answer_letters(tmp_path):
    for split in ("train", "dev"):
        for level in ("high", "middle"):
            race_file(tmp_path / split / level)
    settings = ClassifierSettings(model_dir="m", output_dir="o", task_name="race", data_dir=str(tmp_path))
    splits, labels = task_data.race_splits(settings)
    assert labels == ("A", "B", "C", "D")
    assert {split: [e.label for e in examples] for split, examples in splits.items()} == {
        "train": [1, 1],
        "dev": [1, 1],
    }
    with pytest.raises(
        ValueError, match=r"^--data_dir is required: the RACE folder with train/, dev/ and test/$"
    ):
        task_data.race_splits(dataclasses.replace(settings, data_dir=None))


def squad_file(path, questions, version="v2.0"):
    context = "Python was created by Guido van Rossum."
    paragraphs = [{"context": context, "qas": questions}]
    path.write_text(json.dumps({"version": version, "data": [{"title": "T", "paragraphs": paragraphs}]}))
    return str(path)


ANSWERED = {"id": "q1", "question": "Who?", "answers": [{"text": "Guido van Rossum", "answer_start": 22}]}
IMPOSSIBLE = {"id": "q2", "question": "When?", "answers": [], "is_impossible": True}
UNLABELLED = {"id": "q3", "question": "Where?", "answers": []}


def squad_settings(tmp_path, **changes):
    values = {
        "model_dir": "m", "output_dir": "o", "max_seq_length": 64, "doc_stride": 16, "max_query_length": 8,
        "train_file": squad_file(tmp_path / "train.json", [ANSWERED]),
        "predict_file": squad_file(tmp_path / "dev.json", [ANSWERED]),
    }  # fmt: skip
    return SquadSettings(**{**values, **changes})


def test_squad_reads_its_files_once_the_window_and_answer_flags_are_checked(tmp_path):
    splits, labels = task_data.squad_splits(squad_settings(tmp_path, do_predict=True))
    assert labels is None and set(splits) == {"train", "dev", "test"}
    assert splits["dev"] is splits["test"] and [e.qas_id for e in splits["train"]] == ["q1"]
    with pytest.raises(ValueError, match="leave no room for the question and the context"):
        task_data.squad_splits(squad_settings(tmp_path, doc_stride=0))
    with pytest.raises(ValueError, match="^--max_answer_length must be at least 1, got 0$"):
        task_data.squad_splits(squad_settings(tmp_path, max_answer_length=0))
    with pytest.raises(ValueError, match="^--n_best_size must be at least 1, got 0$"):
        task_data.squad_splits(squad_settings(tmp_path, n_best_size=0))
    with pytest.raises(ValueError, match="^--train_file is required with --do_train$"):
        task_data.squad_splits(squad_settings(tmp_path, train_file=None))
    with pytest.raises(ValueError, match="^--predict_file is required with --do_eval or --do_predict$"):
        task_data.squad_splits(squad_settings(tmp_path, predict_file=None, do_eval=False, do_predict=True))
    only_train, _ = task_data.squad_splits(squad_settings(tmp_path, predict_file=None, do_eval=False))
    assert set(only_train) == {"train"}


def test_squad_questions_that_cannot_be_trained_or_scored_are_named(tmp_path):
    empty = squad_file(tmp_path / "empty.json", [])
    with pytest.raises(DataError, match=r"empty\.json: no questions$"):
        task_data.squad_splits(squad_settings(tmp_path, train_file=empty))
    v2 = squad_file(tmp_path / "v2.json", [ANSWERED, IMPOSSIBLE])
    with pytest.raises(DataError) as error:
        task_data.squad_splits(squad_settings(tmp_path, train_file=v2))
    assert str(error.value) == (
        f"{v2}: 1 unanswerable question(s) (e.g. q2): SQuAD v2.0 data needs --version_2_with_negative"
    )
    splits, _ = task_data.squad_splits(squad_settings(tmp_path, train_file=v2, version_2_with_negative=True))
    assert [e.qas_id for e in splits["train"]] == ["q1", "q2"]
    unlabelled = squad_file(tmp_path / "unlabelled.json", [ANSWERED, UNLABELLED])
    with pytest.raises(DataError) as error:
        task_data.squad_splits(squad_settings(tmp_path, predict_file=unlabelled))
    assert str(error.value) == (
        f"{unlabelled}: 1 question(s) without answers (e.g. q3) to train or evaluate on"
    )
    # Questions to predict need no answers.
    splits, _ = task_data.squad_splits(
        squad_settings(tmp_path, predict_file=unlabelled, do_train=False, do_eval=False, do_predict=True)
    )
    assert set(splits) == {"test"} and [e.qas_id for e in splits["test"]] == ["q1", "q3"]
    # A question whose answers are nowhere in its context is scored (dev) but not trained on.
    lost = {"id": "q4", "question": "Who?", "answers": [{"text": "Linus", "answer_start": 0}]}
    both = squad_file(tmp_path / "lost.json", [ANSWERED, lost])
    splits, _ = task_data.squad_splits(squad_settings(tmp_path, train_file=both, predict_file=both))
    assert [e.qas_id for e in splits["train"]] == ["q1"] and [e.qas_id for e in splits["dev"]] == ["q1", "q4"]
    only_lost = squad_file(tmp_path / "only_lost.json", [lost])
    with pytest.raises(DataError) as error:
        task_data.squad_splits(squad_settings(tmp_path, train_file=only_lost))
    assert str(error.value) == f"{only_lost}: no question has its answer in the context, to train on"


def test_a_squad_run_reads_with_windows_not_examples_per_batch(tmp_path):
    """A question makes one or more windows: a run_squad training file shorter than a batch is read."""
    settings = squad_settings(
        tmp_path, model_dir=model_dir(tmp_path / "model"), output_dir=str(tmp_path / "o")
    )
    data = task_data.read(settings, "run_squad")
    assert data.labels is None and len(data.splits["train"]) == 1 < settings.train_batch_size


MNLI_ROW = "0\t1\t1n\tfiction\tx\tx\tx\tx\tA b.\tC d.\tneutral\tneutral\n"
MNLI_HEADER = "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2"


def test_mnli_reads_its_matched_and_mismatched_sets_and_names_one_missing(tmp_path):
    labelled = f"{MNLI_HEADER}\tlabel1\tgold_label\n{MNLI_ROW}"
    for name in ("train.tsv", "dev_matched.tsv"):
        (tmp_path / name).write_text(labelled, encoding="utf-8")
    settings = glue_settings(tmp_path, task_name="mnli", do_predict=True, train_batch_size=1)
    with pytest.raises(DataError, match=f"^{tmp_path / 'dev_mismatched.tsv'}: no such file$"):
        task_data.classifier_splits(settings)
    (tmp_path / "dev_mismatched.tsv").write_text(labelled + MNLI_ROW, encoding="utf-8")
    for name in ("test_matched.tsv", "test_mismatched.tsv"):
        (tmp_path / name).write_text(f"{MNLI_HEADER}\n{MNLI_ROW.rsplit(chr(9), 2)[0]}\n", encoding="utf-8")
    splits, labels = task_data.classifier_splits(settings)
    assert labels == ("contradiction", "entailment", "neutral")
    assert {split: len(examples) for split, examples in splits.items()} == {
        "train": 1, "dev": 1, "dev_mismatched": 2, "test": 1, "test_mismatched": 1
    }  # fmt: skip
    assert splits["test_mismatched"][0].label is None and splits["dev_mismatched"][1].label == 2
