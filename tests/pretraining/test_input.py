"""A pretraining run's input: records with a manifest are read in the build's order, the same global batches
for any replica or worker count, and a resumed run opens the shard it starts in and no other."""

import dataclasses
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.local import build
from albert_tf.pretraining.data.manifest import output_paths
from albert_tf.pretraining.data.units import BuildSettings
from albert_tf.pretraining.input import PretrainingInput, find_manifest
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
    """Records of 600 lines of the sample corpus, built by create_pretraining_data's builder into 4 shards."""
    folder = tmp_path_factory.mktemp("built")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:600]) + "\n")
    options = InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
    build([str(corpus)], output_paths(f"{folder}/train.tfrecord@4"),
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


def manifest_order(folder):
    """Every record's input_ids, in the manifest's order."""
    manifest = json.loads((folder / "train.tfrecord.manifest.json").read_text())
    rows = []
    for shard in manifest["shards"]:
        for record in tf.data.TFRecordDataset(str(folder / shard["file"])):
            example = tf.train.Example.FromString(record.numpy())
            rows.append(list(example.features.feature["input_ids"].int64_list.value))
    return np.array(rows), [shard["records"] for shard in manifest["shards"]]


def global_batches(inputs, pipelines, start_batch, count):
    """input_ids of global batches start_batch .. start_batch + count - 1, the pipelines' parts joined."""
    parts = []
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, num_replicas_in_sync=pipelines)
        dataset = inputs.train_dataset(context, start_batch).take(count)
        parts.append([batch["input_word_ids"].numpy() for batch in dataset])
    return [np.concatenate([part[step] for part in parts]) for step in range(count)]


@pytest.mark.parametrize("pipelines", [1, 2])
def test_global_batches_are_the_manifests_order_for_any_pipeline_count(built, tmp_path, pipelines):
    order, _ = manifest_order(built)
    inputs = PretrainingInput(settings(built, tmp_path), 8000, log=None)
    assert inputs.train_manifest is not None
    batches = len(order) // BATCH
    for step, batch in enumerate(global_batches(inputs, pipelines, 0, batches + 2)):
        first = step * BATCH % len(order)  # past the end: the order again, from its first record
        expected = np.concatenate([order, order])[first : first + BATCH]
        np.testing.assert_array_equal(batch, expected, err_msg=f"step {step}")


def test_a_resumed_run_opens_only_the_shard_it_starts_in(built, tmp_path):
    order, counts = manifest_order(built)
    start_batch = (counts[0] + counts[1]) // BATCH + 1  # a batch that starts inside the third shard
    expected = global_batches(PretrainingInput(settings(built, tmp_path), 8000, None), 1,
                              start_batch, 3)  # fmt: skip
    copy = tmp_path / "copy"
    shutil.copytree(built, copy)
    manifest = json.loads((copy / "train.tfrecord.manifest.json").read_text())
    inputs = PretrainingInput(settings(copy, tmp_path), 8000, None)
    for shard in manifest["shards"][:2]:
        os.remove(copy / shard["file"])  # opening one of these would fail
    for got, want in zip(global_batches(inputs, 1, start_batch, 3), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert "resumes at record" in inputs.resume_cost(start_batch)


def test_globs_of_a_builds_shards_find_its_manifest(built, tmp_path):
    whole = find_manifest(str(built / "train.tfrecord-*-of-00004"), "--input_file")
    assert whole is not None and len(whole.shards) == 4
    assert find_manifest(str(built / "train.tfrecord-0000[01]-of-00004"), "--input_file") is None
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
    run_module(flags_of(base))
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
