"""Streaming, deterministic builder of MLM + SOP TFRecords (`python -m albert_tf.create_pretraining_data`).

The corpus is read once, in order, and cut into blocks of whole documents (about BLOCK_BYTES of text each).
A block is the unit of work: a worker tokenizes it and makes its instances, dupe_factor rounds, from a
generator seeded by (random_seed, block number), then shuffles them. The main process takes blocks back in
order, passes instances through a seeded shuffle buffer and deals them round-robin to the output files. So
the output depends on the inputs, flags and seed only, never on num_workers, and memory is bounded by the
blocks in flight and the shuffle buffer, whatever the corpus size.

Nothing here imports TensorFlow: TFRecords are framed in Python (tfrecord_writer.py), which keeps the main
process small (importing TensorFlow alone takes 600 MB) and the workers quick to start.
"""

import collections
import dataclasses
import itertools
import multiprocessing
import os
import random
import time

from albert_tf.data import corpus
from albert_tf.data.pretraining_instances import InstanceMaker, InstanceOptions, Vocabulary
from albert_tf.data.tfrecord_writer import TFRecordWriter
from albert_tf.data.tokenizer import AlbertTokenizer

BLOCK_BYTES = 256 * 1024


class BuildError(ValueError):
    """The build cannot produce records; the message says why (and names the file or flag)."""


@dataclasses.dataclass(frozen=True)
class BuildSettings:
    """Everything that decides the bytes of the output (num_workers does not)."""

    spm_model_file: str
    do_lower_case: bool = True
    options: InstanceOptions = InstanceOptions()
    dupe_factor: int = 40
    random_seed: int = 12345
    shuffle_buffer_size: int = 10_000


_WORKER_CACHE = {}


def _tokenizer_and_maker(settings):
    key = (settings.spm_model_file, settings.do_lower_case, settings.options)
    if key not in _WORKER_CACHE:
        tokenizer = AlbertTokenizer(settings.spm_model_file, do_lower_case=settings.do_lower_case)
        _WORKER_CACHE.clear()
        _WORKER_CACHE[key] = (
            tokenizer,
            InstanceMaker(settings.options, Vocabulary.from_sentencepiece(tokenizer.sp)),
        )
    return _WORKER_CACHE[key]


def build_block(settings, block_index, documents):
    """Serialized instances of one block of documents (lists of text lines), shuffled, and its statistics."""
    tokenizer, maker = _tokenizer_and_maker(settings)
    stats = collections.Counter(documents=len(documents))
    ids = iter(tokenizer.encode_batch([line for document in documents for line in document]))
    tokenized = []
    for document in documents:
        segments = [line_ids for line_ids in itertools.islice(ids, len(document)) if line_ids]
        if sum(len(s) for s in segments) < 2:
            stats["skipped_documents"] += 1
            continue
        tokenized.append(segments)
    rng = random.Random(f"albert_tf:{settings.random_seed}:{block_index}")
    records = []
    for _ in range(settings.dupe_factor):
        for index in range(len(tokenized)):
            records.extend(maker.document_instances(tokenized, index, rng, stats))
    rng.shuffle(records)
    return records, stats


def _blocks(documents):
    """Groups documents into blocks of about BLOCK_BYTES of text."""
    block, size = [], 0
    for document in documents:
        block.append(document)
        size += sum(len(line) for line in document)
        if size >= BLOCK_BYTES:
            yield block
            block, size = [], 0
    if block:
        yield block


def _block_results(settings, blocks, num_workers):
    """build_block over blocks, results in block order, at most 4 blocks per worker in flight."""
    if num_workers <= 1:
        for index, block in enumerate(blocks):
            yield build_block(settings, index, block)
        return
    with multiprocessing.get_context("spawn").Pool(num_workers) as pool:
        pending = collections.deque()
        for index, block in enumerate(blocks):
            pending.append(pool.apply_async(build_block, (settings, index, block)))
            if len(pending) >= 4 * num_workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


class _ShuffleBuffer:
    """A seeded shuffle buffer: push items, get back items in random order once it is full."""

    def __init__(self, size, rng):
        self.size, self.rng, self.items = size, rng, []

    def push(self, item):
        if len(self.items) < self.size:
            self.items.append(item)
            return None
        index = self.rng.randrange(self.size)
        out, self.items[index] = self.items[index], item
        return out

    def drain(self):
        self.rng.shuffle(self.items)
        yield from self.items
        self.items = []


@dataclasses.dataclass
class BuildSummary:
    """What a build read and wrote. `stats` holds the counters of pretraining_instances and build_block."""

    input_files: list
    output_files: list
    bytes_read: int
    replaced_lines: int
    seconds: float
    stats: collections.Counter

    def __str__(self):
        s = self.stats
        masked = max(s["masked"], 1)
        lines = [
            f"create_pretraining_data: done in {self.seconds:.1f} s",
            f"  input: {len(self.input_files)} file(s), {self.bytes_read / 1e6:.2f} MB, "
            f"{s['documents']:,} documents ({s['skipped_documents']:,} skipped: too short for a pair), "
            f"{self.replaced_lines:,} lines with invalid UTF-8 replaced",
            f"  output: {len(self.output_files)} file(s), {s['instances']:,} instances "
            f"({s['instances'] / max(self.seconds, 1e-9):,.0f}/s), {s['tokens']:,} tokens",
            f"  masked: {s['masked'] / max(s['tokens'], 1):.1%} of tokens "
            f"({s['masked_as_mask'] / masked:.1%} [MASK], {s['masked_kept'] / masked:.1%} kept, "
            f"{s['masked_random'] / masked:.1%} random)",
            f"  sentence order: {s['label_1'] / max(s['instances'], 1):.1%} label 1 (swapped or random next)",
        ]
        return "\n".join(lines)


def build(input_files, output_files, settings, *, num_workers=1, gzip=False, errors="strict", progress=None):
    """Reads input_files, writes TFRecords to output_files (each through a temporary name).

    Args:
      input_files: paths (see corpus.expand_patterns).
      output_files: paths; instances are dealt to them round-robin.
      settings: BuildSettings.
      num_workers: worker processes (1: in this process). Does not change the output.
      gzip: GZIP-compress the records.
      errors: "strict" or "replace" for invalid UTF-8 (corpus.LineReader).
      progress: called with a one-line status every few seconds.

    Returns:
      BuildSummary.

    Raises:
      BuildError, corpus.CorpusError: with the file, line or flag at fault; no output file is left behind.
    """
    for path in output_files:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise BuildError(f"--output_file: directory {directory} of {path} does not exist")
    _tokenizer_and_maker(settings)  # Fail early, naming the model file; in-process builds reuse it.
    reader = corpus.LineReader(input_files, errors=errors)
    temporaries = [f"{path}.tmp-{os.getpid()}" for path in output_files]
    writers = [TFRecordWriter(path, gzip_compressed=gzip) for path in temporaries]
    stats = collections.Counter()
    buffer = _ShuffleBuffer(
        settings.shuffle_buffer_size, random.Random(f"albert_tf:{settings.random_seed}:shuffle")
    )
    written = 0
    start = last_report = time.monotonic()

    def write(record):
        nonlocal written
        writers[written % len(writers)].write(record)
        written += 1

    try:
        for records, block_stats in _block_results(settings, _blocks(corpus.documents(reader)), num_workers):
            stats.update(block_stats)
            for record in records:
                out = buffer.push(record)
                if out is not None:
                    write(out)
            if progress and time.monotonic() - last_report > 5:
                last_report = time.monotonic()
                rate = stats["instances"] / (last_report - start)
                progress(
                    f"{reader.bytes_read / 1e6:,.1f} MB read, {stats['documents']:,} documents, "
                    f"{stats['instances']:,} instances ({rate:,.0f}/s)"
                )
        for record in buffer.drain():
            write(record)
        for writer in writers:
            writer.close()
        if stats["documents"] == 0:
            raise BuildError(f"empty corpus: {', '.join(input_files)} hold no text")
        if stats["instances"] == 0:
            raise BuildError(
                f"no instances: all {stats['documents']:,} documents of {', '.join(input_files)} are too "
                "short for a pair of segments"
            )
        for temporary, path in zip(temporaries, output_files, strict=True):
            os.replace(temporary, path)
    finally:
        for writer in writers:
            writer.close()
        for temporary in temporaries:
            if os.path.exists(temporary):
                os.remove(temporary)
    return BuildSummary(
        input_files=list(input_files),
        output_files=list(output_files),
        bytes_read=reader.bytes_read,
        replaced_lines=reader.replaced_lines,
        seconds=time.monotonic() - start,
        stats=stats,
    )
