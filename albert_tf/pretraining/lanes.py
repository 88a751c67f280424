"""How a run reads a build that has a manifest: its shards dealt to lanes, each input pipeline reading only
its own lanes, each epoch in its own order.

    lanes K = the largest divisor of gcd(global batch G, shard count N) that is at most MAX_LANES
    lane l  = shards l, l + K, l + 2K, ... of the manifest
    step t  = m = G / K consecutive records of each lane's stream, lane 0's first
    input pipeline i of P = lanes [i·K/P, (i+1)·K/P): the (i+1)-th of P equal chunks of every global batch

K depends on the build and G alone, so the global batches are the same for any pipeline or replica count, and
a pipeline opens its own shards and no other: P pipelines read the corpus once between them, not P times.

A lane's stream is its records, pass after pass. Each pass (a lane's epoch) takes the lane's shards in an
order drawn from (seed, lane, epoch), and cuts that stream into blocks of BLOCK records, each shuffled from
(seed, lane, epoch, block): no two epochs repeat an order, and no shard is held in memory (a pipeline holds
two blocks per lane). Lanes end their epochs where their own records do.

Where lane l stands after t steps (t·m records into its stream) follows from the manifest's counts alone: a
resumed run opens, in each of its lanes, the shard it stands in, and reads, unparsed, the records of that
shard before its block: at most one shard per lane (Lanes.resume_reads says how many).

Online masks are drawn from (seed, the record's index in the global order: t·G + l·m + j for the j-th record
of lane l at step t), so they too do not depend on the pipeline count.
"""

import dataclasses
import math

import tensorflow as tf

from albert_tf.pretraining.data.manifest import Manifest

MAX_LANES = 256  # files open at once in one pipeline, at most
BLOCK = 128  # records shuffled together; a pipeline holds two blocks per lane


@dataclasses.dataclass(frozen=True)
class LaneStart:
    """Where a lane stands: its epoch, its shards' order in that epoch (indices into Lanes.shards(lane)),
    the position in that order of the shard it is in, the record in that shard where its block starts, the
    block's number in the epoch and the records of the block already taken."""

    epoch: int
    order: tuple
    shard: int
    record: int
    block: int
    in_block: int


@dataclasses.dataclass(frozen=True)
class Lanes:
    """A build's shards dealt to lanes for a global batch size (see the module docstring)."""

    manifest: Manifest
    global_batch_size: int
    count: int
    seed: int

    @classmethod
    def of(cls, manifest, global_batch_size, seed):
        """The lanes of manifest for global_batch_size; ValueError naming the manifest when a lane's shards
        hold no records."""
        common = math.gcd(global_batch_size, len(manifest.shards))
        count = max(d for d in range(1, min(common, MAX_LANES) + 1) if common % d == 0)
        lanes = cls(manifest, global_batch_size, count, seed)
        for lane in range(count):
            if not lanes.length(lane):
                raise ValueError(
                    f"{manifest.path}: shards {lanes.shards(lane)} (lane {lane} of {count}) hold no records; "
                    "rebuild the records with fewer shards"
                )
        return lanes

    @property
    def per_step(self):
        """m: the records each lane gives to a global batch."""
        return self.global_batch_size // self.count

    def shards(self, lane):
        """The manifest indices of lane's shards."""
        return list(range(lane, len(self.manifest.shards), self.count))

    def length(self, lane):
        """Records in one epoch of lane."""
        return sum(self.manifest.shards[shard]["records"] for shard in self.shards(lane))

    def of_pipeline(self, pipelines, pipeline):
        """The lanes that input pipeline `pipeline` of `pipelines` reads; ValueError when they cannot share
        them."""
        if self.count % pipelines:
            shards = len(self.manifest.shards)
            raise ValueError(
                f"{pipelines} input pipelines cannot share the {self.count} lane(s) of "
                f"{self.manifest.path} ({shards} shards) at global batch {self.global_batch_size}: each "
                "pipeline reads whole lanes, and the lanes are the largest common divisor of the shard count "
                f"and the global batch (at most {MAX_LANES}). Rebuild the records with a shard count that is "
                f"a multiple of {pipelines} and divides the global batch (e.g. "
                f"--output_file=PREFIX@{pipelines})"
            )
        share = self.count // pipelines
        return range(pipeline * share, (pipeline + 1) * share)

    def start(self, lane, start_batch):
        """LaneStart of lane after start_batch global batches."""
        epoch, offset = divmod(start_batch * self.per_step, self.length(lane))
        shards = self.shards(lane)
        order = tuple(int(i) for i in shard_order(self.seed, lane, epoch, len(shards)))
        block, in_block = divmod(offset, BLOCK)
        before = block * BLOCK  # records of this epoch before the block
        for position, index in enumerate(order):
            records = self.manifest.shards[shards[index]]["records"]
            if before < records:
                return LaneStart(epoch, order, position, before, block, in_block)
            before -= records
        raise AssertionError("unreachable: offset < length")

    def shards_read_at(self, lanes, batch):
        """Manifest indices of the shards that `lanes` read for step `batch`: its records and the blocks
        read ahead with them (where a read error surfacing at that step lies)."""
        found = []
        for lane in lanes:
            shards, length = self.shards(lane), self.length(lane)
            position = batch * self.per_step // BLOCK * BLOCK  # the block of the step's first record
            end = batch * self.per_step + self.per_step + BLOCK  # the block read ahead too
            while position < end:
                epoch, offset = divmod(position, length)
                start = 0
                for index in shard_order(self.seed, lane, epoch, len(shards)).numpy():
                    records = self.manifest.shards[shards[index]]["records"]
                    if start + records > offset and start < offset + end - position:
                        found.append(shards[index])
                    start += records
                position += length - offset
        return sorted(set(found))

    def resume_reads(self, lanes, start_batch):
        """Records that pipelines reading `lanes` read, unparsed, to resume at start_batch."""
        return sum(self.start(lane, start_batch).record for lane in lanes)

    def dataset(self, pipelines, pipeline, start_batch):
        """(global index int64, serialized record) pairs of pipeline's part of every global batch from
        start_batch on, in order: per step, m records of each of its lanes, lane by lane."""
        lanes = self.of_pipeline(pipelines, pipeline)
        streams = [self._lane(lane, start_batch) for lane in lanes]
        if len(streams) == 1:
            return streams[0]
        m = self.per_step
        choice = tf.data.Dataset.from_tensor_slices(tf.repeat(tf.range(len(streams), dtype=tf.int64), m))
        return tf.data.Dataset.choose_from_datasets(streams, choice.repeat())

    def _lane(self, lane, start_batch):
        """(global index, record) pairs of lane's stream from start_batch on."""
        all_paths = self.manifest.shard_paths()
        paths = [all_paths[shard] for shard in self.shards(lane)]
        compression = "GZIP" if self.manifest.settings["gzip"] else ""
        at = self.start(lane, start_batch)
        ordered = [paths[index] for index in at.order]
        first = tf.data.TFRecordDataset(ordered[at.shard], compression).skip(at.record)
        if at.shard + 1 < len(ordered):
            first = first.concatenate(tf.data.TFRecordDataset(ordered[at.shard + 1 :], compression))
        first = _shuffled_blocks(first, self.seed, lane, at.epoch, at.block).skip(at.in_block)

        def epoch_records(epoch):
            order = shard_order(self.seed, lane, epoch, len(paths))
            records = tf.data.TFRecordDataset(tf.gather(tf.constant(paths), order), compression)
            return _shuffled_blocks(records, self.seed, lane, epoch, 0)

        records = first.concatenate(tf.data.Dataset.counter(at.epoch + 1).flat_map(epoch_records))
        m, global_batch = self.per_step, self.global_batch_size

        def global_index(position, record):
            return position // m * global_batch + lane * m + position % m, record

        positions = tf.data.Dataset.counter(start_batch * m)
        return tf.data.Dataset.zip(positions, records).map(global_index)


def _seed(seed, lane, epoch, part):
    """A stateless seed for (seed, lane, epoch, part): part -1 orders the shards, part k ≥ 0 shuffles block
    k."""
    folded = tf.constant([seed, 0], tf.int64)
    for value in (lane, epoch, part):
        folded = tf.random.experimental.stateless_fold_in(folded, tf.cast(value, tf.int64))
    return folded


def shard_order(seed, lane, epoch, shards):
    """int32 [shards]: the order of a lane's shards in an epoch."""
    return tf.random.experimental.stateless_shuffle(tf.range(shards), _seed(seed, lane, epoch, -1))


def _shuffled_blocks(records, seed, lane, epoch, first_block):
    """records cut into blocks of BLOCK (numbered from first_block), each shuffled by its own seed."""
    blocks = tf.data.Dataset.zip(tf.data.Dataset.counter(first_block), records.batch(BLOCK))
    shuffled = blocks.map(
        lambda block, items: tf.random.experimental.stateless_shuffle(items, _seed(seed, lane, epoch, block))
    )
    return shuffled.prefetch(1).unbatch()
