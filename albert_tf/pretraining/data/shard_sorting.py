"""Key-sorted TFRecord shards within a memory budget, and the spill files that feed them.

An entry is (key, record): key is KEY_BYTES bytes whose byte order is the output order (units.py
makes them unique), record a serialized tf.Example. A shard's entries arrive in any order (from spill files
of several workers, or a Beam group); write_shard sorts them by key and writes the records. Entries that fit
the budget are sorted in memory; more are sorted in runs of the budget, spilled to scratch files and merged,
so memory stays bounded by the budget whatever a shard holds. The bytes are the same either way.
"""

import heapq
import itertools
import os
import struct
import tempfile

from albert_tf.file_systems import LocalFiles
from albert_tf.pretraining.data.records import TFRecordWriter

KEY_BYTES = 24
SORT_MEMORY_BYTES = 256 * 1024 * 1024  # the default budget (--sort_memory_mb)
_HEADER = struct.Struct(f">{KEY_BYTES}sI")
# Python's cost of one entry held in a list beyond its record's bytes: the tuple, two bytes objects, a slot.
_ENTRY_OVERHEAD = 200


def pack_entries(entries):
    """Bytes of (key, record) entries as a spill file holds them."""
    return b"".join(_HEADER.pack(key, len(record)) + record for key, record in entries)


def read_entries(path):
    """Yields the (key, record) entries of a spill file."""
    with open(path, "rb") as handle:
        while header := handle.read(_HEADER.size):
            key, length = _HEADER.unpack(header)
            yield key, handle.read(length)


def _sorted_runs(entries, memory_bytes, scratch):
    """Splits entries into sorted runs of at most memory_bytes: a list of lists (all of them when one run
    holds everything), or of spill-file paths."""
    runs, run, size = [], [], 0
    for entry in entries:
        run.append(entry)
        size += len(entry[1]) + _ENTRY_OVERHEAD
        if size > memory_bytes:
            run.sort()
            descriptor, path = tempfile.mkstemp(dir=scratch, prefix="run-")
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(pack_entries(run))
            runs.append(path)
            run, size = [], 0
    run.sort()
    return runs, run


def write_shard(entries, path, *, gzip_compressed, memory_bytes, files=LocalFiles):
    """Writes the records of (key, record) entries to the TFRecord file path, in key order.

    Returns:
      the number of records written.
    """
    with tempfile.TemporaryDirectory(prefix="albert_tf-sort-") as scratch:
        runs, last = _sorted_runs(entries, memory_bytes, scratch)
        ordered = heapq.merge(*(read_entries(run) for run in runs), last) if runs else last
        count = 0
        with TFRecordWriter(path, gzip_compressed=gzip_compressed, open_file=files.open_write) as writer:
            for count, (_, record) in enumerate(ordered, start=1):  # noqa: B007 (count is the result)
                writer.write(record)
    return count


def chained_entries(paths):
    """The entries of several spill files, one file after the other."""
    return itertools.chain.from_iterable(read_entries(path) for path in paths)
