import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining.data.records import TFRecordWriter, serialize_example


def _tf_example(int64_features, float_features):
    feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in int64_features.items()}
    feature.update(
        {k: tf.train.Feature(float_list=tf.train.FloatList(value=v)) for k, v in float_features.items()}
    )
    return tf.train.Example(features=tf.train.Features(feature=feature))


INTS = {"input_ids": [2, 300, 70000, 2**40, 0, 3], "next_sentence_labels": [1], "empty": []}
FLOATS = {"masked_lm_weights": [1.0, 0.5, 0.0]}


def test_bytes_equal_tensorflow_deterministic_serialization():
    expected = _tf_example(INTS, FLOATS).SerializeToString(deterministic=True)
    assert serialize_example(INTS, FLOATS) == expected


def test_long_features_with_multi_byte_lengths_equal_tensorflow():
    rng = np.random.default_rng(7)
    ints = {"ids": rng.integers(0, 30_000, 512).tolist(), "mask": [1] * 300 + [0] * 212}
    floats = {"weights": rng.random(200).astype(np.float32).tolist()}
    for _ in range(2):  # The second time from the cached entry headers.
        expected = _tf_example(ints, floats).SerializeToString(deterministic=True)
        assert serialize_example(ints, floats) == expected


@pytest.mark.parametrize("values", [[3, -1], [300, -1]])
def test_negative_ints_are_refused_with_the_feature_name(values):
    with pytest.raises(ValueError, match="feature 'ids': negative"):
        serialize_example({"ids": values})


def test_tensorflow_parses_it():
    spec = {
        "input_ids": tf.io.FixedLenFeature([6], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([3], tf.float32),
    }
    parsed = tf.io.parse_single_example(serialize_example(INTS, FLOATS), spec)
    assert parsed["input_ids"].numpy().tolist() == INTS["input_ids"]
    np.testing.assert_array_equal(parsed["masked_lm_weights"].numpy(), FLOATS["masked_lm_weights"])


def test_tfrecord_files_equal_tensorflow_writer(tmp_path):
    records = [serialize_example({"x": [i] * i}) for i in range(1, 40)]
    with TFRecordWriter(str(tmp_path / "ours.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    with tf.io.TFRecordWriter(str(tmp_path / "tf.tfrecord")) as writer:
        for record in records:
            writer.write(record)
    assert (tmp_path / "ours.tfrecord").read_bytes() == (tmp_path / "tf.tfrecord").read_bytes()


def test_gzip_files_read_back_with_tensorflow(tmp_path):
    records = [serialize_example({"x": [i, 2 * i]}) for i in range(100)]
    path = str(tmp_path / "ours.tfrecord.gz")
    with TFRecordWriter(path, gzip_compressed=True) as writer:
        for record in records:
            writer.write(record)
    with open(path, "rb") as handle:
        assert handle.read(2) == b"\x1f\x8b"  # a standard gzip stream
    read = [r.numpy() for r in tf.data.TFRecordDataset(path, compression_type="GZIP")]
    assert read == records
