"""Deterministic, globally shuffled MLM + SOP TFRecords on one machine (`python -m
albert_tf.create_pretraining_data`, the default `--runner=local`).

The algorithm is units.py's: work units are blocks of bytes of the input files, each instance is keyed
by a hash of (seed, unit, index), shard s holds the s-th range of keys, sorted. Two passes:
1. Worker processes take tasks (blocks) in any order, make their instances and append them, keyed, to
   spill files by shard (one file per shard and worker, in a scratch folder beside the outputs).
2. Workers sort the shards one at a time and write each to a temporary name (shard_sorting.write_shard);
   when all are written, and none is empty (units.check_shards), they are renamed, and the manifest is
   written last.
Memory: a worker holds one block's instances in pass 1 and one shard in pass 2 (or, for a shard larger than
sort_memory_bytes, sorted runs of that size merged from disk), whatever the corpus size. The scratch disk
holds the output once more until the end. The bytes are those of beam.py's pipeline.

Nothing here imports TensorFlow: TFRecords are framed in Python (records.py), which keeps the main
process small (importing TensorFlow alone takes 600 MB) and the workers quick to start.
"""

import collections
import contextlib
import glob
import multiprocessing
import os
import shutil
import tempfile
import time

from albert_tf.file_systems import LocalFiles
from albert_tf.pretraining.data import shard_sorting, units
from albert_tf.pretraining.data.manifest import default_manifest_path
from albert_tf.pretraining.data.units import BuildSummary


def _spill_task(settings, task, num_shards, scratch):
    """Pass 1 for one task: appends its keyed instances to the spill files of this process, block by block
    (a .gz file is one task of many blocks: it streams like the blocks of a plain file). Returns stats."""
    stats = collections.Counter()
    by_shard, block = collections.defaultdict(list), None
    for shard, key, record in units.task_instances(settings, task, num_shards, stats, LocalFiles):
        if units.block_of(key) != block:
            _spill(by_shard, scratch)
            block = units.block_of(key)
        by_shard[shard].append((key, record))
    _spill(by_shard, scratch)
    return stats


def _spill(by_shard, scratch):
    """Appends entries (shard → [(key, record)]) to this process's spill files and empties by_shard."""
    for shard, entries in by_shard.items():
        with open(os.path.join(scratch, f"{shard:05d}.{os.getpid()}"), "ab") as handle:
            handle.write(shard_sorting.pack_entries(entries))
    by_shard.clear()


def _write_shard(scratch, shard, path, gzip_compressed, memory_bytes):
    """Pass 2 for one shard: sorts its spilled entries, writes them to path. Returns (shard, records, (lowest,
    highest) key head or (None, None)) (units.check_shards)."""
    spills = sorted(glob.glob(os.path.join(scratch, f"{shard:05d}.*")))
    keys = units.KeyRange()
    records = shard_sorting.write_shard(
        keys.watch(shard_sorting.chained_entries(spills)),
        path,
        gzip_compressed=gzip_compressed,
        memory_bytes=memory_bytes,
    )
    for spill in spills:
        os.remove(spill)
    return shard, records, (keys.low, keys.high)


def _star(call):
    function, args = call
    return function(*args)


@contextlib.contextmanager
def _runner(num_workers):
    """A function that yields function(*args) for each (function, args) of a list, in any order, from a pool
    of num_workers processes (in this process for 1)."""
    if num_workers <= 1:
        yield lambda calls: map(_star, calls)
        return
    with multiprocessing.get_context("spawn").Pool(num_workers) as pool:
        yield lambda calls: pool.imap_unordered(_star, calls)


def build(
    input_files,
    output_files,
    settings,
    *,
    num_workers=1,
    manifest_file=None,
    sort_memory_bytes=shard_sorting.SORT_MEMORY_BYTES,
    progress=None,
):
    """Reads input_files, writes key-sorted shards to output_files and a manifest beside them.

    Args:
      input_files: paths (see corpus.expand_patterns).
      output_files: shard paths, in key order (manifest.output_paths).
      settings: units.BuildSettings.
      num_workers: worker processes (1: in this process). Does not change the output.
      manifest_file: where the manifest goes (default: manifest.default_manifest_path).
      sort_memory_bytes: a worker sorts a larger shard in runs of this size, merged from disk.
      progress: called with a one-line status every few seconds.

    Returns:
      units.BuildSummary.

    Raises:
      BuildError, corpus.CorpusError: with the file, line or flag at fault; no output is left half-written
      and files from an earlier build are kept. The outputs' folders are made when missing, and removed
      again on an error.
    """
    manifest_file = manifest_file or default_manifest_path(output_files)
    with units.output_folders(output_files, manifest_file):
        return _build(
            input_files, output_files, settings, num_workers, manifest_file, sort_memory_bytes, progress
        )


def _build(input_files, output_files, settings, num_workers, manifest_file, sort_memory_bytes, progress):
    """build, once the outputs' folders exist."""
    start = last_report = time.monotonic()
    settings = units.pin_model(settings, LocalFiles)  # the model's bytes now; fails early, naming it
    removed = units.earlier_shards(manifest_file, output_files, LocalFiles)  # once this build is published
    work = [task for entry in units.input_sizes(input_files, LocalFiles) for task in units.file_tasks(*entry)]
    num_shards = len(output_files)
    scratch = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(output_files[0])), prefix=".tmp-spill-")
    temporaries = [f"{path}.tmp-{os.getpid()}" for path in output_files]
    stats = []
    try:
        with _runner(num_workers) as run:
            calls = [(_spill_task, (settings, task, num_shards, scratch)) for task in work]
            for done, task_stats in enumerate(run(calls), start=1):
                stats.append(task_stats)
                if progress and time.monotonic() - last_report > 5:
                    last_report = time.monotonic()
                    instances = sum(s["instances"] for s in stats)
                    progress(
                        f"{done:,}/{len(work):,} blocks, {instances:,} instances "
                        f"({instances / (last_report - start):,.0f}/s)"
                    )
            statistics = units.add_counters(stats)
            units.check_statistics(statistics, input_files)
            calls = [
                (_write_shard, (scratch, shard, temporary, settings.gzip, sort_memory_bytes))
                for shard, temporary in enumerate(temporaries)
            ]
            written = list(run(calls))
            manifest = units.publish(
                settings,
                input_files,
                output_files,
                temporaries,
                {shard: records for shard, records, _ in written},
                statistics,
                manifest_file,
                LocalFiles,
                removed,
                key_ranges={shard: heads for shard, _, heads in written if heads[0] is not None},
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for temporary in temporaries:
            LocalFiles.remove(temporary)
    return BuildSummary(manifest=manifest, seconds=time.monotonic() - start, removed=removed)
