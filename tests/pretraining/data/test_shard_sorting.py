import pathlib
import random

import tensorflow as tf

from albert_tf.pretraining.data import shard_sorting


def _entries(count, seed):
    rng = random.Random(seed)
    return [
        (rng.randbytes(shard_sorting.KEY_BYTES), rng.randbytes(rng.randrange(0, 300))) for _ in range(count)
    ]


def test_shard_is_sorted_by_key_the_same_in_memory_or_merged_from_disk(tmp_path):
    entries = _entries(997, seed=3)
    spill = tmp_path / "spill"
    spill.write_bytes(shard_sorting.pack_entries(entries[:500]) + shard_sorting.pack_entries(entries[500:]))
    assert list(shard_sorting.read_entries(str(spill))) == entries
    in_memory, merged = str(tmp_path / "memory.tfrecord"), str(tmp_path / "merged.tfrecord")
    assert shard_sorting.write_shard(entries, in_memory, gzip_compressed=False, memory_bytes=1 << 30) == 997
    # 2 KB runs: dozens of sorted runs merged from disk.
    assert shard_sorting.write_shard(entries, merged, gzip_compressed=False, memory_bytes=2048) == 997
    expected = [record for _, record in sorted(entries)]
    assert [r.numpy() for r in tf.data.TFRecordDataset(in_memory)] == expected
    assert pathlib.Path(in_memory).read_bytes() == pathlib.Path(merged).read_bytes()


def test_empty_shard_is_an_empty_file(tmp_path):
    path = str(tmp_path / "empty.tfrecord")
    assert shard_sorting.write_shard([], path, gzip_compressed=False, memory_bytes=100) == 0
    assert pathlib.Path(path).read_bytes() == b""
