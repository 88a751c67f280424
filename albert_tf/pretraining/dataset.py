"""The pretraining input pipeline: TFRecords (ours or the original builder's) → batches for the pretrainer.

Batches are dicts keyed by model names (features.PRETRAINER_INPUTS + features.PRETRAINER_LABELS), int32
[batch, seq] / [batch, predictions], float32 masked_lm_weights, int32 sentence_order_label [batch].

With `online_masking`, stored masks are undone (the original tokens put back at masked_lm_positions; records
may have none): whole-word n-gram masks are drawn in the pipeline, new ones every epoch, from stateless seeds
(seed, element number), so a resumed run sees the masks an uninterrupted one would.
"""

import dataclasses

import tensorflow as tf

from albert_tf import features
from albert_tf.input_options import without_autotuning
from albert_tf.pretraining.data.manifest import Manifest
from albert_tf.pretraining.lanes import Lanes
from albert_tf.text.tokenizer import CLS, MASK, SEP, SPECIAL_IDS


@dataclasses.dataclass(frozen=True)
class OnlineMasking:
    """Masking drawn in tf.data (see module docstring).

    Words come from `token_boundary` (1 where a word starts); records without it mask single tokens.
    Spans of n words, p(n) ∝ 1/n for n ≤ ngram, tile the words; spans are taken in random order while they
    fit in min(max_predictions, max(1, round(length · masked_lm_prob))) tokens, then smaller leftover spans
    fill what remains. Each masked token: [MASK] 80%, kept 10%, a random id ≥ 5 10%.
    """

    vocab_size: int
    masked_lm_prob: float = 0.15
    ngram: int = 3


def parse_spec(max_seq_length, max_predictions_per_seq, masks_required=True):
    """tf.io.parse_single_example spec of the pretraining records (token_boundary defaults to zeros, as
    BERT's builder writes none; with masks_required=False, so do the masked_lm_* features)."""
    spec = {}
    for name, (dtype, length) in features.feature_lengths(max_seq_length, max_predictions_per_seq).items():
        tf_dtype = tf.float32 if dtype == "float32" else tf.int64
        optional = name == features.TOKEN_BOUNDARY or (name in features.MASK_FEATURES and not masks_required)
        default = [0] * length if optional else None
        spec[name] = tf.io.FixedLenFeature([length], tf_dtype, default_value=default)
    return spec


def expand_file_patterns(file_patterns, flag="file_patterns"):
    """Sorted paths matched by a glob, comma-separated globs or a list of them; errors name `flag`."""
    patterns = [file_patterns] if isinstance(file_patterns, str) else list(file_patterns)
    patterns = [p.strip() for item in patterns for p in item.split(",") if p.strip()]
    paths = []
    for pattern in patterns:
        matches = sorted(tf.io.gfile.glob(pattern))
        if not matches:
            raise ValueError(f"{flag}: {pattern!r} matches no file")
        paths.extend(matches)
    if not paths:
        raise ValueError(f"{flag}: no file pattern given")
    return paths


def record_compression(path):
    """The compression of a TFRecord file, "GZIP" or "", told by its first bytes whatever its name."""
    with tf.io.gfile.GFile(path, "rb") as handle:
        return "GZIP" if handle.read(2) == b"\x1f\x8b" else ""


def check_records(file_patterns, max_seq_length, max_predictions_per_seq, flag, need_masks=True):
    """Reads each file's first record; raises ValueError naming the flag, the file and both values when its
    lengths are not the flags' (or it holds no pretraining records).

    An empty file is a shard of a build whose small corpus filled fewer shards than it was asked for: it is
    read as holding nothing. The files together must hold a record (for a build's lanes, albert_tf.pretraining
    .lanes says which lane would have none)."""
    paths = expand_file_patterns(file_patterns, flag=flag)
    empty = []
    for path in paths:
        try:
            record = next(iter(tf.data.TFRecordDataset(path, compression_type=record_compression(path))))
        except StopIteration:
            empty.append(path)
            continue
        except tf.errors.DataLossError as error:
            raise ValueError(f"{flag}: {path} is not a TFRecord file ({error.message})") from None
        example = tf.train.Example.FromString(record.numpy()).features.feature
        expected = {features.INPUT_IDS: (max_seq_length, "--max_seq_length")}
        if need_masks:
            expected[features.MASKED_LM_POSITIONS] = (max_predictions_per_seq, "--max_predictions_per_seq")
        for name, (length, length_flag) in expected.items():
            if name not in example:
                raise ValueError(f"{flag}: {path} has no {name!r} feature: not pretraining records")
            found = len(example[name].int64_list.value)
            if found != length:
                raise ValueError(
                    f"{flag}: {path} was built with {name} of length {found}, but {length_flag}={length}"
                )
    if len(empty) == len(paths):
        raise ValueError(f"{flag}: {', '.join(empty)} {'holds' if len(empty) == 1 else 'hold'} no records")


def load_manifest(path):
    """The Manifest of a create_pretraining_data build (any TensorFlow file system: gs:// too)."""
    with tf.io.gfile.GFile(path, "rb") as handle:
        return Manifest.from_json(handle.read().decode("utf-8"), path)


def pretraining_dataset(
    file_patterns,
    *,
    batch_size,
    max_seq_length,
    max_predictions_per_seq,
    is_training=True,
    input_context=None,
    online_masking=None,
    seed=12345,
    cycle_length=8,
    shuffle_buffer_size=10_000,
    skip_records=0,
):
    """A tf.data.Dataset of pretraining batches.

    Args:
      file_patterns: a glob, comma-separated globs, or a list of them (GZIP files are recognized).
      batch_size: per input pipeline (the per-replica batch under a distribution strategy).
      max_seq_length, max_predictions_per_seq: the records' shapes.
      is_training: shuffle files and records, repeat forever.
      input_context: tf.distribute.InputContext: each pipeline reads its share of files (of records when
        there are fewer files than pipelines).
      online_masking: OnlineMasking, or None to use the records' masks.
      seed: shuffling and online-masking seed.
      skip_records: records of this pipeline to pass over before the first batch: a resumed run continues
        where it stopped (the order, and the online masks, are those of an unskipped pipeline). Skipped
        records are read but not parsed.
    """
    paths = expand_file_patterns(file_patterns)
    compression = record_compression(paths[0])
    files = tf.data.Dataset.from_tensor_slices(paths)
    shard_records = False
    if input_context and input_context.num_input_pipelines > 1:
        if len(paths) >= input_context.num_input_pipelines:
            files = files.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        else:
            shard_records = True
    if is_training:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True).repeat()
    records = files.interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type=compression),
        cycle_length=min(cycle_length, len(paths)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shard_records:
        records = records.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        records = records.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    if skip_records:
        records = records.skip(skip_records)
    indexed = tf.data.Dataset.zip(tf.data.Dataset.counter(skip_records), records)
    return _batches(indexed, batch_size, max_seq_length, max_predictions_per_seq, online_masking, seed,
                    drop_remainder=is_training)  # fmt: skip


def manifest_dataset(
    manifest,
    *,
    global_batch_size,
    batch_size,
    max_seq_length,
    max_predictions_per_seq,
    input_context=None,
    online_masking=None,
    seed=12345,
    start_batch=0,
):
    """Training batches of a build with a manifest, from global batch start_batch on, forever.

    The build's shards are dealt to lanes (albert_tf.pretraining.lanes): each input pipeline reads only the
    shards of its lanes, each epoch in an order drawn from (seed, epoch), and step t's global batch is the
    same for any replica or worker count; a resumed run opens in each lane the shard it stands in.

    Args:
      manifest: a Manifest or the path of its JSON file.
      batch_size: per replica (input_context.get_per_replica_batch_size(G) under a strategy).
    """
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline = input_context.input_pipeline_id if input_context else 0
    if global_batch_size % pipelines:
        raise ValueError(
            f"the global batch {global_batch_size} does not split into {pipelines} input pipelines"
        )
    if isinstance(manifest, str):
        manifest = load_manifest(manifest)
    indexed = Lanes.of(manifest, global_batch_size, seed).dataset(pipelines, pipeline, start_batch)
    return _batches(indexed, batch_size, max_seq_length, max_predictions_per_seq, online_masking, seed,
                    drop_remainder=True)  # fmt: skip


def _batches(
    indexed, batch_size, max_seq_length, max_predictions_per_seq, online_masking, seed, drop_remainder
):
    """(index, serialized record) pairs → parsed (and online-masked) batches under model names."""
    spec = parse_spec(max_seq_length, max_predictions_per_seq, masks_required=online_masking is None)
    dataset = indexed.map(
        lambda index, record: (index, tf.io.parse_single_example(record, spec)), tf.data.AUTOTUNE
    )
    if online_masking is None:
        dataset = dataset.map(lambda index, example: example, tf.data.AUTOTUNE)
    else:
        dataset = dataset.map(_masker(online_masking, max_predictions_per_seq, seed), tf.data.AUTOTUNE)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return without_autotuning(dataset.map(_to_model_names, tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))


def _to_model_names(batch):
    out = {}
    for record_name, model_name in features.RECORD_TO_MODEL.items():
        value = batch[record_name]
        if record_name == features.NEXT_SENTENCE_LABELS:
            value = value[:, 0]
        out[model_name] = value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
    return out


def _masker(options, max_predictions, seed):
    """A map function (index, example) → example with masked_lm_* features drawn (see OnlineMasking)."""
    cls_id, sep_id, mask_id = SPECIAL_IDS[CLS], SPECIAL_IDS[SEP], SPECIAL_IDS[MASK]
    first_ordinary = max(SPECIAL_IDS.values()) + 1
    log_p = tf.math.log(tf.constant([1.0 / n for n in range(1, options.ngram + 1)]))[tf.newaxis, :]

    def mask(index, example):
        seeds = tf.random.experimental.stateless_split(tf.stack([tf.cast(seed, tf.int64), index]), num=5)
        # A built record's input_ids hold its stored masks ([MASK] or a random id at masked_lm_positions):
        # put the original tokens back first, or they would become targets.
        stored = example[features.MASKED_LM_WEIGHTS] > 0
        ids = tf.tensor_scatter_nd_update(
            example[features.INPUT_IDS],
            tf.boolean_mask(example[features.MASKED_LM_POSITIONS], stored)[:, tf.newaxis],
            tf.boolean_mask(example[features.MASKED_LM_IDS], stored),
        )
        length = tf.reduce_sum(tf.cast(example[features.INPUT_MASK], tf.int32))
        candidate = (example[features.INPUT_MASK] > 0) & (ids != cls_id) & (ids != sep_id)
        previous_special = tf.concat([[True], ~candidate[:-1]], axis=0)
        starts = candidate & ((example[features.TOKEN_BOUNDARY] > 0) | previous_special)
        # Records without token_boundary: every token is a word.
        starts = tf.cond(
            tf.reduce_any(example[features.TOKEN_BOUNDARY] > 0), lambda: starts, lambda: candidate
        )
        word_of_token = tf.cumsum(tf.cast(starts, tf.int32)) - 1  # [S], word index of each token
        words = tf.reduce_sum(tf.cast(starts, tf.int32))
        # Tile the words with spans of n words: span k covers words [offset_k, offset_k + n_k).
        sizes = tf.random.stateless_categorical(log_p, tf.shape(ids)[0], seeds[0], dtype=tf.int32)[0] + 1
        offsets = tf.cumsum(sizes, exclusive=True)
        span_of_word = tf.searchsorted(offsets, tf.range(words), side="right") - 1  # [W]
        span_of_token = tf.where(candidate, tf.gather(span_of_word, tf.maximum(word_of_token, 0)), -1)
        spans = tf.shape(ids)[0]
        span_tokens = tf.math.unsorted_segment_sum(
            tf.cast(candidate, tf.int32), tf.maximum(span_of_token, 0), spans
        )
        budget = tf.minimum(
            max_predictions,
            tf.maximum(1, tf.cast(tf.round(tf.cast(length, tf.float32) * options.masked_lm_prob), tf.int32)),
        )
        # Take spans in random order while they fit; then leftover spans that fit in what remains.
        order = tf.argsort(tf.random.stateless_uniform([spans], seeds[1]))
        ordered_tokens = tf.gather(span_tokens, order)
        first = (tf.cumsum(ordered_tokens) <= budget) & (ordered_tokens > 0)
        remaining = budget - tf.reduce_sum(tf.where(first, ordered_tokens, 0))
        fits = ~first & (ordered_tokens > 0) & (ordered_tokens <= remaining)
        second = fits & (tf.cumsum(tf.where(fits, ordered_tokens, 0)) <= remaining)
        chosen_span = tf.scatter_nd(order[:, tf.newaxis], first | second, [spans])
        chosen = candidate & tf.gather(chosen_span, tf.maximum(span_of_token, 0))
        positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)
        labels = tf.gather(ids, positions)
        count = tf.shape(positions)[0]
        draw = tf.random.stateless_uniform([count], seeds[2])
        random_ids = tf.random.stateless_uniform(
            [count], seeds[3], minval=first_ordinary, maxval=options.vocab_size, dtype=tf.int64
        )
        replaced = tf.where(draw < 0.8, tf.cast(mask_id, ids.dtype), tf.where(draw < 0.9, labels, random_ids))
        example = dict(example)
        example[features.INPUT_IDS] = tf.tensor_scatter_nd_update(ids, positions[:, tf.newaxis], replaced)
        pad = max_predictions - count
        example[features.MASKED_LM_POSITIONS] = tf.pad(tf.cast(positions, tf.int64), [[0, pad]])
        example[features.MASKED_LM_IDS] = tf.pad(labels, [[0, pad]])
        example[features.MASKED_LM_WEIGHTS] = tf.pad(tf.ones([count], tf.float32), [[0, pad]])
        for name in features.MASK_FEATURES:
            example[name] = tf.ensure_shape(example[name], [max_predictions])
        return example

    return mask
