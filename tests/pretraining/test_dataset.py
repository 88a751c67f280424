import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import features
from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.pretrainer import AlbertPretrainer
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.local import build
from albert_tf.pretraining.data.units import BuildSettings
from albert_tf.pretraining.dataset import (
    OnlineMasking,
    parse_spec,
    pretraining_dataset,
)
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, tiny_config

SEQ, PREDICTIONS = 32, 5


def _build_records(directory, lines, shards, gzip=False):
    """Records of the sample corpus's first lines in shards part-0.tfrecord, ...; their paths."""
    text = directory / "text.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:lines]) + "\n")
    outputs = [str(directory / f"part-{i}.tfrecord") for i in range(shards)]
    settings = BuildSettings(
        spm_model_file=str(SAMPLE_SPM),
        options=InstanceOptions(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS),
        dupe_factor=1,
        gzip=gzip,
    )
    build([str(text)], outputs, settings)
    return outputs


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    return _build_records(tmp_path_factory.mktemp("records"), lines=300, shards=3)


def _raw(paths):
    spec = parse_spec(SEQ, PREDICTIONS)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()}
        for r in tf.data.TFRecordDataset(paths)
    ]


def test_evaluation_pipeline_gives_every_record_once_under_model_names(records):
    raw = _raw(records)
    dataset = pretraining_dataset(
        records,
        batch_size=7,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        is_training=False,
        cycle_length=1,
    )
    batches = list(dataset)
    assert set(batches[0]) == set(features.PRETRAINER_INPUTS + features.PRETRAINER_LABELS)
    assert (
        batches[0]["input_word_ids"].dtype == tf.int32 and batches[0]["masked_lm_weights"].dtype == tf.float32
    )
    got = np.concatenate([b["input_word_ids"].numpy() for b in batches])
    np.testing.assert_array_equal(got, np.stack([r["input_ids"] for r in raw]))
    labels = np.concatenate([b["sentence_order_label"].numpy() for b in batches])
    np.testing.assert_array_equal(labels, [r["next_sentence_labels"][0] for r in raw])


def test_training_pipeline_shuffles_repeats_and_shards(records):
    kwargs = dict(batch_size=4, max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, seed=3)
    first = [b["input_word_ids"].numpy() for b in pretraining_dataset(records, **kwargs).take(60)]
    again = [b["input_word_ids"].numpy() for b in pretraining_dataset(records, **kwargs).take(60)]
    np.testing.assert_array_equal(np.concatenate(first), np.concatenate(again))  # seeded
    total = len(_raw(records))
    assert len(first) * 4 > total  # it repeats
    shards = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline)
        dataset = pretraining_dataset(records, input_context=context, is_training=False, **kwargs)
        shards.append({row.tobytes() for b in dataset for row in b["input_word_ids"].numpy()})
    assert not shards[0] & shards[1]
    assert len(shards[0] | shards[1]) == len(
        {r["input_ids"].astype(np.int32).tobytes() for r in _raw(records)}
    )


def test_reads_records_of_the_original_bert_builder(tmp_path):
    """BERT's builder writes no token_boundary; the reader fills zeros."""
    path = str(tmp_path / "bert.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(3):
            ints = {
                "input_ids": [2, 10 + i, 4, 3] + [0] * (SEQ - 4),
                "input_mask": [1] * 4 + [0] * (SEQ - 4),
                "segment_ids": [0] * SEQ,
                "masked_lm_positions": [2] + [0] * (PREDICTIONS - 1),
                "masked_lm_ids": [77] + [0] * (PREDICTIONS - 1),
                "next_sentence_labels": [i % 2],
            }
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in ints.items()}
            weights = [1.0] + [0.0] * (PREDICTIONS - 1)
            feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=weights))
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    (batch,) = pretraining_dataset(
        path, batch_size=3, max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, is_training=False
    )
    assert batch["input_word_ids"][:, 1].numpy().tolist() == [10, 11, 12]
    assert batch["masked_lm_ids"][:, 0].numpy().tolist() == [77, 77, 77]


def test_online_masking_draws_whole_words_anew_each_epoch(records):
    kwargs = dict(
        batch_size=50,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        is_training=False,
        online_masking=OnlineMasking(vocab_size=8000),
        cycle_length=1,
    )
    raw = _raw(records)
    batch = next(iter(pretraining_dataset(records, **kwargs)))
    weights, positions = batch["masked_lm_weights"].numpy(), batch["masked_lm_positions"].numpy()
    lengths = batch["input_mask"].numpy().sum(1)
    budget = np.minimum(PREDICTIONS, np.maximum(1, np.round(lengths * 0.15)))
    assert (weights.sum(1) <= budget).all() and weights.sum() > 0.8 * budget.sum()
    assert sum((r["input_ids"] == 4).sum() for r in raw[:50]) > 20  # the records hold the builder's [MASK]s
    for row, (w, p) in enumerate(zip(weights, positions, strict=True)):
        chosen = p[w > 0]
        # The record's text: its stored input_ids with the builder's masks undone.
        original = raw[row]["input_ids"].copy()
        stored = raw[row]["masked_lm_weights"] > 0
        original[raw[row]["masked_lm_positions"][stored]] = raw[row]["masked_lm_ids"][stored]
        assert (batch["masked_lm_ids"].numpy()[row][w > 0] == original[chosen]).all()
        assert not np.isin(original[chosen], [2, 3, 4]).any()  # never [CLS], [SEP] or [MASK] as a target
        boundary = raw[row]["token_boundary"]
        for position in chosen:  # whole words: a masked continuation has its predecessor masked too
            if not boundary[position] and original[position - 1] not in (2, 3):
                assert position - 1 in chosen
        untouched = np.setdiff1d(np.arange(SEQ), chosen)
        np.testing.assert_array_equal(batch["input_word_ids"].numpy()[row][untouched], original[untouched])
    again = next(iter(pretraining_dataset(records, **kwargs)))
    np.testing.assert_array_equal(again["masked_lm_positions"], positions)  # same seed, same masks
    # Training repeats the records; the same record gets other masks the next time round (not merely
    # another position in the shuffled order).
    training = pretraining_dataset(records, **{**kwargs, "is_training": True, "batch_size": 4 * len(raw)})
    masks_by_record = {}
    for row in _rows(next(iter(training))):
        masks_by_record.setdefault(row["original"], []).append(row["positions"])
    repeated = [masks for masks in masks_by_record.values() if len(masks) > 1]
    assert len(repeated) > 0.5 * len(raw)
    assert sum(len(set(masks)) > 1 for masks in repeated) > 0.8 * len(repeated)


def _rows(batch):
    """Per example: the unmasked ids (bytes, a record's identity) and its masked positions (tuple)."""
    rows = []
    for ids, positions, labels, weights in zip(
        *(batch[name].numpy() for name in ("input_word_ids", "masked_lm_positions", "masked_lm_ids",
                                           "masked_lm_weights")), strict=True
    ):  # fmt: skip
        chosen = positions[weights > 0]
        original = ids.copy()
        original[chosen] = labels[weights > 0]
        rows.append({"original": original.tobytes(), "positions": tuple(chosen)})
    return rows


def test_reader_feeds_the_pretrainer(records):
    config = tiny_config(vocab_size=8000, max_position_embeddings=SEQ)
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    batch = next(
        iter(
            pretraining_dataset(
                records, batch_size=4, max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS
            )
        )
    )
    outputs = pretrainer({name: batch[name] for name in features.PRETRAINER_INPUTS})
    assert outputs["mlm_logits"].shape == (4, PREDICTIONS, 8000)
    assert outputs["sop_logits"].shape == (4, 2)
    loss = keras.losses.sparse_categorical_crossentropy(
        batch["masked_lm_ids"], outputs["mlm_logits"], from_logits=True
    )
    assert np.isfinite(loss.numpy()).all()


def test_missing_pattern_is_named(records):
    with pytest.raises(ValueError, match=r"file_patterns: '.*nothing-\*' matches no file"):
        pretraining_dataset(
            records[0] + ",/tmp/nothing-*",
            batch_size=1,
            max_seq_length=SEQ,
            max_predictions_per_seq=PREDICTIONS,
        )
