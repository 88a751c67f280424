"""Raw text → batches of the encoder's inputs, in tf.data: the one way text is fed to a classifier, by
`run_classifier` (finetuning.glue.classification_dataset) and by `fit`, `evaluate` and `predict` on strings.

Tokenization runs in the pipeline with the in-graph tokenizer the export uses, so training and serving
tokenize alike. Each batch is padded to its longest example rounded up to a multiple of `pad_to_multiple`
(at most seq_length): short texts compute less, and few distinct widths are traced.
"""

import numpy as np
import tensorflow as tf

from albert_tf.input_options import without_autotuning
from albert_tf.text.tf_tokenizer import CHOICE_TOKENS, InGraphTokenizer

PAD_TO_MULTIPLE = 32


def repeat_from(batches, start):
    """`batches` (one epoch) unchanged when start is None, else its epochs repeated without end from batch
    number `start` on (a resumed run's input position)."""
    return batches if start is None else batches.repeat().skip(start)


def encode(tokenizer: InGraphTokenizer, seq_length, texts, texts_b=None, pad_to_multiple=PAD_TO_MULTIPLE):
    """tf.string [batch] (and [batch] for pairs) → dict of int32 [batch, width]: input_word_ids,
    input_mask, input_type_ids, packed `[CLS] A [SEP] (B [SEP])` and truncated to seq_length."""
    ids_b = None if texts_b is None else tokenizer.tokenize(texts_b)
    return tokenizer.pack(tokenizer.tokenize(texts), ids_b, seq_length, pad_to_multiple)


def text_dataset(
    texts, texts_b, labels, tokenizer, seq_length, batch_size, is_training=False, seed=12345,
    pad_to_multiple=PAD_TO_MULTIPLE, start=None, drop_remainder=None,
):  # fmt: skip
    """(features, label) batches (features alone without labels) from in-memory texts.

    Args:
      texts, texts_b: sequences of str of one length (texts_b None: single texts).
      labels: a sequence of int class indices or float scores, or None.
      tokenizer: an InGraphTokenizer.
      is_training: shuffle every example, reshuffled each epoch (seed None: from TensorFlow's global seed),
        and keep only full batches; otherwise the order and the last partial batch are kept.
      drop_remainder: whether the last partial batch is left out (default: is_training).
      start: with is_training, the epochs repeat without end from batch number `start` on (a resumed run's
        input position: the batches an uninterrupted run reads from there, the skipped ones not tokenized).
    """
    columns = {"text_a": list(texts)}
    if texts_b is not None:
        columns["text_b"] = list(texts_b)
    if labels is not None:
        labels = np.asarray(labels)
        columns["label"] = tf.constant(labels, tf.float32 if labels.dtype.kind == "f" else tf.int32)

    def to_features(batch):
        return encode(tokenizer, seq_length, batch["text_a"], batch.get("text_b"), pad_to_multiple)

    return _batched(columns, to_features, batch_size, is_training, seed, start, drop_remainder)


def encode_choices(tokenizer: InGraphTokenizer, seq_length, passages, choices, num_choices):
    """tf.string passages [batch] and choices [batch, num_choices] → dict of int32 [batch, num_choices,
    seq_length]: `[CLS] passage [SEP] choice [SEP]` per choice, as the original RACE code packs them: the
    choice (question and option) keeps its last CHOICE_TOKENS tokens, the passage is cut to the room left."""
    passages = tf.reshape(tf.repeat(passages[:, None], num_choices, axis=1), [-1])
    ids_b = tokenizer.tokenize(tf.reshape(choices, [-1]))
    packed = tokenizer.pack(tokenizer.tokenize(passages), ids_b, seq_length, keep_b_tail=CHOICE_TOKENS)
    return {name: tf.reshape(value, [-1, num_choices, seq_length]) for name, value in packed.items()}


def choice_dataset(
    passages, choices, labels, tokenizer, seq_length, batch_size, is_training=False, seed=12345, start=None,
    drop_remainder=None,
):  # fmt: skip
    """(features, label) batches (features alone without labels) of multiple-choice questions: passages a
    sequence of str, choices one sequence of num_choices str per passage (each the question with one
    option), labels int choice indices or None. Features int32 [batch, num_choices, seq_length].
    is_training, seed, start, drop_remainder: as text_dataset's."""
    columns = {"passage": list(passages), "choices": [list(row) for row in choices]}
    num_choices = len(columns["choices"][0])
    if labels is not None:
        columns["label"] = tf.constant(np.asarray(labels), tf.int32)

    def to_features(batch):
        return encode_choices(tokenizer, seq_length, batch["passage"], batch["choices"], num_choices)

    return _batched(columns, to_features, batch_size, is_training, seed, start, drop_remainder)


def _batched(columns, to_features, batch_size, is_training, seed, start, drop_remainder):
    """Batches of the in-memory columns (dict of equal-length sequences; "label" passes through), their
    features made by to_features(batch); the rest as text_dataset's arguments."""
    dataset = tf.data.Dataset.from_tensor_slices(columns)
    if is_training:
        count = len(next(iter(columns.values())))
        dataset = dataset.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    drop_remainder = is_training if drop_remainder is None else drop_remainder
    dataset = repeat_from(dataset.batch(batch_size, drop_remainder=drop_remainder), start)

    def with_label(batch):
        features = to_features(batch)
        return (features, batch["label"]) if "label" in batch else features

    batches = dataset.map(with_label, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    return without_autotuning(batches)


def layout(dataset):
    """(pair, labelled) of a tf.data.Dataset of raw-text batches, or None when its elements are not text.
    Elements: `texts`, `(texts, texts_b)`, `(texts, labels)` or `((texts, texts_b), labels)`, each text
    tf.string [batch]."""

    def strings(spec):
        return isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string

    spec = dataset.element_spec
    if strings(spec):
        return False, False
    if not isinstance(spec, tuple) or len(spec) != 2:
        return None
    if strings(spec[0]) and strings(spec[1]):
        return True, False
    if strings(spec[0]):
        return False, True
    if isinstance(spec[0], tuple) and len(spec[0]) == 2 and all(strings(part) for part in spec[0]):
        return True, True
    return None


def encode_batches(dataset, tokenizer, seq_length, pad_to_multiple=PAD_TO_MULTIPLE):
    """A tf.data.Dataset of raw-text batches (see `layout`) → of the encoder's inputs; labels pass
    through."""
    pair, labelled = layout(dataset)

    def to_features(*element):
        # map unpacks the element: (texts,), (texts, texts_b), (texts, labels) or ((texts, texts_b), labels).
        texts, labels = (element[0], element[1:]) if labelled else (element if pair else element[0], ())
        texts_b = None
        if pair:
            texts, texts_b = texts
        features = encode(tokenizer, seq_length, texts, texts_b, pad_to_multiple)
        return (features, *labels) if labels else features

    return dataset.map(to_features, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
