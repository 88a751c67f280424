"""TFRecord files written without TensorFlow (importing it costs the builder 600 MB and seconds).

Framing (tensorflow/core/lib/io/record_writer.cc): uint64 length, masked CRC32C of the length, data, masked
CRC32C of the data, little-endian. GZIP files are standard gzip streams (what TFRecordDataset's "GZIP" reads),
written with mtime 0 so the bytes depend on the records only.
"""

import gzip
import struct

import google_crc32c


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
