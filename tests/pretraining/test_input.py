"""A pretraining run's input: records with a manifest are read in lanes of shards: each input pipeline reads
only its own shards, each epoch in its own order, the same global batches for any replica or worker count,
and a resumed run continues exactly, opening in each lane the shard it stands in and no other."""

import dataclasses
import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.local import build
from albert_tf.pretraining.data.manifest import output_paths
from albert_tf.pretraining.data.units import BuildSettings
from albert_tf.pretraining.dataset import load_manifest
from albert_tf.pretraining.input import PretrainingInput, find_manifest
from albert_tf.pretraining.lanes import BLOCK, Lanes
from albert_tf.pretraining.run import run
from albert_tf.pretraining.settings import PretrainingSettings
from albert_tf.text.tokenizer import TokenizerError
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, run_on_two_workers, small_spm, tiny_config
from tests.pretraining.test_run import (
    assert_same_weights,
    flags_of,
    run_module,
    weights,
    write_records,
)

SEQ, PREDICTIONS, BATCH = 32, 5, 8


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Records of 600 lines of the sample corpus, built by create_pretraining_data's builder into 12 shards
    (about 670 records: at BATCH 8, 4 lanes of 3 shards, about 170 records each, 2 records per step)."""
    folder = tmp_path_factory.mktemp("built")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:600]) + "\n")
    options = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
    build([str(corpus)], output_paths(f"{folder}/train.tfrecord@12"),
          BuildSettings(spm_model_file=str(SAMPLE_SPM), options=options, dupe_factor=2))  # fmt: skip
    tiny_config(vocab_size=8000, max_position_embeddings=SEQ).to_json_file(folder / "albert_config.json")
    return folder


def settings(folder, output_dir, **changes):
    values = dict(
        albert_config_file=str(folder / "albert_config.json"),
        input_file=str(folder / "train.tfrecord.manifest.json"),
        output_dir=str(output_dir), max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
        train_batch_size=BATCH, eval_batch_size=4, learning_rate=0.01, optimizer="adamw", num_train_steps=6,
        num_warmup_steps=2, save_checkpoints_steps=3, steps_per_loop=2, log_every_steps=2,
    )  # fmt: skip
    values.update(changes)
    return PretrainingSettings(**values)


def lane_records(folder, pipelines, pipeline, start_batch, steps, seed=12345):
    """(global index, serialized record) pairs that input pipeline `pipeline` of `pipelines` gives for steps
    start_batch .. start_batch + steps - 1."""
    lanes = Lanes.of(load_manifest(str(folder / "train.tfrecord.manifest.json")), BATCH, seed)
    taken = lanes.dataset(pipelines, pipeline, start_batch).take(steps * BATCH // pipelines)
    return [(int(index), record.numpy()) for index, record in taken]


def shard_records(folder, shards):
    """The serialized records of the build's shards with these indices."""
    manifest = json.loads((folder / "train.tfrecord.manifest.json").read_text())
    paths = [str(folder / manifest["shards"][shard]["file"]) for shard in shards]
    return [record.numpy() for record in tf.data.TFRecordDataset(paths)]


def global_batches(inputs, pipelines, start_batch, count):
    """Parsed global batches start_batch .. start_batch + count - 1 (each a dict of arrays), the pipelines'
    parts joined."""
    parts = []
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, num_replicas_in_sync=pipelines)
        dataset = inputs.train_dataset(context, start_batch).take(count)
        parts.append([{name: value.numpy() for name, value in batch.items()} for batch in dataset])
    return [{name: np.concatenate([part[step][name] for part in parts]) for name in parts[0][step]}
            for step in range(count)]  # fmt: skip


@pytest.mark.parametrize("pipelines", [1, 2, 4])
def test_each_pipeline_reads_only_its_lanes_shards_each_record_once_an_epoch(built, tmp_path, pipelines):
    """Pipeline i of P has 4/P lanes of 3 shards: with every other shard deleted it gives its part of each
    global batch, and over an epoch of its shortest lane it reads steps·BATCH/P records, none twice: P
    pipelines read the corpus once between them."""
    lanes = Lanes.of(load_manifest(str(built / "train.tfrecord.manifest.json")), BATCH, 12345)
    assert (lanes.count, lanes.per_step) == (4, 2)
    read = []
    for pipeline in range(pipelines):
        mine = [shard for lane in lanes.of_pipeline(pipelines, pipeline) for shard in lanes.shards(lane)]
        steps = min(lanes.length(lane) for lane in lanes.of_pipeline(pipelines, pipeline)) // 2
        copy = tmp_path / f"pipeline-{pipeline}"
        shutil.copytree(built, copy)
        for shard in set(range(12)) - set(mine):
            os.remove(copy / f"train.tfrecord-{shard:05d}-of-00012")  # opening one of these would fail
        records = [record for _, record in lane_records(copy, pipelines, pipeline, 0, steps)]
        assert len(records) == steps * BATCH // pipelines == len(set(records))
        assert set(records) <= set(shard_records(built, mine))
        read.append(len(records) / steps)
    assert read == [BATCH / pipelines] * pipelines  # records read per step, per pipeline


@pytest.mark.slow
def test_global_batches_and_masks_are_the_same_for_1_2_and_4_pipelines(built, tmp_path):
    inputs = PretrainingInput(settings(built, tmp_path, online_masking=True), 8000, log=None)
    assert inputs.train_manifest is not None
    steps = 100  # past the end of every lane's first epoch (about 85 steps)
    one = global_batches(inputs, 1, 0, steps)
    for pipelines in (2, 4):
        for step, (got, want) in enumerate(
            zip(global_batches(inputs, pipelines, 0, steps), one, strict=True)
        ):
            for name in want:
                np.testing.assert_array_equal(
                    got[name], want[name], err_msg=f"{pipelines}: step {step} {name}"
                )


def test_each_epoch_has_its_own_order_drawn_from_the_seed(built):
    """A lane's epochs are the same records in other orders (its shards and the records in its blocks), the
    same for the same seed; the global index numbers the records of every step in order."""
    lanes = Lanes.of(load_manifest(str(built / "train.tfrecord.manifest.json")), BATCH, 12345)
    length = lanes.length(0)
    steps = 2 * length // lanes.per_step + 1
    pairs = lane_records(built, 4, 0, 0, steps)  # lane 0 alone
    assert [index for index, _ in pairs[:6]] == [0, 1, 8, 9, 16, 17]  # records 0, 1 of each step of 8
    stream = [record for _, record in pairs]
    first, second = stream[:length], stream[length : 2 * length]
    assert sorted(first) == sorted(second) == sorted(shard_records(built, lanes.shards(0)))
    assert first != second
    # Orders come from the seed: a resumed or repeated run has them, another seed has others.
    assert [record for _, record in lane_records(built, 4, 0, 0, steps)] == stream
    assert [record for _, record in lane_records(built, 4, 0, 0, steps, seed=7)] != stream
    orders = {lanes.start(0, epoch * length).order for epoch in range(1, 12)}
    assert len(orders) > 1  # the shards' order changes between epochs too (3! = 6 orders)


@pytest.mark.parametrize("pipelines", [1, 2])
def test_a_resumed_pipeline_continues_where_it_stopped_for_any_start(built, pipelines):
    lanes = Lanes.of(load_manifest(str(built / "train.tfrecord.manifest.json")), BATCH, 12345)
    steps = 150
    whole = lane_records(built, pipelines, 0, 0, steps)
    per_step = BATCH // pipelines
    # Inside a block, at a block's start (128 records of a lane = 64 steps), past a lane's first epoch.
    for start in (1, 37, 64, 65, 86, 120):
        assert lanes.start(0, start).in_block == start * 2 % 128 or start * 2 >= lanes.length(0)
        got = lane_records(built, pipelines, 0, start, 10)
        assert got == whole[start * per_step : (start + 10) * per_step], start


def test_a_resumed_run_opens_only_the_shards_it_stands_in(built, tmp_path):
    """Resumed where every lane stands in the last shard of its epoch's order, the run never opens the other
    shards (it reads, unparsed, the records of its current shards before its block: resume_cost says how
    many)."""
    lanes = Lanes.of(load_manifest(str(built / "train.tfrecord.manifest.json")), BATCH, 12345)
    start = min(lanes.length(lane) for lane in range(4)) // 2 - 3  # a few steps before an epoch ends
    starts = [lanes.start(lane, start) for lane in range(4)]
    assert all(at.shard == 2 and at.epoch == 0 for at in starts)
    expected = global_batches(PretrainingInput(settings(built, tmp_path), 8000, None), 1, start, 3)
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    inputs = PretrainingInput(settings(copy, tmp_path), 8000, None)  # checks every shard: before deleting
    for lane, at in enumerate(starts):
        for index in at.order[:2]:
            os.remove(copy / f"train.tfrecord-{lanes.shards(lane)[index]:05d}-of-00012")
    for got, want in zip(global_batches(inputs, 1, start, 3), expected, strict=True):
        np.testing.assert_array_equal(got["input_word_ids"], want["input_word_ids"])
    passed = sum(at.record for at in starts)
    assert f"{passed:,} records are passed over, unparsed" in inputs.resume_cost(start)


def test_lanes_that_cannot_be_shared_or_hold_nothing_are_refused(built):
    manifest = load_manifest(str(built / "train.tfrecord.manifest.json"))
    with pytest.raises(ValueError, match=r"8 input pipelines cannot share the 4 lane\(s\) of .*manifest"
                       r"\.json \(12 shards\) at global batch 8.*--output_file=PREFIX@8"):  # fmt: skip
        Lanes.of(manifest, BATCH, 1).of_pipeline(8, 0)
    assert Lanes.of(manifest, 6, 1).count == 6 and Lanes.of(manifest, 7, 1).count == 1
    empty = dataclasses.replace(manifest, shards=manifest.shards + [{"file": "x", "records": 0}] * 12)
    assert Lanes.of(empty, 8, 1).count == 8  # lane 4: shards 4, 12 and 20, the first holding records
    with pytest.raises(ValueError, match=r"shards \[12\] \(lane 12 of 24\) hold no records"):
        Lanes.of(empty, 24, 1)


def test_globs_of_a_builds_shards_find_its_manifest(built, tmp_path):
    whole = find_manifest(str(built / "train.tfrecord-*-of-00012"), "--input_file")
    assert whole is not None and len(whole.shards) == 12
    assert find_manifest(str(built / "train.tfrecord-0000[01]-of-00012"), "--input_file") is None
    with pytest.raises(ValueError, match=r"--input_file: .*nope\.manifest\.json does not exist"):
        find_manifest(str(tmp_path / "nope.manifest.json"), "--input_file")
    other = settings(built, tmp_path, max_seq_length=16)
    with pytest.raises(ValueError, match=r"built with max_seq_length 32, but --max_seq_length=16"):
        PretrainingInput(other, 8000, None)


def test_records_of_another_tokenizer_or_too_large_a_one_are_refused(built, tmp_path):
    """The manifest names the SentencePiece model the records hold ids of: another --spm_model_file, or a
    model whose vocabulary is smaller than it, is refused naming both files and sizes; a copy is the same."""
    other = small_spm(tmp_path)
    refused = (
        r"--input_file: .*train\.tfrecord\.manifest\.json was built with .*spm_8k\.model "
        r"\(8,000 pieces\), not with --spm_model_file=.*small_spm\.model \(90 pieces\)"
    )
    with pytest.raises(TokenizerError, match=refused):
        PretrainingInput(settings(built, tmp_path, spm_model_file=other), 8000, None)
    with pytest.raises(TokenizerError, match=r"spm_8k\.model has 8,000 pieces but .* has vocab_size 97"):
        PretrainingInput(settings(built, tmp_path), 97, None)
    copy = shutil.copy(SAMPLE_SPM, tmp_path / "copy.model")
    assert PretrainingInput(settings(built, tmp_path, spm_model_file=str(copy)), 8000, None).train_manifest


def test_a_wrong_tokenizer_is_refused_from_any_working_directory(tmp_path, monkeypatch):
    """Records built with a relative --spm_model_file: their manifest names the model relative to itself and
    by its SHA-256, so another model is refused from any folder, even once the build's own file is gone."""
    work = tmp_path / "build"
    (work / "spm").mkdir(parents=True)
    shutil.copy(SAMPLE_SPM, work / "spm" / "albert.model")
    (work / "corpus.txt").write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:300]))
    tiny_config(vocab_size=8000, max_position_embeddings=SEQ).to_json_file(work / "albert_config.json")
    monkeypatch.chdir(work)  # the build names its tokenizer as a user types it, from here
    options = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
    build(["corpus.txt"], output_paths("records/train@2"),
          BuildSettings(spm_model_file="spm/albert.model", options=options, dupe_factor=1))  # fmt: skip
    manifest = load_manifest(str(work / "records" / "train.manifest.json"))
    assert manifest.settings["spm_model_file"] == os.path.join("..", "spm", "albert.model")
    monkeypatch.chdir(tmp_path)  # another folder: the manifest's relative name resolves from its own place
    other = small_spm(tmp_path)
    run = dict(input_file=str(work / "records" / "train.manifest.json"), spm_model_file=other)
    with pytest.raises(TokenizerError, match=r"built with .*spm/albert\.model \(8,000 pieces\), not with "
                       r"--spm_model_file=.*small_spm\.model \(90 pieces\)"):  # fmt: skip
        PretrainingInput(settings(work, tmp_path / "run", **run), 8000, None)
    (work / "spm" / "albert.model").unlink()  # gone: its SHA-256 still tells it from another model
    with pytest.raises(TokenizerError, match=r"spm/albert\.model \(SHA-256 [0-9a-f]{12}\.\.\., not found"):
        PretrainingInput(settings(work, tmp_path / "run", **run), 8000, None)
    shutil.copy(other, work / "spm" / "albert.model")  # a tokenizer trained again at the build's path
    replaced = dict(run, spm_model_file=str(work / "spm" / "albert.model"))
    with pytest.raises(
        TokenizerError, match=r"albert\.model as it was then \(SHA-256 \w{12}\.\.\.; it has been"
    ):
        PretrainingInput(settings(work, tmp_path / "run", **replaced), 8000, None)
    copy = dict(run, spm_model_file=str(shutil.copy(SAMPLE_SPM, tmp_path / "copy.model")))
    assert PretrainingInput(settings(work, tmp_path / "run", **copy), 8000, None).train_manifest


def test_empty_shards_of_a_small_build_are_read_and_a_lane_without_records_is_named(tmp_path):
    """Shards without records (valid empty files the manifest counts as 0 records, which builds of other
    tools may hold; ours refuses to make them): training and evaluation read around them; only a lane all of
    whose shards are empty is refused, naming its shards and what to rebuild with."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:14]) + "\n")
    options = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
    build([str(corpus)], output_paths(f"{tmp_path}/train@6"),
          BuildSettings(spm_model_file=str(SAMPLE_SPM), options=options, dupe_factor=1))  # fmt: skip
    built = load_manifest(str(tmp_path / "train.manifest.json"))
    shards = list(built.shards)
    for index, name in ((2, "empty-a"), (7, "empty-b")):
        (tmp_path / name).write_bytes(b"")
        shards.insert(index, {**shards[0], "file": name, "records": 0, "bytes": 0})
    manifest = str(tmp_path / "with_empty.manifest.json")
    dataclasses.replace(built, shards=shards, path=manifest).write()
    counts = [shard["records"] for shard in load_manifest(manifest).shards]
    assert len(counts) == 8 and counts[2] == counts[7] == 0 and sum(counts) == 8 and all(counts[:2])
    tiny_config(vocab_size=8000, max_position_embeddings=SEQ).to_json_file(tmp_path / "albert_config.json")
    # Batch 4: lanes of shards (0, 4), (1, 5), (2, 6), (3, 7), each with records.
    run = settings(tmp_path, tmp_path / "run", input_file=manifest, eval_input_file=manifest,
                   train_batch_size=4, eval_batch_size=3)  # fmt: skip
    inputs = PretrainingInput(run, 8000, None)
    held_out = inputs.eval_dataset(tf.distribute.InputContext())
    assert sum(int(batch["input_word_ids"].shape[0]) for batch in held_out) == 8  # every record once
    first = next(iter(inputs.train_dataset(tf.distribute.InputContext(), 0)))
    assert first["input_word_ids"].shape == (4, SEQ)
    # Batch 8: eight lanes of one shard each; lanes 2 and 7 would have nothing to give.
    with pytest.raises(ValueError, match=r"shards \[2\] \(lane 2 of 8\) hold no records; rebuild the "
                       r"records with fewer shards"):  # fmt: skip
        PretrainingInput(dataclasses.replace(run, train_batch_size=8), 8000, None).train_dataset(
            tf.distribute.InputContext(), 0
        )


def test_records_without_a_manifest_say_what_resuming_costs(tmp_path):
    path = str(tmp_path / "old.tfrecord")
    write_records(path, 20, seed=1)
    other = PretrainingSettings(albert_config_file="unused", input_file=path, output_dir=str(tmp_path),
                                max_seq_length=16, max_predictions_per_seq=3, train_batch_size=4)  # fmt: skip
    inputs = PretrainingInput(other, 97, None)
    assert inputs.train_manifest is None and inputs.resume_cost(0) is None
    assert "reading 4,000 records again (about 0.0" in inputs.resume_cost(1000)


@pytest.mark.slow
def test_two_workers_train_the_one_process_weights_from_a_manifest(built, tmp_path):
    base = settings(built, tmp_path / "one")
    run(base)  # one process: this one
    args = flags_of(
        dataclasses.replace(base, output_dir=str(tmp_path / "two"), strategy="multi_worker_mirrored")
    )
    run_on_two_workers("albert_tf.run_pretraining", [args, args])
    # Same records per step, so the same update up to float32 summation order. Adam divides each gradient by
    # its own root mean square, so a near-cancelling sum (an embedding row hit by few tokens) can carry an
    # order difference of ~1e-3 of one step's update (lr 0.01) into a weight: 3e-6 was seen, in 1 weight of
    # 40,000. Other records per step would move most weights by ~1e-2.
    assert_same_weights(tmp_path / "one", tmp_path / "two", atol=1e-5)
    one, two = weights(tmp_path / "one"), weights(tmp_path / "two")
    close = sum(np.sum(np.abs(one[k] - two[k]) <= 1e-6) for k in one)
    assert close >= 0.999 * sum(v.size for v in one.values())


def test_a_shard_of_another_size_than_its_manifest_says_is_refused_naming_it(built, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    shard = copy / "train.tfrecord-00005-of-00012"
    size = shard.stat().st_size
    shard.write_bytes(shard.read_bytes()[: size // 2])
    refused = (
        rf"--input_file: .*copy/train\.tfrecord-00005-of-00012 holds {size // 2:,} bytes, but "
        rf".*copy/train\.tfrecord\.manifest\.json lists it with {size:,}: the shard was cut short"
    )
    with pytest.raises(ValueError, match=refused):
        PretrainingInput(settings(copy, tmp_path), 8000, None)


def record_end(path, records):
    """The byte offset where the first `records` records of an uncompressed TFRecord file end (each record:
    8-byte length, 4-byte CRC, data, 4-byte CRC)."""
    offset, data = 0, path.read_bytes()
    for _ in range(records):
        offset += 16 + int.from_bytes(data[offset : offset + 8], "little")
    return offset


@pytest.mark.slow
def test_a_truncated_shard_is_refused_or_saves_the_last_step_and_the_rebuilt_run_resumes(built, tmp_path):
    """Cut short, a shard is refused before the first step when the manifest lists its size. When it does
    not (a manifest written before sizes were recorded), the run trains until it reaches the cut, saves the
    last completed step and stops with one line naming the shard and the offset; with the shard rebuilt, it
    resumes and ends with the weights of a run that never failed, past the end of the lanes' first epoch."""
    # Dropout on: the saved step must hold the dropout draws of the steps done, not of the failed one.
    config = tiny_config(vocab_size=8000, max_position_embeddings=SEQ, hidden_dropout_prob=0.1)
    config.to_json_file(tmp_path / "dropout.json")
    whole = settings(
        built, tmp_path / "whole", albert_config_file=str(tmp_path / "dropout.json"), num_train_steps=100,
        save_checkpoints_steps=50, steps_per_loop=10, log_every_steps=50,
    )  # fmt: skip
    run(whole)  # the run that never failed: in this process
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    lanes = Lanes.of(load_manifest(str(copy / "train.tfrecord.manifest.json")), BATCH, 12345)
    order = [lanes.shards(0)[index] for index in lanes.start(0, 0).order]
    counts = [lanes.manifest.shards[shard]["records"] for shard in order]
    kept = BLOCK - counts[0] - counts[1] + 5  # lane 0's first block ends inside its third shard; cut after it
    assert 0 < kept < counts[2]
    shard = copy / f"train.tfrecord-{order[2]:05d}-of-00012"
    shard.write_bytes(shard.read_bytes()[: record_end(shard, kept) + 30])  # into its data
    damaged = flags_of(dataclasses.replace(
        whole, input_file=str(copy / "train.tfrecord.manifest.json"), output_dir=str(tmp_path / "damaged")
    ))  # fmt: skip

    refused = run_module(damaged, check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert re.fullmatch(rf"run_pretraining: error: --input_file: .*{shard.name} holds .* bytes, but .*",
                        refused.stderr.strip().splitlines()[-1])  # fmt: skip
    assert not (tmp_path / "damaged" / "checkpoints").exists()

    manifest = json.loads((copy / "train.tfrecord.manifest.json").read_text())
    del manifest["shards"][order[2]]["bytes"]
    (copy / "train.tfrecord.manifest.json").write_text(json.dumps(manifest))
    failed = run_module(damaged, check=False)
    step = BLOCK // lanes.per_step  # the first step that needs lane 0's second block
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert re.fullmatch(
        rf"run_pretraining: error: the training records fail to read at step {step + 1}: .*/{shard.name}: "
        rf"truncated record at \d+\. Step {step} is saved in .*ckpt-{step}; rebuild the shard .*",
        failed.stderr.strip().splitlines()[-1],
    )
    assert (tmp_path / "damaged" / "checkpoints" / f"ckpt-{step}.index").exists()

    shutil.copyfile(built / shard.name, shard)  # rebuilt: the builder writes the same bytes
    resumed = run_module(damaged)
    assert (
        f"resumed from {tmp_path / 'damaged' / 'checkpoints' / f'ckpt-{step}'} at step {step}"
        in resumed.stderr
    )
    assert_same_weights(tmp_path / "whole", tmp_path / "damaged")


def test_the_records_casing_goes_to_the_model_directory(built, tmp_path):
    """The run writes tokenizer.json from its manifest's do_lower_case and keep_accents: a cased build gives a
    cased model, one that kept its marks a model that keeps them."""
    built_input = PretrainingInput(settings(built, tmp_path), 8000, None)
    assert (built_input.do_lower_case, built_input.keep_accents) == (True, False)
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    manifest = json.loads((copy / "train.tfrecord.manifest.json").read_text())
    manifest["settings"].update(do_lower_case=False, keep_accents=True)
    (copy / "train.tfrecord.manifest.json").write_text(json.dumps(manifest))
    copied = PretrainingInput(settings(copy, tmp_path), 8000, None)
    assert (copied.do_lower_case, copied.keep_accents) == (False, True)
