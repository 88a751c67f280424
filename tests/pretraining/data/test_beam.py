import gzip
import os
import pathlib

import pytest

from albert_tf.pretraining.data import beam, local
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.manifest import output_paths
from albert_tf.pretraining.data.units import BuildSettings
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM

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
