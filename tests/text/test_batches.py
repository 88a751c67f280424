"""Raw text → batches of the encoder's inputs in tf.data (text.batches), checked against the Python
tokenizer's packing on a few short texts."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import batches
from albert_tf.text.tf_tokenizer import InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_SPM

TEXTS = ["A fine film, 1,000 times.", "Dull.", "The interpreter prints an error message.", "Yes."]
SECOND = ["I liked it.", "Meh", "It stops.", "No."]


@pytest.fixture
def tokenizers():
    """The in-graph tokenizer (one per test: its SentencePiece resource lives in the test's context) and the
    Python one."""
    return InGraphTokenizer(str(SAMPLE_SPM)), AlbertTokenizer(SAMPLE_SPM)


def rows(features):
    return {name: value.numpy().tolist() for name, value in features.items()}


def packed(python, texts, texts_b, seq_length, width):
    """The Python tokenizer's packing of each example, cut to the batch's width."""
    out = {"input_word_ids": [], "input_mask": [], "input_type_ids": []}
    for index, text in enumerate(texts):
        inputs = python.pack(text, None if texts_b is None else texts_b[index], seq_length)
        for name in out:
            out[name].append(getattr(inputs, name)[:width])
    return out


def test_batches_in_order_padded_to_a_multiple_of_their_longest_example(tokenizers):
    graph, python = tokenizers
    found = list(
        batches.text_dataset(TEXTS, None, None, graph, seq_length=32, batch_size=3, pad_to_multiple=4)
    )
    assert [len(batch["input_word_ids"]) for batch in found] == [3, 1]  # the last, partial batch kept
    longest = max(len(python.encode(text)) for text in TEXTS[:3]) + 2
    width = -(-longest // 4) * 4
    assert rows(found[0]) == packed(python, TEXTS[:3], None, 32, width)
    assert rows(found[1]) == packed(python, TEXTS[3:], None, 32, 4)  # "Yes." alone: [CLS] yes . [SEP]
    default = next(iter(batches.text_dataset(TEXTS, None, None, graph, seq_length=48, batch_size=4)))
    assert default["input_word_ids"].shape == (4, 32)  # PAD_TO_MULTIPLE
    assert default["input_word_ids"].dtype == tf.int32


def test_pairs_and_labels_pass_through_with_their_types(tokenizers):
    graph, python = tokenizers
    features, labels = next(iter(batches.text_dataset(TEXTS, SECOND, [1, 0, 1, 1], graph, 16, batch_size=4)))
    assert rows(features) == packed(python, TEXTS, SECOND, 16, 16)
    assert labels.dtype == tf.int32 and labels.numpy().tolist() == [1, 0, 1, 1]
    _, scores = next(iter(batches.text_dataset(TEXTS, SECOND, [0.5, 2.0, 1.0, 4.5], graph, 16, batch_size=4)))
    assert scores.dtype == tf.float32 and scores.numpy().tolist() == [0.5, 2.0, 1.0, 4.5]


def test_training_shuffles_by_the_seed_keeps_full_batches_and_resumes_at_a_batch(tokenizers):
    graph, _ = tokenizers
    texts = [f"text number {i}" for i in range(10)]

    def firsts(dataset, count):
        return [batch[0]["input_word_ids"][:, 3].numpy().tolist() for batch in dataset.take(count)]

    def training(**kwargs):
        return batches.text_dataset(texts, None, list(range(10)), graph, 16, batch_size=4, is_training=True,
                                    **kwargs)  # fmt: skip

    epoch = list(training(seed=7))
    assert [len(labels) for _, labels in epoch] == [4, 4]  # the last 2 examples make no batch
    labels = [label for _, batch_labels in epoch for label in batch_labels.numpy().tolist()]
    assert labels != sorted(labels) and len(set(labels)) == 8  # shuffled, each example once
    assert [b.numpy().tolist() for _, b in training(seed=7)] == [b.numpy().tolist() for _, b in epoch]
    assert [len(b) for _, b in training(seed=7, drop_remainder=False)] == [4, 4, 2]
    # From batch 3 on: the batches an uninterrupted run reads there, epochs repeating without end.
    uninterrupted = firsts(training(seed=7, start=0), 6)
    assert firsts(training(seed=7, start=3), 3) == uninterrupted[3:]
    # Evaluation: in order, the partial batch kept, unless asked.
    evaluation = batches.text_dataset(texts, None, list(range(10)), graph, 16, batch_size=4)
    assert [b.numpy().tolist() for _, b in evaluation] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    dropped = batches.text_dataset(texts, None, list(range(10)), graph, 16, batch_size=4, drop_remainder=True)
    assert [len(b) for _, b in dropped] == [4, 4]


def test_repeat_from_is_one_epoch_or_epochs_from_a_batch():
    dataset = tf.data.Dataset.range(3)
    assert list(batches.repeat_from(dataset, None).as_numpy_iterator()) == [0, 1, 2]
    assert list(batches.repeat_from(dataset, 2).take(4).as_numpy_iterator()) == [2, 0, 1, 2]


def test_choices_are_packed_after_their_passage_and_keep_their_tail(tokenizers):
    graph, python = tokenizers
    passages = ["The cat sat on the mat all day.", "Rain fell."]
    choices = [["Who sat? The cat", "Who sat? A dog"], ["What fell? Rain", "What fell? Snow"]]
    features, labels = next(iter(batches.choice_dataset(passages, choices, [0, 1], graph, 24, batch_size=2)))
    assert features["input_word_ids"].shape == (2, 2, 24) and labels.numpy().tolist() == [0, 1]
    for i, passage in enumerate(passages):
        for j, choice in enumerate(choices[i]):
            expected = python.pack(passage, choice, 24)
            assert features["input_word_ids"][i, j].numpy().tolist() == expected.input_word_ids
            assert features["input_type_ids"][i, j].numpy().tolist() == expected.input_type_ids
    unlabelled = next(iter(batches.choice_dataset(passages, choices, None, graph, 24, batch_size=2)))
    assert set(unlabelled) == {"input_word_ids", "input_mask", "input_type_ids"}
    # A long choice keeps its last tokens and the passage gets the room left (RACE's packing).
    long_choice = " ".join(["word"] * 10) + " end"
    ids = batches.encode_choices(graph, 8, tf.constant(["a passage"]), tf.constant([[long_choice]]), 1)
    tail = python.encode(long_choice)[-(8 - 3) :]
    assert ids["input_word_ids"].numpy().tolist() == [[[2, 3, *tail, 3]]]


@pytest.mark.parametrize(
    "element, expected",
    [
        (["a"], (False, False)),
        ((["a"], ["b"]), (True, False)),
        ((["a"], [1]), (False, True)),
        (((["a"], ["b"]), [1]), (True, True)),
        ([1], None),
        ((["a"], ["b"], ["c"]), None),
        (((["a"], [1]), [1]), None),
        (((["a"], ["b"], ["c"]), [1]), None),
    ],
)
def test_layout_of_raw_text_datasets(element, expected):
    assert batches.layout(tf.data.Dataset.from_tensors(element)) == expected


def test_datasets_of_raw_text_become_the_encoders_inputs_with_their_labels(tokenizers):
    graph, python = tokenizers
    texts, pairs = tf.constant(TEXTS[:2]), tf.constant(SECOND[:2])
    labels = tf.constant([1, 0])
    single = next(iter(batches.encode_batches(tf.data.Dataset.from_tensors(texts), graph, 16)))
    assert rows(single) == packed(python, TEXTS[:2], None, 16, 16)
    paired, got = next(iter(batches.encode_batches(tf.data.Dataset.from_tensors(((texts, pairs), labels)),
                                                   graph, 16)))  # fmt: skip
    assert rows(paired) == packed(python, TEXTS[:2], SECOND[:2], 16, 16) and got.numpy().tolist() == [1, 0]
    _, got = next(iter(batches.encode_batches(tf.data.Dataset.from_tensors((texts, labels)), graph, 16)))
    assert got.numpy().tolist() == [1, 0]
    narrow = next(
        iter(batches.encode_batches(tf.data.Dataset.from_tensors(texts), graph, 16, pad_to_multiple=2))
    )
    width = max(len(python.encode(text)) for text in TEXTS[:2]) + 2
    assert narrow["input_word_ids"].shape[1] == width + width % 2
    assert np.array_equal(
        narrow["input_mask"].numpy().sum(axis=1), [len(python.encode(t)) + 2 for t in TEXTS[:2]]
    )
