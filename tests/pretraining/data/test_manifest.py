import dataclasses

import pytest

from albert_tf import shipped
from albert_tf.pretraining.data.manifest import (
    SCHEME_VERSION,
    Manifest,
    default_manifest_path,
    output_paths,
    relative_name,
)
from albert_tf.pretraining.data.units import BuildSummary


def test_output_paths_expand_sharded_names_and_name_the_manifest():
    paths = output_paths("out/train.tfrecord@3")
    assert paths == [f"out/train.tfrecord-0000{i}-of-00003" for i in range(3)]
    assert default_manifest_path(paths) == "out/train.tfrecord.manifest.json"
    assert output_paths(" a.tfrecord, b.tfrecord ,") == ["a.tfrecord", "b.tfrecord"]
    assert default_manifest_path(["a.tfrecord", "b.tfrecord"]) == "a.tfrecord.manifest.json"
    with pytest.raises(ValueError, match=r"--output_file: 'x@0' asks for 0 shards"):
        output_paths("x@0")
    with pytest.raises(ValueError, match="--output_file names a file twice"):
        output_paths("a,a")
    with pytest.raises(ValueError, match="--output_file is empty"):
        output_paths(" , ")


MANIFEST = Manifest(
    settings={"gzip": False},
    inputs=[],
    shards=[{"file": "a", "records": 3}, {"file": "b", "records": 0}, {"file": "c", "records": 2}],
    statistics={},
    path="dir/m.manifest.json",
)


def test_json_round_trip_and_errors(tmp_path):
    path = str(tmp_path / "m.manifest.json")
    written = Manifest(**{**MANIFEST.__dict__, "path": path})
    written.write()
    assert Manifest.load(path) == written and [p.name for p in tmp_path.iterdir()] == ["m.manifest.json"]
    assert written.shard_paths() == [str(tmp_path / name) for name in "abc"]
    (tmp_path / "old.json").write_text(
        written.to_json().replace(f'"scheme_version": {SCHEME_VERSION}', '"scheme_version": 1')
    )
    with pytest.raises(ValueError, match=r"old\.json: scheme_version 1, this reader knows 2"):
        Manifest.load(str(tmp_path / "old.json"))
    (tmp_path / "bad.json").write_text('{"shards": []}')
    with pytest.raises(ValueError, match=r"bad\.json is not a pretraining-data manifest"):
        Manifest.load(str(tmp_path / "bad.json"))


@pytest.mark.parametrize(
    "manifest, shard, stored",
    [
        ("/t/data/m.manifest.json", "/t/data/train-0", "train-0"),  # beside it: relative
        ("/t/data/m.manifest.json", "/t/data/sub/train-0", "sub/train-0"),
        ("/t/meta/m.manifest.json", "/t/data/train-0", "/t/data/train-0"),  # elsewhere: absolute
        ("gs://b/data/m.manifest.json", "gs://b/data/train-0", "train-0"),
        ("gs://b/meta/m.manifest.json", "gs://b/data/train-0", "gs://b/data/train-0"),
        (
            "/t/meta/m.manifest.json",
            "gs://b/data/train-0",
            "gs://b/data/train-0",
        ),  # local manifest, remote shards
        ("gs://b/meta/m.manifest.json", "/t/data/train-0", "/t/data/train-0"),
        (
            "gs://b/data/m.manifest.json",
            "gs://b/database/train-0",
            "gs://b/database/train-0",
        ),  # a prefix only
    ],
)
def test_shard_paths_resolve_wherever_the_manifest_and_its_shards_lie(manifest, shard, stored):
    assert relative_name(shard, manifest) == stored
    written = Manifest(settings={}, inputs=[], shards=[{"file": stored, "records": 1}], statistics={},
                       path=manifest)  # fmt: skip
    assert written.shard_paths() == [shard]


def test_a_build_summary_says_what_label_1_means_for_the_builds_objective():
    """Sentence order: label 1 is a swapped pair; next sentence (--random_next_sentence): a random one."""
    sample = Manifest.load(str(shipped.SAMPLE / "records" / "train.manifest.json"))
    options = sample.settings["options"]
    assert options["random_next_sentence"] is False
    lines = str(BuildSummary(sample, seconds=1.0)).splitlines()
    assert lines[-1].startswith("  sentence order: ") and lines[-1].endswith("% label 1 (swapped)")
    nsp_options = {**options, "random_next_sentence": True}
    nsp = dataclasses.replace(sample, settings={**sample.settings, "options": nsp_options})
    lines = str(BuildSummary(nsp, seconds=1.0)).splitlines()
    assert lines[-1].startswith("  next sentence: ") and lines[-1].endswith("% label 1 (random next)")
