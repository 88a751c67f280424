import dataclasses
import gzip
import hashlib
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
import tensorflow as tf
from apache_beam.io.filesystem import FileSystem

from albert_tf import file_io
from albert_tf.pretraining.data import beam, local
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.manifest import output_paths
from albert_tf.pretraining.data.units import BuildError, BuildSettings
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, free_ports, small_spm

SETTINGS = BuildSettings(
    spm_model_file=str(SAMPLE_SPM),
    options=InstanceOptions(max_seq_length=64, max_predictions_per_seq=10),
    dupe_factor=2,
)


def _inputs(tmp_path):
    """Part of the sample corpus in two plain files (4 blocks) and a .gz file (read whole)."""
    documents = SAMPLE_CORPUS.read_text(encoding="utf-8").split("\n\n")[:750]
    (tmp_path / "a.txt").write_text("\n\n".join(documents[:500]) + "\n")
    (tmp_path / "b.txt").write_text("\n\n".join(documents[500:650]) + "\n")
    with gzip.open(tmp_path / "c.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n\n".join(documents[650:]) + "\n")
    return [str(tmp_path / name) for name in ("a.txt", "b.txt", "c.txt.gz")]


def _files(directory):
    return {path.name: path.read_bytes() for path in sorted(pathlib.Path(directory).iterdir())}


@pytest.mark.slow
def test_beam_in_process_and_in_two_processes_writes_the_local_builders_bytes(tmp_path):
    inputs = _inputs(tmp_path)
    assert os.path.getsize(inputs[0]) > 2 * 256 * 1024  # several blocks of one file
    outputs = {}
    for name in ("local", "in_process", "two_processes"):
        (tmp_path / name).mkdir()
        paths = output_paths(f"{tmp_path}/{name}/train.tfrecord@3")
        if name == "local":
            summary = local.build(inputs, paths, SETTINGS, num_workers=2)
        else:
            workers = 1 if name == "in_process" else 2
            summary = beam.build(inputs, paths, SETTINGS, num_workers=workers)
        assert summary.stats["instances"] > 1000
        outputs[name] = _files(tmp_path / name)
    assert sorted(outputs["local"]) == [f"train.tfrecord-0000{i}-of-00003" for i in range(3)] + [
        "train.tfrecord.manifest.json"
    ]
    assert outputs["in_process"] == outputs["local"] == outputs["two_processes"]


def test_pipeline_arguments_pass_options_and_default_to_local_processes():
    assert beam.pipeline_arguments("runner=DataflowRunner, project=p,region=r") == [
        "--runner=DataflowRunner",
        "--project=p",
        "--region=r",
    ]
    assert beam.pipeline_arguments("", num_workers=1) == ["--runner=FnApiRunner"]
    assert beam.pipeline_arguments("save_main_session", num_workers=3)[:4] == [
        "--save_main_session",
        "--runner=FnApiRunner",
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=3",
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_input_under_beam_names_file_and_line_and_leaves_nothing(tmp_path, workers):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"A fine sentence here.\nAnother one.\n\nbroken \xff line\n")
    (tmp_path / "out").mkdir()
    # In this process Beam re-raises the CorpusError; from worker processes it comes back as a BuildError.
    with pytest.raises(ValueError, match=r"bad\.txt:4: invalid UTF-8"):
        beam.build([str(bad)], [str(tmp_path / "out" / "new" / "r")], SETTINGS, num_workers=workers)
    assert os.listdir(tmp_path / "out") == []  # no temporary file, and new/, made for the output, is gone


@pytest.mark.slow
def test_portable_runner_with_workers_in_another_process_writes_the_local_builders_bytes(tmp_path):
    """Beam's portable job API as Flink, Spark and Dataflow (runner v2) use it: the local job service
    (job_endpoint=embed) hands the work to a worker pool (environment EXTERNAL), which starts each SDK
    worker as a process of its own; pool, workers and driver import the installed package (their folder is
    not the repository's)."""
    inputs = _inputs(tmp_path)
    (tmp_path / "local").mkdir()
    local.build(inputs, output_paths(f"{tmp_path}/local/train.tfrecord@3"), SETTINGS)
    (port,) = free_ports(1)
    log = tmp_path / "pool.log"
    with log.open("w") as handle:
        pool = subprocess.Popen(
            [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
            cwd=tmp_path, stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        options = (
            "runner=PortableRunner,job_endpoint=embed,environment_type=EXTERNAL,"
            f"environment_config=localhost:{port}"
        )
        result = subprocess.run(
            [sys.executable, "-m", "albert_tf.create_pretraining_data", "--runner=beam",
             f"--input_file={','.join(inputs)}", f"--spm_model_file={SAMPLE_SPM}",
             f"--output_file={tmp_path}/portable/train.tfrecord@3", "--max_seq_length=64",
             "--max_predictions_per_seq=10", "--dupe_factor=2", f"--beam_pipeline_options={options}"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
    finally:
        pool.kill()
        pool.wait()
    assert "Starting worker with command" in log.read_text()  # the pool's SDK worker processes
    assert _files(tmp_path / "portable") == _files(tmp_path / "local")  # shards and manifest


class _RamFileSystem(FileSystem):
    """TensorFlow's in-memory file system (ram://, this process's) as a Beam file system: a remote model path,
    as gs:// is on Dataflow, that Beam's in-process runner reads. Defining it registers it with Beam. It
    reads; the builder writes nothing there in these tests."""

    @classmethod
    def scheme(cls):
        return "ram"

    def open(self, path, mime_type="application/octet-stream", compression_type=None):
        return tf.io.gfile.GFile(path, "rb")

    def exists(self, path):
        return tf.io.gfile.exists(path)

    def _unused(self, *args, **kwargs):
        raise NotImplementedError("ram:// is read-only here")

    join = split = mkdirs = has_dirs = _list = create = copy = rename = size = _unused
    last_updated = metadata = delete = _unused


def test_a_remote_model_replaced_between_builds_tokenizes_the_rebuild_and_leaves_none(tmp_path, monkeypatch):
    """A model at ram://.../spm.model, replaced by another between two builds in one process: the rebuild's
    records are those a local copy of the new model gives, and its manifest names the new model's SHA-256 (the
    model is identified by its bytes, not its path). No copy of the model is left in the temporary folder,
    where another user could plant one under a predictable name."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:300]) + "\n")
    new_model = small_spm(tmp_path)
    remote = f"ram://{uuid.uuid4().hex}/spm.model"
    settings = dataclasses.replace(SETTINGS, spm_model_file=remote)
    outputs = output_paths(f"{tmp_path}/records/train@2")

    def build_with(model_bytes):
        file_io.write_atomically(remote, model_bytes)  # replaced whole (ram://'s "wb" appends)
        summary = beam.build([str(corpus)], outputs, settings, num_workers=1)
        return summary, [pathlib.Path(path).read_bytes() for path in outputs]

    first, first_records = build_with(SAMPLE_SPM.read_bytes())
    second, second_records = build_with(pathlib.Path(new_model).read_bytes())
    (tmp_path / "reference").mkdir()
    reference = output_paths(f"{tmp_path}/reference/train@2")
    local.build([str(corpus)], reference, dataclasses.replace(SETTINGS, spm_model_file=new_model))
    assert second_records == [pathlib.Path(path).read_bytes() for path in reference] != first_records
    for summary, model in ((first, SAMPLE_SPM), (second, pathlib.Path(new_model))):
        assert summary.manifest.tokenizer_sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert second.manifest.tokenizer_path() == remote
    assert os.listdir(private) == []


def test_beam_refuses_a_corpus_too_small_for_its_shard_count_before_publishing(tmp_path):
    """As the local runner does: the pipeline writes the shards at temporary names with each one's key range,
    and the launcher refuses before renaming any (an earlier build at the prefix stays as it was), naming the
    largest shard count that the instances fill."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:14]) + "\n")
    options = InstanceOptions(max_seq_length=32, max_predictions_per_seq=5)
    settings = BuildSettings(spm_model_file=str(SAMPLE_SPM), options=options, dupe_factor=1)
    records = tmp_path / "records"
    local.build([str(corpus)], output_paths(f"{records}/train@6"), settings)
    before = _files(records)
    with pytest.raises(
        BuildError, match=r"made 8 instances, too few for 8 shards: .*\(shards \[2, 7\] of 8\).* use "
        rf"--output_file={records}/train@6 \("
    ):  # fmt: skip
        beam.build([str(corpus)], output_paths(f"{records}/train@8"), settings, num_workers=1)
    assert _files(records) == before  # no shard, temporary or results file; the manifest of @6
