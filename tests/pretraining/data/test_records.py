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


def test_values_at_the_edges_of_one_and_two_byte_varints_and_long_features_equal_tensorflow():
    # 65,536 and 70,000 bytes of values: lengths past the table of small varints (3 bytes each).
    ints = {"ids": [127, 128, 129, 16383, 16384], "edge": [1] * 65_536, "long": [1] * 70_000}
    expected = _tf_example(ints, {}).SerializeToString(deterministic=True)
    assert serialize_example(ints) == expected
    assert serialize_example({"ids": [128]}) == _tf_example({"ids": [128]}, {}).SerializeToString()


def test_gzip_files_hold_no_name_or_time_so_the_bytes_depend_on_the_records_only(tmp_path):
    records = [serialize_example({"x": [i]}) for i in range(20)]
    for name in ("a.tfrecord.gz", "other.tfrecord.gz"):
        with TFRecordWriter(str(tmp_path / name), gzip_compressed=True) as writer:
            for record in records:
                writer.write(record)
    data = (tmp_path / "a.tfrecord.gz").read_bytes()
    assert data == (tmp_path / "other.tfrecord.gz").read_bytes()
    assert data[3] == 0 and data[4:8] == b"\0\0\0\0"  # no flags (no file name), mtime 0
    assert data[8] == 0  # neither the fastest nor the best compression: zlib's default level


def test_records_go_through_the_file_system_given(tmp_path):
    """open_file (a file system's writer: gs:// and the like) receives the path and gets the bytes."""
    opened = []

    def open_file(path):
        opened.append(path)
        return open(tmp_path / "elsewhere.tfrecord", "wb")  # noqa: SIM115 (the writer closes it)

    with TFRecordWriter("gs://bucket/train.tfrecord", open_file=open_file) as writer:
        writer.write(serialize_example({"x": [1]}))
    assert opened == ["gs://bucket/train.tfrecord"]
    read = [r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "elsewhere.tfrecord"))]
    assert read == [serialize_example({"x": [1]})]
