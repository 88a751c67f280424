"""file_io on a file system other than the local disk (ram://, TensorFlow's in-memory one, in this process),
and the toolkit end to end on it: pretraining, fine-tuning and export write nothing to local disk."""

import gzip
import json
import os
import stat
import uuid

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import file_io, model_files
from albert_tf.file_systems import TensorFlowFiles
from albert_tf.finetuning import classifier, glue
from albert_tf.finetuning.settings import ClassifierSettings
from albert_tf.models import model_dir
from albert_tf.pretraining.run import run
from albert_tf.pretraining.settings import PretrainingSettings
from albert_tf.serving.export import export_saved_model
from albert_tf.serving.servable import Servable
from albert_tf.text import corpus as text_corpus
from albert_tf.text import spm_training
from tests import commands
from tests.helpers import REPO, SAMPLE_CORPUS


@pytest.fixture
def ram():
    """A fresh ram:// folder."""
    return f"ram://{uuid.uuid4().hex}"


def test_files_are_written_whole_and_replaced(ram):
    path = file_io.join(ram, "a", "b.txt")
    file_io.makedirs(os.path.dirname(path))
    file_io.write_atomically(path, b"first")
    file_io.write_atomically(path, b"second")
    assert file_io.read_bytes(path) == b"second"
    assert file_io.listdir(os.path.dirname(path)) == ["b.txt"]  # no temporary left behind

    def half_then_fail(temporary):
        file_io.write_atomically(temporary, b"ha")
        raise RuntimeError("half written")

    with pytest.raises(RuntimeError, match="half written"):
        file_io.replace_with(path, half_then_fail)
    assert file_io.read_bytes(path) == b"second" and file_io.listdir(os.path.dirname(path)) == ["b.txt"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        file_io.read_bytes(file_io.join(ram, "missing"))


def test_text_files_read_and_write_on_any_file_system_and_the_readers_take_them(ram):
    """Text mode over a GFile (it lacks readable()/readinto()), and the readers that take a path: GLUE's
    TSV, CSV and JSONL text classification."""
    path = file_io.join(ram, "notes.txt")
    with file_io.open_file(path, "w") as file:
        file.write("première ligne\nsecond line\n" * 5000)  # more than one buffer
    with file_io.open_file(path) as file:
        lines = file.read().splitlines()
    assert lines[:2] == ["première ligne", "second line"] and len(lines) == 10_000
    for name, text in (
        ("train.csv", 'text,label\n"a, quoted",x\nplain,y\n'),
        ("train.jsonl", '{"text": "a, quoted", "label": "x"}\n{"text": "plain", "label": "y"}\n'),
    ):
        file_io.write_atomically(file_io.join(ram, name), text.encode())
        examples, labels = glue.read_text_classification(file_io.join(ram, name))
        assert [e.text_a for e in examples] == ["a, quoted", "plain"] and tuple(labels) == ("x", "y"), name
    file_io.makedirs(file_io.join(ram, "SST-2"))
    file_io.write_atomically(file_io.join(ram, "SST-2", "dev.tsv"), b"sentence\tlabel\ngood\t1\nbad\t0\n")
    assert [e.label for e in glue.read_glue(file_io.join(ram, "SST-2"), "sst-2", "dev")] == [1, 0]


def test_a_folder_is_published_with_its_files_or_not_at_all(ram, tmp_path, monkeypatch):
    def write(folder):
        file_io.makedirs(file_io.join(folder, "variables"))
        for name in ("saved_model.pb", "variables/variables.index", "fingerprint.pb"):
            file_io.write_atomically(file_io.join(folder, name), name.encode())

    # Where a folder cannot be renamed whole, its files move one by one, saved_model.pb last: a model server
    # loads a version as soon as it sees that file.
    moved, rename = [], tf.io.gfile.rename

    def recording_rename(source, target, overwrite=False):
        moved.append(target)
        return rename(source, target, overwrite)

    monkeypatch.setattr(tf.io.gfile, "rename", recording_rename)
    target = file_io.publish_directory(file_io.join(ram, "model", "1"), write, last=("saved_model.pb",))
    published = [path for path in moved if path.startswith(target + "/")]  # not the writes' own renames
    assert len(published) == 3 and published[-1] == file_io.join(target, "saved_model.pb"), published
    assert sorted(file_io.listdir(target)) == ["fingerprint.pb", "saved_model.pb", "variables"]
    assert (
        file_io.read_bytes(file_io.join(target, "variables", "variables.index"))
        == b"variables/variables.index"
    )
    assert file_io.listdir(file_io.join(ram, "model")) == ["1"]  # the temporary folder is gone
    with pytest.raises(ValueError, match="broken"):
        file_io.publish_directory(file_io.join(ram, "model", "2"), lambda folder: int("broken"))
    assert file_io.listdir(file_io.join(ram, "model")) == ["1"]
    local = file_io.publish_directory(tmp_path / "local" / "1", write)  # locally: a rename, usual permissions
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(local).st_mode) == 0o777 & ~mask


@pytest.mark.parametrize("where", ["ram", "local"])
def test_output_folders_are_made_and_removed_again_when_the_command_fails(ram, tmp_path, where):
    root = ram if where == "ram" else str(tmp_path)
    path = file_io.join(root, "a", "b", "out.txt")
    with file_io.output_folders([path], "--output_file"):
        file_io.write_atomically(path, b"written")
    assert file_io.read_bytes(path) == b"written"
    with (
        pytest.raises(RuntimeError, match="failed"),
        file_io.output_folders(
            [file_io.join(root, "a", "c", "d", "out.txt"), file_io.join(root, "e", "out.txt")],
            "--output_file",
        ),
    ):
        assert file_io.isdir(file_io.join(root, "a", "c", "d")) and file_io.isdir(file_io.join(root, "e"))
        raise RuntimeError("failed")
    assert file_io.listdir(root) == ["a"] and file_io.listdir(file_io.join(root, "a")) == ["b"]
    file_io.write_atomically(file_io.join(root, "file"), b"")
    in_the_way = r"--prefix: .*file, the folder of .*file/x, is a file"
    paths = [file_io.join(root, "new", "x"), file_io.join(root, "file", "x")]
    with (
        pytest.raises(file_io.FolderError, match=in_the_way),
        file_io.output_folders(paths, "--prefix"),
    ):
        pass
    assert file_io.listdir(root) == ["a", "file"]  # new/, made for the first path, is gone again
    paths = [file_io.join(root, "new", "x"), file_io.join(root, "a")]  # a/ is a folder
    with (
        pytest.raises(file_io.FolderError, match=r"--output_file: .*a is a folder; name a file"),
        file_io.output_folders(paths, "--output_file"),
    ):
        pass
    assert file_io.listdir(root) == ["a", "file"]


@pytest.mark.slow
def test_pretraining_fine_tuning_and_export_on_a_remote_file_system(ram, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a stray local write (e.g. os.makedirs("ram://...")) would land here
    config = file_io.join(ram, "albert_config.json")
    file_io.copy(str(REPO / "albert_tf" / "configs" / "albert_tiny.json"), config)
    spm = file_io.join(ram, "spm.model")
    file_io.copy(str(REPO / "albert_tf" / "sample" / "spm_8k.model"), spm)
    # Inputs remote too: the sample's records and manifests (shard names relative to it), the task's CSVs.
    records = file_io.join(ram, "records")
    for path in (REPO / "albert_tf" / "sample" / "records").iterdir():
        file_io.copy(str(path), file_io.join(records, path.name))
    topics = file_io.join(ram, "doc_topics")
    for name in ("train.csv", "dev.csv"):
        file_io.copy(str(REPO / "data" / "doc_topics" / name), file_io.join(topics, name))
    pretrained = file_io.join(ram, "runs", "tiny")
    run(PretrainingSettings(
        albert_config_file=config, input_file=f"{records}/train.manifest.json",
        eval_input_file=f"{records}/eval.manifest.json", output_dir=pretrained, spm_model_file=spm,
        max_seq_length=64, max_predictions_per_seq=10, train_batch_size=8, eval_batch_size=8,
        num_train_steps=4, num_warmup_steps=1, save_checkpoints_steps=2, steps_per_loop=2, log_every_steps=2,
        eval_every_steps=2, max_eval_steps=2,
    ))  # fmt: skip
    written = set(model_files.files(pretrained))
    assert written == {
        "albert_config.json",
        "spm.model",
        "tokenizer.json",
        "global_step.json",
        "pretrainer.weights.h5",
    }
    for name in ("eval_results.json", "eval_history.jsonl", "checkpoints/checkpoint"):
        assert file_io.exists(file_io.join(pretrained, name)), name
    assert file_io.glob(file_io.join(pretrained, "train", "events.out.tfevents.*"))

    tuned = file_io.join(ram, "runs", "topics")
    classifier.run(ClassifierSettings(
        task_name="text", train_file=file_io.join(topics, "train.csv"),
        dev_file=file_io.join(topics, "dev.csv"), model_dir=pretrained, output_dir=tuned,
        max_seq_length=32, train_batch_size=8, eval_batch_size=64, train_step=4, warmup_step=1,
        save_checkpoints_steps=2,
    ))  # fmt: skip
    assert model_files.has_task_model(tuned) and file_io.exists(file_io.join(tuned, "eval_results.json"))
    # What the run recorded of its model beside its checkpoints (what a resume checks before the model is
    # saved) is what task_model.keras holds.
    recorded = json.loads(file_io.read_text(file_io.join(tuned, model_files.RUN_MODEL_FILE)))
    assert (recorded["class_name"], recorded["config"]) == model_files.task_model_config(tuned)

    model = model_dir.load_task_model(tuned)
    version = export_saved_model(model, model_files.spm_model_file(tuned), file_io.join(ram, "served", "1"),
                                 "classifier", max_seq_length=32)  # fmt: skip
    with Servable(version) as servable:  # the C++ loader reads ram:// too (same process)
        outputs = servable.run("serving_default", {"text": ["Return the square root of x."]})
    assert outputs["label"][0].decode() in model.labels and np.isclose(
        outputs["probabilities"].sum(), 1, atol=1e-5
    )
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)
    assert not tf.io.gfile.exists(os.path.join(str(tmp_path), "ram:"))


def test_the_tokenizer_trains_on_a_corpus_of_another_file_system(tmp_path):
    """train_tokenizer reads --input and writes --model_prefix through TensorFlow's file systems: its file://
    one (the command's own process sees it, unlike ram://) gives the model a run on local paths gives."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    (corpus / "a.txt").write_text("".join(lines[:1500]), encoding="utf-8")
    (corpus / "b.txt.gz").write_bytes(gzip.compress("".join(lines[1500:3000]).encode("utf-8")))
    (corpus / "folder.txt").mkdir()  # matched by the pattern, not a file: left out, as on a local disk
    models = {}
    for where, root in (("local", str(tmp_path)), ("file_system", f"file://{tmp_path}")):
        result = commands.run("albert_tf.train_tokenizer", [
            f"--input={root}/corpus/*.txt,{root}/corpus/*.gz", f"--model_prefix={root}/{where}/albert",
            "--vocab_size=300", "--num_threads=1",
        ])  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        read = sum(1 for line in lines[:3000] if line.strip())  # both files, every non-blank line
        assert result.stdout.startswith(f"train_tokenizer: {read} lines "), result.stdout
        models[where] = (tmp_path / where / "albert.model").read_bytes()
        settings = json.loads((tmp_path / where / "albert.tokenizer.json").read_text())  # for the builder
        assert settings == {"do_lower_case": True, "keep_accents": False}
    assert models["file_system"] == models["local"]
    # An in-memory file system (ram://, this process's only), read as the command reads it: an object
    # store's flat names, no folders. The same training on the local files gives the same model.
    ram = f"ram://{uuid.uuid4().hex}"
    for path in (corpus / "a.txt", corpus / "b.txt.gz"):
        file_io.copy(str(path), f"{ram}/corpus/{path.name}")
    for root in (ram, str(tmp_path)):
        paths = text_corpus.expand_patterns(f"{root}/corpus/*.txt,{root}/corpus/*.gz", files=TensorFlowFiles)
        spm_training.train(
            paths, f"{root}/in_process/albert", vocab_size=300, num_threads=1, files=TensorFlowFiles
        )
    local = (tmp_path / "in_process" / "albert.model").read_bytes()
    assert file_io.read_bytes(f"{ram}/in_process/albert.model") == local
