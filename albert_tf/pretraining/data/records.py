"""TFRecords of tf.train.Examples, written without TensorFlow (importing it costs each builder worker 600 MB
and seconds).

Examples (tensorflow/core/example/example.proto): Example{1: Features{1: map<string, Feature>}},
Feature{2: FloatList{1: packed float}, 3: Int64List{1: packed int64}}. Map entries are written in sorted key
order and empty lists as empty messages, as TensorFlow's deterministic serialization does.

Files (tensorflow/core/lib/io/record_writer.cc): each record is uint64 length, masked CRC32C of the length,
data, masked CRC32C of the data, little-endian. GZIP files are standard gzip streams (what
TFRecordDataset's "GZIP" reads), written with mtime 0 so the bytes depend on the records only.

tests/pretraining/data/test_records.py parses both with TensorFlow and compares with its own.
"""

import functools
import gzip
import struct

import google_crc32c


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
    if max(values) < 0x80:  # One byte each: the varint is the value (bytes() rejects negatives).
        return bytes(values)
    if min(values) < 0:  # (the table would take them silently)
        raise ValueError("negative values are not supported")
    try:
        return b"".join([_SMALL[v] for v in values])
    except IndexError:
        return b"".join([_varint(v) for v in values])


def _length(size):
    return _SMALL[size] if size < len(_SMALL) else _varint(size)


def _message(tag, payload):
    """A length-delimited field: tag byte (field number << 3 | 2), length, payload."""
    return tag + _length(len(payload)) + payload


@functools.lru_cache(maxsize=4096)
def _entry_header(name, list_tag, size):
    """The bytes of a features map entry that come before its size bytes of packed values.

    Entry{1: key, 2: Feature{list_tag: XList{1: packed}}}; an empty list is an empty XList message.
    """
    packed_header = b"\x0a" + _length(size) if size else b""
    feature_header = list_tag + _length(len(packed_header) + size)
    value_size = len(feature_header) + len(packed_header) + size
    value_header = b"\x12" + _length(value_size)
    key = _message(b"\x0a", name.encode("utf-8"))
    return (
        b"\x0a"
        + _length(len(key) + len(value_header) + value_size)
        + key
        + value_header
        + feature_header
        + packed_header
    )


@functools.cache
def _floats(count):
    return struct.Struct(f"<{count}f")


def serialize_example(int64_features, float_features=None):
    """Serializes one tf.train.Example.

    Args:
      int64_features: name → sequence of non-negative ints.
      float_features: name → sequence of floats (stored as float32).

    Returns:
      bytes of the serialized Example.

    Raises:
      ValueError: an int64 feature holds a negative value.
    """
    float_features = float_features or {}
    entries = []
    for name in sorted({*int64_features, *float_features}):
        if name in int64_features:
            try:
                packed = _varints(int64_features[name])
            except ValueError:
                raise ValueError(f"feature {name!r}: negative values are not supported") from None
            entries.append(_entry_header(name, b"\x1a", len(packed)))  # Feature.int64_list
        else:
            values = float_features[name]
            packed = _floats(len(values)).pack(*values)
            entries.append(_entry_header(name, b"\x12", len(packed)))  # Feature.float_list
        entries.append(packed)
    return _message(b"\x0a", b"".join(entries))  # Example.features


def masked_crc32c(data):
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class TFRecordWriter:
    """Writes records to path; a context manager. GZIP-compressed with gzip_compressed=True.

    open_file(path) opens it for binary writing (file_systems.BeamFiles().open_write for gs:// and the like).
    """

    def __init__(self, path, gzip_compressed=False, open_file=None):
        self._raw = open_file(path) if open_file else open(path, "wb")  # noqa: SIM115 (closed by close())
        self._out = (
            gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, mtime=0, compresslevel=6)
            if (gzip_compressed)
            else self._raw
        )

    def write(self, record):
        length = struct.pack("<Q", len(record))
        self._out.write(length + struct.pack("<I", masked_crc32c(length)) + record)
        self._out.write(struct.pack("<I", masked_crc32c(record)))

    def close(self):
        if self._out is not self._raw:
            self._out.close()
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
