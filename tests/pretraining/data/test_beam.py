import gzip
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

from albert_tf.pretraining.data import beam, local
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.manifest import output_paths
from albert_tf.pretraining.data.units import BuildSettings
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, free_ports

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
