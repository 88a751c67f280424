"""The work of a pretraining-data build, shared by its runners (local.py: processes on this machine;
beam.py: Apache Beam).

Work units are blocks: block b of input file f (in sorted order) holds the documents that start in bytes
[b · BLOCK_BYTES, (b + 1) · BLOCK_BYTES) of that file (corpus.read_blocks), so a unit is named without a
pass over the corpus. A unit's instances come from a generator seeded by (random_seed, f, b), dupe_factor
rounds over its documents; instance i gets the key hash(random_seed, f, b, i) (BLAKE2b, 64 bits; Python's
hash() is salted per process). Shard s of N holds the keys in [s · 2^64 / N, (s + 1) · 2^64 / N), sorted: in
output order the records are a uniformly random permutation, and the bytes depend on the inputs, settings,
seed and shard count only, never on the runner or its worker count.

The SentencePiece model is identified by its bytes, not its path: the launcher reads it once and pins the
SHA-256 of those bytes in the settings (pin_model); every worker reads it again, checks the bytes against that
hash and loads the tokenizer from those very bytes (no copy on disk), and the manifest records that hash. A
model replaced during or between builds cannot give records that the manifest says another model made.

Training refuses a build with an empty shard (a lane can be a single shard: albert_tf/pretraining/lanes.py),
so a build whose instances cannot fill every shard stops before it publishes anything, naming the largest
shard count its instances fill (check_shards).
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

from albert_tf import file_io
from albert_tf.pretraining.data.instances import InstanceMaker, InstanceOptions, Vocabulary
from albert_tf.pretraining.data.manifest import Manifest, path_from_manifest, relative_name, shard_prefix
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
    keep_accents: bool = False
    options: InstanceOptions = InstanceOptions()
    dupe_factor: int = 40
    random_seed: int = 12345
    gzip: bool = False
    errors: str = "strict"
    # The SHA-256 (hex) of the model's bytes, set by pin_model when a build starts: workers load only those.
    spm_model_sha256: str | None = None

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


def _read_model(path, files):
    """The bytes of the SentencePiece model at path (any file system of files); BuildError naming it."""
    try:
        with files.open_read(path) as handle:
            return handle.read()
    except FileNotFoundError:
        raise BuildError(f"--spm_model_file={path}: no such file (a SentencePiece model expected)") from None
    except IsADirectoryError:
        raise BuildError(f"--spm_model_file={path}: a folder, not a SentencePiece model file") from None
    except OSError as error:
        raise BuildError(f"--spm_model_file={path}: cannot be read ({error})") from None


def _load(settings, model):
    """The tokenizer and InstanceMaker of settings from the model's bytes."""
    try:
        tokenizer = AlbertTokenizer(
            model, do_lower_case=settings.do_lower_case, keep_accents=settings.keep_accents
        )
    except ValueError as error:  # TokenizerError: not a model, or no ALBERT pieces
        raise BuildError(f"--spm_model_file={settings.spm_model_file}: {error}") from None
    return tokenizer, InstanceMaker(settings.options, Vocabulary.from_sentencepiece(tokenizer.sp))


_WORKER_CACHE = {}


def pin_model(settings, files):
    """settings with spm_model_sha256, the SHA-256 of the model's bytes as the build starts: what workers
    check the bytes they load against, and what the manifest records. Loads the tokenizer too, so that a
    missing or unusable model fails before any work, naming the file."""
    model = _read_model(settings.spm_model_file, files)
    pinned = dataclasses.replace(settings, spm_model_sha256=hashlib.sha256(model).hexdigest())
    _WORKER_CACHE.clear()
    _WORKER_CACHE[_cache_key(pinned)] = _load(pinned, model)
    return pinned


def _cache_key(settings):
    return (settings.spm_model_sha256, settings.do_lower_case, settings.keep_accents, settings.options)


def tokenizer_and_maker(settings, files):
    """The tokenizer and InstanceMaker of settings (pinned by pin_model), loaded once per process from
    bytes that hash to settings.spm_model_sha256; BuildError when the model's bytes are no longer those."""
    if settings.spm_model_sha256 is None:
        raise BuildError(f"{settings.spm_model_file}: the build's settings lack the model's hash (pin_model)")
    key = _cache_key(settings)
    if key not in _WORKER_CACHE:
        model = _read_model(settings.spm_model_file, files)
        found = hashlib.sha256(model).hexdigest()
        if found != settings.spm_model_sha256:
            raise BuildError(
                f"--spm_model_file={settings.spm_model_file} changed during the build: SHA-256 {found}, "
                f"{settings.spm_model_sha256} when it began; build again once the model stays put"
            )
        loaded = _load(settings, model)
        _WORKER_CACHE.clear()
        _WORKER_CACHE[key] = loaded
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


def key_head(key):
    """The first 64 bits of an instance_key, as an int: what decides its shard."""
    return int.from_bytes(key[:8], "big")


def shard_of(key, num_shards):
    """The shard whose key range holds key: its first 64 bits · num_shards / 2^64."""
    return (key_head(key) * num_shards) >> 64


class KeyRange:
    """The lowest and highest key_head of the (key, record) entries that watch() passes on: what check_shards
    needs of a shard (None, None when it held none)."""

    def __init__(self):
        self.low = self.high = None

    def watch(self, entries):
        """Yields entries unchanged, noting their keys' lowest and highest heads."""
        low = high = None
        for entry in entries:
            head = entry[0][:8]  # big-endian: bytes order is numeric order
            if low is None or head < low:
                low = head
            if high is None or head > high:
                high = head
            yield entry
        if low is not None:
            self.low, self.high = key_head(low), key_head(high)


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


def largest_full_shard_count(key_ranges, num_shards):
    """The largest n < num_shards for which every shard of n would hold an instance (0 for none), from the
    lowest and highest key_head of each shard of num_shards (key_ranges: shard → (low, high), the non-empty
    shards only). Exact: a shard of n < num_shards is a key range wider than a shard of num_shards, so it
    cannot lie inside one; it holds a key exactly when it holds the lowest or the highest key of one of the
    shards of num_shards that it overlaps."""
    heads = sorted({head for low_high in key_ranges.values() for head in low_high})
    for n in range(min(num_shards - 1, len(heads)), 0, -1):
        filled = 0  # shards 0 .. filled - 1 of n hold a head
        for head in heads:
            shard = (head * n) >> 64
            if shard > filled:
                break  # shard `filled` holds none
            filled = max(filled, shard + 1)
        if filled == n:
            return n
    return 0


def check_shards(key_ranges, output_files, instances):
    """BuildError when a shard of output_files would hold no records (key_ranges: shard → (low, high) key
    heads, for the shards that hold some; see largest_full_shard_count), naming the shards, the instances made
    and the largest shard count that they fill. Training refuses such a build: with a global batch that is a
    multiple of the shard count, each shard is a lane, and a lane must give records (pretraining/lanes.py)."""
    num_shards = len(output_files)
    empty = [shard for shard in range(num_shards) if shard not in key_ranges]
    if not empty:
        return
    fits = largest_full_shard_count(key_ranges, num_shards)
    prefixes = {shard_prefix(path) for path in output_files}  # one, for PREFIX@N
    sharded = len(prefixes) == 1 and output_files[0].endswith(f"-of-{num_shards:05d}")
    advice = f"--output_file={prefixes.pop()}@{fits}" if sharded else f"{fits} file(s) in --output_file"
    listed = ", ".join(map(str, empty[:10])) + (", ..." if len(empty) > 10 else "")
    raise BuildError(
        f"--output_file: the corpus made {instances:,} instances, too few for {num_shards} shards: "
        f"{len(empty)} shard(s) would hold no records (shards [{listed}] of {num_shards}), and training "
        f"refuses a build with an empty shard. The most shards these instances fill is {fits}: use {advice} "
        "(or a larger corpus or --dupe_factor)"
    )


def publish(
    settings,
    input_files,
    output_files,
    temporaries,
    shard_records,
    statistics,
    manifest_path,
    files,
    earlier,
    key_ranges,
):
    """Ends a build whose shards lie at their temporary names: checks the statistics and that no shard is
    empty (check_shards; key_ranges: shard → (low, high) key heads), renames every shard and writes the
    manifest; then removes `earlier` (earlier_shards, read before the build began). shard_records: shard
    index → records. Nothing is renamed, written or removed when a check fails.

    Returns:
      the Manifest written.
    """
    check_statistics(statistics, input_files)
    check_shards(key_ranges, output_files, statistics["instances"])
    for temporary, path in zip(temporaries, output_files, strict=True):
        files.rename(temporary, path)
    manifest = Manifest(
        settings={
            **settings.to_dict(),  # spm_model_sha256: of the bytes every worker loaded (pin_model)
            "spm_model_file": path_from_manifest(settings.spm_model_file, manifest_path),
        },
        inputs=[{"path": path, "bytes": files.size(path)} for path in input_files],
        shards=[
            {
                "file": relative_name(path, manifest_path),
                "records": shard_records[shard],
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
