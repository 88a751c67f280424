"""The work of a pretraining-data build, shared by its runners (local.py: processes on this machine;
beam.py: Apache Beam).

Work units are blocks: block b of input file f (in sorted order) holds the documents that start in bytes
[b · BLOCK_BYTES, (b + 1) · BLOCK_BYTES) of that file (corpus.read_blocks), so a unit is named without a
pass over the corpus. A unit's instances come from a generator seeded by (random_seed, f, b), dupe_factor
rounds over its documents; instance i gets the key hash(random_seed, f, b, i) (BLAKE2b, 64 bits; Python's
hash() is salted per process). Shard s of N holds the keys in [s · 2^64 / N, (s + 1) · 2^64 / N), sorted: in
output order the records are a uniformly random permutation, and the bytes depend on the inputs, settings,
seed and shard count only, never on the runner or its worker count.
"""

import collections
import contextlib
import dataclasses
import hashlib
import itertools
import math
import os
import random
import struct
import tempfile

from albert_tf import file_io
from albert_tf.file_io import write_atomically
from albert_tf.pretraining.data.instances import InstanceMaker, InstanceOptions, Vocabulary
from albert_tf.pretraining.data.manifest import Manifest, path_from_manifest, relative_name, shard_prefix
from albert_tf.pretraining.data.records import TFRecordWriter
from albert_tf.text import corpus
from albert_tf.text.tokenizer import AlbertTokenizer

BLOCK_BYTES = 256 * 1024
_UNIT = struct.Struct(">IQI")  # file, block, index: after the hash, they make keys unique


class BuildError(ValueError):
    """The build cannot produce records; the message says why (and names the file or flag)."""


@dataclasses.dataclass(frozen=True)
class BuildSettings:
    """Everything that decides the bytes of the output, besides the inputs and the shard count."""

    spm_model_file: str
    do_lower_case: bool = True
    options: InstanceOptions = InstanceOptions()
    dupe_factor: int = 40
    random_seed: int = 12345
    gzip: bool = False
    errors: str = "strict"

    def __post_init__(self):
        if self.dupe_factor < 1:
            raise BuildError(f"--dupe_factor must be at least 1, got {self.dupe_factor}")
        if self.errors not in ("strict", "replace"):
            raise BuildError(f"--errors must be 'strict' or 'replace', got {self.errors!r}")

    def to_dict(self):
        """JSON-ready, for the manifest."""
        return {**dataclasses.asdict(self), "block_bytes": BLOCK_BYTES}


@dataclasses.dataclass(frozen=True)
class Task:
    """Blocks [first_block, end_block) of input file number file_index (end_block None: to the end)."""

    file_index: int
    path: str
    first_block: int
    end_block: int | None


def file_tasks(file_index, path, size):
    """Tasks covering an input file of size bytes: one per block, or one for a .gz file (gzip cannot seek)."""
    if path.endswith(".gz"):
        return [Task(file_index, path, 0, None)]
    return [Task(file_index, path, block, block + 1) for block in range(math.ceil(size / BLOCK_BYTES))]


def input_sizes(input_files, files):
    """(file index, path, size in bytes) of each input file."""
    return [(index, path, files.size(path)) for index, path in enumerate(input_files)]


@contextlib.contextmanager
def output_folders(output_files, manifest_file):
    """Makes the missing local folders of the shards and the manifest, and removes those it made, while still
    empty, when the build fails (file_io.output_folders). Remote paths need none: object stores have no
    folders, and Beam's other file systems make a file's parents as they write it."""
    shards = [path for path in output_files if "://" not in path]
    manifest = [manifest_file] if "://" not in manifest_file else []
    with file_io.output_folders(shards, "--output_file"), file_io.output_folders(manifest, "--manifest_file"):
        yield


def _local_model_file(path, files):
    """A local copy of a SentencePiece model on another file system (SentencePiece reads local files)."""
    if "://" not in path:
        return path
    local = os.path.join(
        tempfile.gettempdir(), f"albert_tf-{hashlib.sha256(path.encode()).hexdigest()}.model"
    )
    if not os.path.exists(local):
        with files.open_read(path) as handle:
            write_atomically(local, handle.read())
    return local


_WORKER_CACHE = {}


def tokenizer_and_maker(settings, files):
    """The tokenizer and InstanceMaker of settings, loaded once per process."""
    key = (settings.spm_model_file, settings.do_lower_case, settings.options)
    if key not in _WORKER_CACHE:
        model_file = _local_model_file(settings.spm_model_file, files)
        tokenizer = AlbertTokenizer(model_file, do_lower_case=settings.do_lower_case)
        _WORKER_CACHE.clear()
        _WORKER_CACHE[key] = (
            tokenizer,
            InstanceMaker(settings.options, Vocabulary.from_sentencepiece(tokenizer.sp)),
        )
    return _WORKER_CACHE[key]


def _block_instances(settings, file_index, block, documents, stats, files):
    """Serialized instances of one block of documents (lists of text lines), in generation order."""
    tokenizer, maker = tokenizer_and_maker(settings, files)
    stats["documents"] += len(documents)
    ids = iter(tokenizer.encode_batch([line for document in documents for line in document]))
    tokenized = []
    for document in documents:
        segments = [line_ids for line_ids in itertools.islice(ids, len(document)) if line_ids]
        if sum(len(s) for s in segments) < 2:
            stats["skipped_documents"] += 1
            continue
        tokenized.append(segments)
    rng = random.Random(f"albert_tf:{settings.random_seed}:{file_index}:{block}")
    for _ in range(settings.dupe_factor):
        for index in range(len(tokenized)):
            yield from maker.document_instances(tokenized, index, rng, stats)


def instance_key(random_seed, file_index, block, index):
    """KEY_BYTES-byte sort key: 64-bit hash of (seed, unit, index), then the unit and index (unique)."""
    digest = hashlib.blake2b(
        f"{random_seed}:{file_index}:{block}:{index}".encode(), digest_size=8, person=b"albert_tf"
    ).digest()
    return digest + _UNIT.pack(file_index, block, index)


def block_of(key):
    """The block number of an instance_key."""
    return _UNIT.unpack(key[8:])[1]


def shard_of(key, num_shards):
    """The shard whose key range holds key: its first 64 bits · num_shards / 2^64."""
    return (int.from_bytes(key[:8], "big") * num_shards) >> 64


def task_instances(settings, task, num_shards, stats, files):
    """Yields (shard, key, record) for every instance of the task's blocks; stats (a Counter) gets the
    instance counters, documents, skipped documents and replaced lines."""
    blocks = corpus.read_blocks(
        task.path,
        BLOCK_BYTES,
        first_block=task.first_block,
        end_block=task.end_block,
        errors=settings.errors,
        files=files,
    )
    for block, documents, replaced in blocks:
        stats["replaced_lines"] += replaced
        instances = _block_instances(settings, task.file_index, block, documents, stats, files)
        for index, record in enumerate(instances):
            key = instance_key(settings.random_seed, task.file_index, block, index)
            yield shard_of(key, num_shards), key, record


# The counters a build reports (instances.py adds the masking and label ones), zeros included.
STATISTICS = [
    "documents",
    "skipped_documents",
    "replaced_lines",
    "instances",
    "tokens",
    "masked",
    "masked_as_mask",
    "masked_kept",
    "masked_random",
    "label_0",
    "label_1",
]


def add_counters(counters):
    """The sum of Counters, as a plain dict with sorted keys (for the manifest and for Beam)."""
    total = collections.Counter(dict.fromkeys(STATISTICS, 0))
    for counter in counters:
        total.update(counter)
    return dict(sorted(total.items()))  # update() keeps the zeros that Counter.__add__ would drop


def check_statistics(statistics, input_files):
    """BuildError when the corpus held no text or no document long enough for a pair."""
    if statistics.get("documents", 0) == 0:
        raise BuildError(f"empty corpus: {', '.join(input_files)} hold no text")
    if statistics.get("instances", 0) == 0:
        raise BuildError(
            f"no instances: all {statistics['documents']:,} documents of {', '.join(input_files)} are too "
            "short for a pair of segments"
        )


def publish(
    settings, input_files, output_files, temporaries, shard_records, statistics, manifest_path, files, earlier
):
    """Ends a build whose shards lie at their temporary names: checks the statistics, writes the empty shards
    (shard_records, shard index → records, lacks them), renames every shard and writes the manifest; then
    removes `earlier` (earlier_shards, read before the build began).

    Returns:
      the Manifest written.
    """
    check_statistics(statistics, input_files)
    for shard, temporary in enumerate(temporaries):
        if shard not in shard_records:
            TFRecordWriter(temporary, gzip_compressed=settings.gzip, open_file=files.open_write).close()
    for temporary, path in zip(temporaries, output_files, strict=True):
        files.rename(temporary, path)
    with files.open_read(settings.spm_model_file) as handle:
        tokenizer_sha256 = hashlib.sha256(handle.read()).hexdigest()
    manifest = Manifest(
        settings={
            **settings.to_dict(),
            "spm_model_file": path_from_manifest(settings.spm_model_file, manifest_path),
            "spm_model_sha256": tokenizer_sha256,
        },
        inputs=[{"path": path, "bytes": files.size(path)} for path in input_files],
        shards=[
            {
                "file": relative_name(path, manifest_path),
                "records": shard_records.get(shard, 0),
                "bytes": files.size(path),
            }
            for shard, path in enumerate(output_files)
        ],
        statistics=statistics,
        path=manifest_path,
    )
    manifest.write(files)
    for path in earlier:
        files.remove(path)
    return manifest


def earlier_shards(manifest_path, output_files, files):
    """The shards of an earlier build that this one replaces: those the manifest at manifest_path lists that
    are shards of one of this build's prefixes (`records/train-00007-of-00016` when it writes
    `records/train@4`) and not its outputs. A build into fewer shards would otherwise leave them beside its
    own, where a glob of the prefix mixes the two builds' records. [] when no manifest of this scheme is
    there: nothing is removed on a guess."""
    if not files.exists(manifest_path):
        return []
    try:
        with files.open_read(manifest_path) as handle:
            earlier = Manifest.from_json(handle.read().decode("utf-8"), manifest_path)
    except (OSError, ValueError):
        return []

    def normal(path):  # one spelling of a local path, relative or absolute
        return path if "://" in path else os.path.abspath(path)

    outputs = {normal(path) for path in output_files}
    prefixes = {shard_prefix(path) for path in outputs} - {None}
    return [
        path
        for path in map(normal, earlier.shard_paths())
        if path not in outputs and shard_prefix(path) in prefixes
    ]


@dataclasses.dataclass
class BuildSummary:
    """What a build read and wrote: its manifest (statistics included) and how long it took."""

    manifest: Manifest
    seconds: float
    removed: list = dataclasses.field(default_factory=list)  # an earlier build's shards (earlier_shards)

    @property
    def stats(self):
        return collections.Counter(self.manifest.statistics)

    def __str__(self):
        s, inputs = self.stats, self.manifest.inputs
        masked = max(s["masked"], 1)
        # What label 1 means: BERT's random next sentence, or ALBERT's swapped segments.
        random_next = self.manifest.settings["options"]["random_next_sentence"]
        pairs, label_1 = ("next sentence", "random next") if random_next else ("sentence order", "swapped")
        lines = [
            f"create_pretraining_data: done in {self.seconds:.1f} s",
            f"  input: {len(inputs)} file(s), {sum(i['bytes'] for i in inputs) / 1e6:.2f} MB, "
            f"{s['documents']:,} documents ({s['skipped_documents']:,} skipped: too short for a pair), "
            f"{s['replaced_lines']:,} lines with invalid UTF-8 replaced",
            f"  output: {len(self.manifest.shards)} shard(s), {s['instances']:,} instances "
            f"({s['instances'] / max(self.seconds, 1e-9):,.0f}/s), {s['tokens']:,} tokens; "
            f"manifest {self.manifest.path}",
            f"  masked: {s['masked'] / max(s['tokens'], 1):.1%} of tokens "
            f"({s['masked_as_mask'] / masked:.1%} [MASK], {s['masked_kept'] / masked:.1%} kept, "
            f"{s['masked_random'] / masked:.1%} random)",
            f"  {pairs}: {s['label_1'] / max(s['instances'], 1):.1%} label 1 ({label_1})",
        ]
        if self.removed:
            lines.append(
                f"  replaced an earlier build: removed its {len(self.removed)} shard(s) that this one does "
                f"not write ({os.path.basename(self.removed[0])}, ...)"
            )
        return "\n".join(lines)
