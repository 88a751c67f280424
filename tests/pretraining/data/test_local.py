import dataclasses
import gzip
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.file_io import FolderError
from albert_tf.file_systems import LocalFiles
from albert_tf.pretraining.data import units
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.local import build
from albert_tf.pretraining.data.manifest import SCHEME_VERSION, Manifest, output_paths
from albert_tf.pretraining.data.units import BuildError, BuildSettings
from albert_tf.pretraining.dataset import parse_spec
from albert_tf.pretraining.input import find_manifest
from albert_tf.text import corpus
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, small_spm

SETTINGS = BuildSettings(
    spm_model_file=str(SAMPLE_SPM),
    options=InstanceOptions(max_seq_length=128, max_predictions_per_seq=20),
    dupe_factor=1,
)


def _build(tmp_path, name, workers, inputs=(str(SAMPLE_CORPUS),), shards=3, **kwargs):
    outputs = output_paths(f"{tmp_path}/{name}.tfrecord@{shards}")
    summary = build(list(inputs), outputs, kwargs.pop("settings", SETTINGS), num_workers=workers, **kwargs)
    return outputs, summary


def _bytes(paths):
    return [pathlib.Path(path).read_bytes() for path in paths]


def _small_corpus(tmp_path, lines=400):
    text = tmp_path / "small.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:lines]) + "\n")
    return text


@pytest.mark.slow
def test_same_bytes_for_one_and_two_workers_and_any_sort_memory_and_paper_statistics(tmp_path):
    one, summary = _build(tmp_path, "one", 1)
    two, _ = _build(tmp_path, "two", 2)
    merged, _ = _build(tmp_path, "merged", 2, sort_memory_bytes=64 * 1024)  # sorted runs merged from disk
    assert _bytes(one) == _bytes(two) == _bytes(merged)
    stats = summary.stats
    assert stats["documents"] == 1283 and stats["instances"] > 3000
    assert stats["instances"] == sum(1 for path in one for _ in tf.data.TFRecordDataset(path))
    assert abs(stats["masked"] / stats["tokens"] - 0.15) < 0.01  # max_predictions 20 ≥ 0.15 · 128: no cap
    masked = stats["masked"]
    assert abs(stats["masked_as_mask"] / masked - 0.8) < 0.02
    assert abs(stats["masked_kept"] / masked - 0.1) < 0.02
    assert abs(stats["label_1"] / stats["instances"] - 0.5) < 0.03
    assert "masked: 15.0% of tokens" in str(summary) or "masked: 14.9% of tokens" in str(summary)
    assert not [name for name in os.listdir(tmp_path) if ".tmp-" in name]


def test_a_gz_corpus_builds_the_bytes_of_its_plain_text(tmp_path):
    plain = tmp_path / "corpus.txt"
    plain.write_bytes(SAMPLE_CORPUS.read_bytes())  # 1.5 MB: 6 blocks
    with gzip.open(tmp_path / "corpus.txt.gz", "wb") as handle:
        handle.write(plain.read_bytes())
    from_plain, _ = _build(tmp_path, "plain", 1, inputs=[str(plain)])
    from_gz, summary = _build(tmp_path, "gz", 1, inputs=[str(tmp_path / "corpus.txt.gz")])
    assert _bytes(from_gz) == _bytes(from_plain) and summary.stats["instances"] > 3000


def test_manifest_holds_settings_inputs_shard_counts_and_statistics(tmp_path):
    text = _small_corpus(tmp_path)
    outputs, summary = _build(tmp_path, "m", 1, inputs=[str(text)], shards=4)
    path = tmp_path / "m.tfrecord.manifest.json"
    content = json.loads(path.read_text())
    assert content["scheme_version"] == SCHEME_VERSION == 2
    # The tokenizer: relative to the manifest's folder, and identified by the SHA-256 of its bytes.
    tokenizer = {
        "spm_model_file": os.path.relpath(SAMPLE_SPM, tmp_path),
        "spm_model_sha256": hashlib.sha256(SAMPLE_SPM.read_bytes()).hexdigest(),
    }
    expected = {**json.loads(json.dumps(SETTINGS.to_dict())), "block_bytes": 262144, **tokenizer}
    assert content["settings"] == expected
    assert content["settings"]["options"]["max_seq_length"] == 128 and content["settings"]["dupe_factor"] == 1
    assert content["inputs"] == [{"path": str(text), "bytes": text.stat().st_size}]
    counted = [sum(1 for _ in tf.data.TFRecordDataset(output)) for output in outputs]
    assert content["shards"] == [
        {"file": f"m.tfrecord-0000{i}-of-00004", "records": counted[i], "bytes": os.path.getsize(outputs[i])}
        for i in range(4)
    ]
    assert (
        min(counted) > 0 and sum(counted) == content["statistics"]["instances"] == summary.stats["instances"]
    )
    assert content["statistics"]["documents"] == summary.stats["documents"] > 10
    assert Manifest.load(str(path)) == summary.manifest and str(path) in str(summary)


def _passages(paths, seq, predictions):
    """For each record in order: its first 12 tokens after [CLS], unmasked (a passage's copies share them)."""
    spec = parse_spec(seq, predictions)
    keys = []
    for record in tf.data.TFRecordDataset(paths):
        example = {k: v.numpy() for k, v in tf.io.parse_single_example(record, spec).items()}
        ids = example["input_ids"].copy()
        count = int(example["masked_lm_weights"].sum())
        ids[example["masked_lm_positions"][:count]] = example["masked_lm_ids"][:count]
        keys.append(ids[1:13].tobytes())
    return keys


def _median_spread(keys):
    """Median over passages with several copies of (last position - first position) / records."""
    positions = {}
    for position, key in enumerate(keys):
        positions.setdefault(key, []).append(position)
    spreads = [(p[-1] - p[0]) / len(keys) for p in positions.values() if len(p) > 1]
    assert len(spreads) > 100
    return statistics.median(spreads)


@pytest.mark.slow
def test_copies_of_a_passage_spread_like_a_random_permutation(tmp_path):
    """The output is a global shuffle: on a corpus of many work units (16 files), the copies of a passage
    (dupe_factor 4) lie as far apart as under a random permutation of the same records."""
    documents = SAMPLE_CORPUS.read_text(encoding="utf-8").split("\n\n")[:640]
    inputs = []
    for part in range(16):
        path = tmp_path / f"part-{part:02d}.txt"
        path.write_text("\n\n".join(documents[part::16]) + "\n")
        inputs.append(str(path))
    settings = BuildSettings(
        spm_model_file=str(SAMPLE_SPM),
        options=InstanceOptions(max_seq_length=64, max_predictions_per_seq=10),
        dupe_factor=4,
    )
    outputs, _ = _build(tmp_path, "spread", 1, inputs=inputs, shards=3, settings=settings)
    keys = _passages(outputs, 64, 10)
    ours = _median_spread(keys)
    permuted = _median_spread([keys[i] for i in np.random.default_rng(0).permutation(len(keys))])
    assert ours >= 0.8 * permuted, (ours, permuted)


def test_records_parse_with_the_original_feature_spec(tmp_path):
    text = _small_corpus(tmp_path)
    outputs, _ = _build(tmp_path, "gz", 1, inputs=[str(text)], settings=BuildSettings(
        spm_model_file=str(SAMPLE_SPM), options=SETTINGS.options, dupe_factor=1, gzip=True))  # fmt: skip
    spec = parse_spec(128, 20)
    dataset = tf.data.TFRecordDataset(outputs, compression_type="GZIP").map(
        lambda r: tf.io.parse_single_example(r, spec)
    )
    for example in dataset.take(50):
        length = int(tf.reduce_sum(example["input_mask"]))
        ids = example["input_ids"].numpy()
        assert ids[0] == 2 and ids[length - 1] == 3 and not ids[length:].any()
        assert int(example["next_sentence_labels"][0]) in (0, 1)


def test_empty_corpus_short_documents_and_a_file_in_the_way_are_clear_errors_and_leave_no_folder(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(BuildError, match=r"empty corpus: .*empty\.txt hold no text"):
        _build(tmp_path, "e", 1, inputs=[str(empty)])
    short = tmp_path / "short.txt"
    short.write_text("a\n\nb\n")
    with pytest.raises(BuildError, match=r"no instances: all 2 documents .* too short"):
        _build(tmp_path, "s", 2, inputs=[str(short)])
    with pytest.raises(BuildError, match=r"no instances"):  # its folders are made, then removed again
        build([str(short)], [str(tmp_path / "nowhere" / "deeper" / "x")], SETTINGS)
    (tmp_path / "file").write_text("")
    with pytest.raises(FolderError, match=r"--output_file: .*file, the folder of .*file/x, is a file"):
        build([str(short)], [str(tmp_path / "file" / "x")], SETTINGS)
    elsewhere = f"{tmp_path}/file/m/x.json"
    with pytest.raises(FolderError, match=r"--manifest_file: cannot make the folder .*file/m for"):
        build([str(short)], [str(tmp_path / "new" / "x")], SETTINGS, manifest_file=elsewhere)
    with pytest.raises(BuildError, match="--dupe_factor must be at least 1, got 0"):
        BuildSettings(spm_model_file=str(SAMPLE_SPM), dupe_factor=0)
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "file", "short.txt"]


def test_missing_folders_of_the_shards_and_the_manifest_are_made(tmp_path):
    text = _small_corpus(tmp_path)
    outputs = output_paths(f"{tmp_path}/records/train@2")
    manifest = tmp_path / "manifests" / "of" / "train.json"
    build([str(text)], outputs, SETTINGS, manifest_file=str(manifest))
    assert sorted(os.listdir(tmp_path / "records")) == ["train-00000-of-00002", "train-00001-of-00002"]
    shards = [os.path.normpath(path) for path in Manifest.load(str(manifest)).shard_paths()]
    assert shards == outputs and all(os.path.getsize(path) for path in shards)


def test_a_rebuild_into_fewer_shards_removes_the_earlier_builds_other_shards(tmp_path, monkeypatch):
    """Building records/train@2 where records/train@3 was built replaces that build: its shards that the new
    one does not write are removed once the new manifest is written, so a glob of the prefix reads one build
    (paths spelled relative or absolute alike). Files the earlier manifest does not list, and shards of
    another prefix that a manifest given with --manifest_file lists, stay."""
    text, records = _small_corpus(tmp_path), tmp_path / "records"
    build([str(text)], output_paths(f"{records}/train@3"), SETTINGS)
    (records / "notes.txt").write_text("mine")
    (records / "train-00007-of-00009").write_bytes(b"not of the build")
    monkeypatch.chdir(tmp_path)
    summary = build([str(text)], output_paths("records/train@2"), SETTINGS)
    assert sorted(os.listdir(records)) == [
        "notes.txt", "train-00000-of-00002", "train-00001-of-00002", "train-00007-of-00009",
        "train.manifest.json",
    ]  # fmt: skip
    assert "removed its 3 shard(s) that this one does not write (train-00000-of-00003, ...)" in str(summary)
    again = build([str(text)], output_paths(f"{records}/train@2"), SETTINGS)
    assert again.removed == [] and "earlier build" not in str(again)
    (records / "train-00007-of-00009").unlink()
    assert len(find_manifest(f"{records}/train-*", "--input_file").shards) == 2
    manifest = records / "train.manifest.json"
    build([str(text)], output_paths("records/train@1"), SETTINGS, manifest_file=str(manifest))
    build([str(text)], output_paths("records/eval@1"), SETTINGS, manifest_file="records/train.manifest.json")
    # Relative shards, an absolute manifest: the earlier build's shards are still found; eval's leave train's.
    assert sorted(os.listdir(records)) == [
        "eval-00000-of-00001", "notes.txt", "train-00000-of-00001", "train.manifest.json"
    ]  # fmt: skip


def _tiny_corpus(tmp_path, lines):
    """The sample corpus's first `lines` lines: a few instances, fewer than some shard counts need."""
    text = tmp_path / f"tiny-{lines}.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:lines]) + "\n")
    return text


TINY = ["--max_seq_length=32", "--max_predictions_per_seq=5", "--dupe_factor=1", "--num_workers=1"]
TINY_SETTINGS = BuildSettings(
    spm_model_file=str(SAMPLE_SPM), options=InstanceOptions(max_seq_length=32, max_predictions_per_seq=5),
    dupe_factor=1,
)  # fmt: skip


def test_a_corpus_too_small_for_its_shard_count_is_refused_before_anything_is_published(tmp_path):
    """14 lines make 8 instances: as train@8, shards 2 and 7 would hold none, and training refuses a build
    with an empty shard (a lane of that shard alone gives nothing). The command stops before it writes or
    replaces a file, naming the largest shard count the instances fill, which builds with no empty shard."""
    _tiny_corpus(tmp_path, 14).rename(tmp_path / "corpus.txt")

    def create(output):
        command = [sys.executable, "-m", "albert_tf.create_pretraining_data", "--input_file=corpus.txt",
                   f"--output_file={output}", f"--spm_model_file={SAMPLE_SPM}", *TINY]  # fmt: skip
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)

    built = create("records/train@6")
    assert built.returncode == 0, built.stderr
    records = tmp_path / "records"
    counts = [shard["records"] for shard in Manifest.load(str(records / "train.manifest.json")).shards]
    assert len(counts) == 6 and min(counts) > 0 and sum(counts) == 8
    before = {path.name: path.read_bytes() for path in records.iterdir()}
    for shards, empty in ((8, "[2, 7] of 8"), (7, "[2] of 7")):
        refused = create(f"records/train@{shards}")
        assert refused.returncode != 0
        assert f"error: --output_file: the corpus made 8 instances, too few for {shards} shards" in (
            refused.stderr
        )
        assert f"(shards {empty})" in refused.stderr
        assert "use --output_file=records/train@6 " in refused.stderr, refused.stderr
        # No shard, temporary or manifest written, and the earlier build as it was.
        assert {path.name: path.read_bytes() for path in records.iterdir()} == before
    assert create("fresh/train@8").returncode != 0 and not (tmp_path / "fresh").exists()


def test_the_shard_count_a_refusal_names_is_the_largest_that_fills_every_shard(tmp_path):
    """30 lines make 16 instances. Every count from 11 to 16 leaves a shard empty and names 10; 10 fills every
    shard."""
    text = str(_tiny_corpus(tmp_path, 30))
    for shards in range(16, 10, -1):
        with pytest.raises(BuildError, match=r"made 16 instances, .* use --output_file=.*/t@10 "):
            build([text], output_paths(f"{tmp_path}/t@{shards}"), TINY_SETTINGS)
    summary = build([text], output_paths(f"{tmp_path}/t@10"), TINY_SETTINGS)
    assert min(shard["records"] for shard in summary.manifest.shards) > 0
    shards = [os.path.basename(path) for path in summary.manifest.shard_paths()]
    assert sorted(os.listdir(tmp_path)) == sorted([*shards, "t.manifest.json", "tiny-30.txt"])  # no other
    # Files named one by one: how many to name.
    with pytest.raises(BuildError, match=r"made 1 instances, too few for 3 shards: .* use 1 file\(s\) in"):
        build([str(_tiny_corpus(tmp_path, 2))], [str(tmp_path / name) for name in "abc"], TINY_SETTINGS)


def test_a_missing_or_folder_or_unusable_model_is_named_by_its_flag_before_any_work(tmp_path):
    text = str(_tiny_corpus(tmp_path, 14))
    (tmp_path / "not.model").write_bytes(b"not a model")
    for model, error in (("nope.model", "no such file"), ("", "a folder, not a SentencePiece model"),
                         ("not.model", "not a readable SentencePiece model")):  # fmt: skip
        settings = dataclasses.replace(TINY_SETTINGS, spm_model_file=str(tmp_path / model))
        with pytest.raises(BuildError, match=rf"^--spm_model_file={tmp_path}/?{model}: .*{error}"):
            build([text], [str(tmp_path / "out" / "x")], settings)
    assert sorted(os.listdir(tmp_path)) == ["not.model", "tiny-14.txt"]


def test_a_worker_refuses_a_model_replaced_after_the_build_pinned_its_hash(tmp_path):
    """A worker process (here: this one, once its tokenizer is another build's) reads the model again and
    tokenizes only with bytes of the hash the build started with, which the manifest records."""
    model = tmp_path / "spm.model"
    model.write_bytes(SAMPLE_SPM.read_bytes())
    pinned = units.pin_model(dataclasses.replace(TINY_SETTINGS, spm_model_file=str(model)), LocalFiles)
    assert pinned.spm_model_sha256 == hashlib.sha256(SAMPLE_SPM.read_bytes()).hexdigest()
    model.write_bytes(pathlib.Path(small_spm(tmp_path)).read_bytes())
    other = dataclasses.replace(TINY_SETTINGS, do_lower_case=False)
    units.pin_model(other, LocalFiles)  # another build in this process: its tokenizer replaces ours
    began = pinned.spm_model_sha256
    with pytest.raises(BuildError, match=rf"spm\.model changed during the build: SHA-256 \w+, {began} when"):
        units.tokenizer_and_maker(pinned, LocalFiles)


def test_failure_midway_leaves_no_output_and_keeps_old_files(tmp_path):
    good = _small_corpus(tmp_path, lines=3000).read_bytes()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(good + b"\n\nA fine sentence here.\nbroken \xff line\n")  # in the file's last block
    line = good.count(b"\n") + 4
    old = tmp_path / "out.tfrecord-00000-of-00003"
    old.write_bytes(b"previous run")
    (tmp_path / "small.txt").unlink()
    with pytest.raises(corpus.CorpusError, match=rf"bad\.txt:{line}: invalid UTF-8"):
        _build(tmp_path, "out", 2, inputs=[str(bad)])
    assert old.read_bytes() == b"previous run"
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "out.tfrecord-00000-of-00003"]
    replace = BuildSettings(
        spm_model_file=str(SAMPLE_SPM), options=SETTINGS.options, dupe_factor=1, errors="replace"
    )
    _, summary = _build(tmp_path, "out", 1, inputs=[str(bad)], settings=replace)
    assert summary.stats["replaced_lines"] == 1 and old.read_bytes() != b"previous run"


def _peak_rss_mb(corpus_path, tmp_path):
    """(main process, largest worker) peak RSS in MB of a 2-worker build in a fresh process: one shard,
    sorted in runs of 2 MB (on either corpus the shard is larger than that: 3 and 30 MB).

    The main's peak is VmHWM: ru_maxrss would carry this pytest process's peak over fork and exec.
    """
    script = (
        "import resource, sys\n"
        "from albert_tf.pretraining.data.local import build\n"
        "from albert_tf.pretraining.data.units import BuildSettings\n"
        "from albert_tf.pretraining.data.instances import InstanceOptions\n"
        "if __name__ == '__main__':\n"
        f"    outputs = [{str(tmp_path)!r} + '/mem']\n"
        f"    build([{str(corpus_path)!r}], outputs, BuildSettings("
        f"spm_model_file={str(SAMPLE_SPM)!r}, options=InstanceOptions(max_seq_length=128), dupe_factor=1), "
        "num_workers=2, sort_memory_bytes=2 << 20)\n"
        "    status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
        "    print(int(status) / 1024, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return tuple(float(x) for x in out.split())


@pytest.mark.slow
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
def test_peak_memory_barely_grows_with_a_ten_times_larger_corpus(tmp_path, compressed):
    """A .gz file is one task (gzip cannot seek) but streams block by block like a plain file."""
    text = SAMPLE_CORPUS.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    opener = gzip.open if compressed else open
    small, big = (tmp_path / f"{name}.txt{'.gz' if compressed else ''}" for name in ("small", "big"))
    for path, copies in ((small, 1), (big, 10)):
        with opener(path, "wt", encoding="utf-8") as file:
            for _ in range(copies):
                file.write(text)
    small_main, small_worker = _peak_rss_mb(small, tmp_path)
    big_main, big_worker = _peak_rss_mb(big, tmp_path)
    assert big_main < small_main * 1.25, (small_main, big_main)
    assert big_worker < small_worker * 1.25, (small_worker, big_worker)
    assert max(big_main, big_worker) < 200  # The target is 1 GB; it takes well under 100 MB.


@pytest.mark.slow
def test_command_line_train_tokenizer_then_create_pretraining_data_local_and_beam_into_new_folders(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True)

    tokenizer = run(
        "albert_tf.train_tokenizer",
        f"--input={SAMPLE_CORPUS}",
        f"--model_prefix={tmp_path}/spm/albert",  # spm/ is made
        "--vocab_size=2000",
        "--num_threads=2",
    )
    assert tokenizer.returncode == 0, tokenizer.stderr
    spm = tmp_path / "spm"
    assert (spm / "albert.model").exists() and (spm / "albert.vocab").read_text().startswith("<pad>\t")
    for runner in ("local", "beam"):
        created = run(
            "albert_tf.create_pretraining_data",
            f"--input_file={SAMPLE_CORPUS}",
            f"--output_file={tmp_path}/{runner}/r.tfrecord@2",  # local/ and beam/ are made
            f"--spm_model_file={spm}/albert.model",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--dupe_factor=1",
            "--num_workers=2",
            f"--runner={runner}",
        )
        assert created.returncode == 0, created.stderr
        assert "instances" in created.stdout and "sentence order" in created.stdout
        # Beam's local workers: no attempt at Prism (a binary download), and no INFO lines of theirs.
        assert "Prism" not in created.stderr and "sdk harness starting" not in created.stderr, created.stderr
    names = ["r.tfrecord-00000-of-00002", "r.tfrecord-00001-of-00002", "r.tfrecord.manifest.json"]
    assert sorted(os.listdir(tmp_path / "beam")) == sorted(os.listdir(tmp_path / "local")) == names
    assert _bytes([tmp_path / "local" / n for n in names]) == _bytes([tmp_path / "beam" / n for n in names])
    missing = run(
        "albert_tf.create_pretraining_data",
        f"--input_file={tmp_path}/nothing/*.txt",
        f"--output_file={tmp_path}/c.tfrecord",
        f"--spm_model_file={spm}/albert.model",
    )
    assert missing.returncode != 0
    assert (
        "create_pretraining_data: error: --input_file: " in missing.stderr
        and "matches no file" in missing.stderr
    )
