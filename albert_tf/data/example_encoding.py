"""tf.train.Example serialization in pure Python (the builder's workers run without TensorFlow).

Wire format (tensorflow/core/example/example.proto): Example{1: Features{1: map<string, Feature>}},
Feature{2: FloatList{1: packed float}, 3: Int64List{1: packed int64}}. Map entries are written in sorted key
order and empty lists as empty messages, as TensorFlow's deterministic serialization does.
tests/data/test_example_encoding.py parses the bytes
with TensorFlow and compares with tf.train.Example.
"""

import struct


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# Varint bytes of 0..65535: ids, positions, masks and field lengths are all small.
_SMALL = [_varint(i) for i in range(1 << 16)]


def _varints(values):
    if not values:
        return b""
    if max(values) < 0x80:  # One byte each: the varint is the value (masks, segments, labels).
        return bytes(values)
    try:
        return b"".join([_SMALL[v] for v in values])
    except IndexError:
        return b"".join([_varint(v) for v in values])


def _length(size):
    return _SMALL[size] if size < len(_SMALL) else _varint(size)


def _message(tag, payload):
    """A length-delimited field: tag byte (field number << 3 | 2), length, payload."""
    return tag + _length(len(payload)) + payload


def serialize_example(int64_features, float_features=None):
    """Serializes one tf.train.Example.

    Args:
      int64_features: name → sequence of non-negative ints.
      float_features: name → sequence of floats (stored as float32).

    Returns:
      bytes of the serialized Example.
    """
    float_features = float_features or {}
    entries = []
    for name in sorted({*int64_features, *float_features}):
        if name in int64_features:
            values = int64_features[name]
            if values and min(values) < 0:  # (bytes() and the table would take them silently)
                raise ValueError(f"feature {name!r}: negative values are not supported")
            packed = _varints(values)
            feature = _message(b"\x1a", _message(b"\x0a", packed) if packed else b"")  # int64_list.value
        else:
            values = float_features[name]
            packed = struct.pack(f"<{len(values)}f", *values)
            feature = _message(b"\x12", _message(b"\x0a", packed) if packed else b"")  # float_list.value
        key = _message(b"\x0a", name.encode("utf-8"))
        entries.append(_message(b"\x0a", key + _message(b"\x12", feature)))  # map entry: key 1, value 2
    return _message(b"\x0a", b"".join(entries))  # Example.features
