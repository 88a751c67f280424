import dataclasses
import json
import os

import pytest

from albert_tf import shipped
from albert_tf.pretraining.data.manifest import (
    SCHEME_VERSION,
    Manifest,
    default_manifest_path,
    output_paths,
    path_from_manifest,
    relative_name,
    shard_prefix,
)
from albert_tf.pretraining.data.units import (
    BuildError,
    BuildSummary,
    check_shards,
    largest_full_shard_count,
)


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
        ("/m.manifest.json", "/data/train-0", "data/train-0"),  # in the root folder
        ("/t/BOX/m.manifest.json", "/t/BOX/train-0", "train-0"),
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


def test_the_messages_of_bad_output_names_and_old_manifests_say_what_to_do(tmp_path):
    with pytest.raises(ValueError) as error:
        output_paths(" , ")
    assert str(error.value) == "--output_file is empty: give output files, comma-separated, or PREFIX@SHARDS"
    (tmp_path / "old.json").write_text(
        MANIFEST.to_json().replace(f'"scheme_version": {SCHEME_VERSION}', '"scheme_version": 1')
    )
    with pytest.raises(ValueError) as error:
        Manifest.load(str(tmp_path / "old.json"))
    assert str(error.value) == (
        f"{tmp_path / 'old.json'}: scheme_version 1, this reader knows {SCHEME_VERSION}; rebuild the records "
        "with this version's create_pretraining_data"
    )


def test_a_shard_names_its_prefix_and_other_files_have_none():
    assert shard_prefix("records/train-00003-of-00016") == "records/train"
    assert shard_prefix("records/train.tfrecord") is None
    assert shard_prefix("records/train-3-of-16") is None


def test_the_manifest_file_lists_its_keys_sorted_one_per_line():
    """Sorted keys at every level: builds of the same inputs write the same bytes, whichever runner built
    the settings and in what order."""
    settings = {"seed": 1, "dupe_factor": 2, "options": {"ngram": 3, "masked_lm_prob": 0.15}}
    manifest = Manifest(settings=settings, inputs=[], shards=[], statistics={"tokens": 5, "instances": 1})
    text = manifest.to_json()
    assert text.endswith("}\n") and json.loads(text)["settings"]["options"]["ngram"] == 3
    keys = [line.strip().split('"')[1] for line in text.splitlines() if line.strip().startswith('"')]
    assert keys == [
        "inputs", "scheme_version", "settings", "dupe_factor", "options", "masked_lm_prob", "ngram", "seed",
        "shards", "statistics", "instances", "tokens",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "manifest, name, resolved",
    [
        (
            "/t/records/m.manifest.json",
            "../spm.model",
            "/t/records/../spm.model",
        ),  # beside the records' folder
        ("/t/records/m.manifest.json", "/models/spm.model", "/models/spm.model"),
        ("/t/records/m.manifest.json", "gs://b/spm.model", "gs://b/spm.model"),
        ("gs://b/records/m.manifest.json", "spm.model", "gs://b/records/spm.model"),
        ("/t/records/m.manifest.json", None, None),  # built without one
    ],
)
def test_the_tokenizer_is_found_from_the_manifests_folder(manifest, name, resolved):
    settings = {} if name is None else {"spm_model_file": name}
    assert (
        Manifest(settings=settings, inputs=[], shards=[], statistics={}, path=manifest).tokenizer_path()
        == resolved
    )


def test_a_file_the_manifest_refers_to_is_stored_to_be_found_from_where_it_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert path_from_manifest("/t/spm.model", "/t/records/m.manifest.json") == "../spm.model"
    assert path_from_manifest("spm.model", "records/m.manifest.json") == "../spm.model"
    assert path_from_manifest("gs://b/spm.model", "/t/records/m.manifest.json") == "gs://b/spm.model"
    assert path_from_manifest("spm.model", "gs://b/m.manifest.json") == os.path.join(
        str(tmp_path), "spm.model"
    )
    # Shards named relative to this folder, with a manifest named relative to it too.
    assert relative_name("records/train-0", "records/m.manifest.json") == "train-0"


def test_a_build_summary_gives_each_figure_as_computed_by_hand():
    manifest = Manifest(
        settings={"options": {"random_next_sentence": False}},
        inputs=[{"file": "a.txt", "bytes": 1_500_000}, {"file": "b.txt", "bytes": 520_000}],
        shards=[{"file": f"train-0000{k}-of-00003", "records": 1} for k in range(3)],
        statistics={
            "documents": 1234, "skipped_documents": 5, "replaced_lines": 2, "instances": 4000,
            "tokens": 200_000, "masked": 30_000, "masked_as_mask": 24_300, "masked_kept": 2_700,
            "masked_random": 3_000, "label_1": 1_900,
        },
        path="records/train.manifest.json",
    )  # fmt: skip
    removed = ["records/train-00003-of-00004", "records/train-00004-of-00004"]
    assert str(BuildSummary(manifest, seconds=8.0, removed=removed)).splitlines() == [
        "create_pretraining_data: done in 8.0 s",
        "  input: 2 file(s), 2.02 MB, 1,234 documents (5 skipped: too short for a pair), 2 lines with "
        "invalid UTF-8 replaced",
        "  output: 3 shard(s), 4,000 instances (500/s), 200,000 tokens; manifest records/train.manifest.json",
        "  masked: 15.0% of tokens (81.0% [MASK], 9.0% kept, 10.0% random)",
        "  sentence order: 47.5% label 1 (swapped)",
        "  replaced an earlier build: removed its 2 shard(s) that this one does not write "
        "(train-00003-of-00004, ...)",
    ]
    # Nothing made (a build that stopped): no division by zero, no earlier build named.
    empty = dataclasses.replace(manifest, statistics={}, shards=[])
    assert str(BuildSummary(empty, seconds=0.0)).splitlines()[2:] == [
        "  output: 0 shard(s), 0 instances (0/s), 0 tokens; manifest records/train.manifest.json",
        "  masked: 0.0% of tokens (0.0% [MASK], 0.0% kept, 0.0% random)",
        "  sentence order: 0.0% label 1 (swapped)",
    ]


def _filled(heads, n):
    """Whether every shard of n holds one of the key heads (shard of a head: head * n >> 64)."""
    return {(head * n) >> 64 for head in heads} == set(range(n))


def test_too_few_instances_for_the_shards_name_the_empty_shards_and_the_largest_count_they_fill():
    eighth = 1 << 61  # shard k of 8 holds the heads in [k, k + 1) eighths
    key_ranges = {k: (k * eighth + 5, k * eighth + eighth // 2) for k in (0, 1, 3, 4, 5, 7)}
    heads = [head for low_high in key_ranges.values() for head in low_high]
    fits = largest_full_shard_count(key_ranges, 8)
    assert fits == max(n for n in range(1, 8) if _filled(heads, n)) and not _filled(heads, fits + 1)
    files = [f"records/train-{k:05d}-of-00008" for k in range(8)]
    with pytest.raises(BuildError) as error:
        check_shards(key_ranges, files, 6)
    assert str(error.value) == (
        "--output_file: the corpus made 6 instances, too few for 8 shards: 2 shard(s) would hold no records "
        "(shards [2, 6] of 8), and training refuses a build with an empty shard. The most shards these "
        f"instances fill is {fits}: use --output_file=records/train@{fits} (or a larger corpus or "
        "--dupe_factor)"
    )
    check_shards({k: (1, 2) for k in range(3)}, files[:3], 3)  # none empty: nothing to say
    # Files named one by one, and more than ten empty: the advice counts files, the list stops at ten.
    named = [f"records/part{k}.tfrecord" for k in range(16)]
    with pytest.raises(BuildError) as error:
        check_shards({0: (5, 6)}, named, 1)
    assert "15 shard(s) would hold no records (shards [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...] of 16)" in str(
        error.value
    )
    assert str(error.value).endswith(
        "is 1: use 1 file(s) in --output_file (or a larger corpus or --dupe_factor)"
    )
    assert largest_full_shard_count({}, 4) == 0
