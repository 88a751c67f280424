"""Sub-batches sorted by length (albert_tf/serving/sub_batches.py) with the tiny encoder."""

import numpy as np
import tensorflow as tf

from albert_tf.models import AlbertEncoder
from albert_tf.serving.sub_batches import run_by_length
from tests.helpers import tiny_config

INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
LENGTHS = [9, 2, 16, 4, 12, 3, 7]  # real tokens per row, in request order; the batch is 16 wide


def features(lengths, width=16, seed=3):
    rng = np.random.default_rng(seed)
    mask = (np.arange(width)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    return {
        "input_word_ids": rng.integers(1, 97, (len(lengths), width), dtype=np.int32) * mask,
        "input_mask": mask,
        "input_type_ids": (np.arange(width)[None, :] >= 2).astype(np.int32) * mask,
    }


def test_rows_run_sorted_by_length_in_sub_batches_padded_to_their_longest():
    encoder = AlbertEncoder(tiny_config())
    batch = features(LENGTHS)
    widths = []

    def recorded(chunk):  # the real encoder; the loop runs eagerly here, so each sub-batch passes by
        widths.append(tuple(chunk["input_word_ids"].shape))
        return encoder(chunk)

    got = run_by_length(
        recorded, batch, tf.constant(LENGTHS), 3, ("pooled_output", "sequence_output"), INPUTS,
        per_token=("sequence_output",),
    )  # fmt: skip
    # Sorted: 2 3 4 | 7 9 12 | 16, each sub-batch as wide as its longest row.
    assert widths == [(3, 4), (3, 12), (1, 16)]
    expected = encoder(batch)
    np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"], atol=1e-5)
    assert got["sequence_output"].shape == (7, 16, 14)
    for row, length in enumerate(LENGTHS):  # in request order
        np.testing.assert_allclose(
            got["sequence_output"][row, :length], expected["sequence_output"][row, :length], atol=1e-5
        )
    for row in (1, 5, 3):  # lengths 2, 3, 4: the first sub-batch ran 4 wide, and is 0 from there on
        assert not np.any(got["sequence_output"][row, 4:]) and np.all(got["sequence_output"][row, :2])


def test_whole_batch_at_once_and_an_empty_batch():
    encoder = AlbertEncoder(tiny_config())
    widths = []

    def recorded(chunk):
        widths.append(tuple(chunk["input_word_ids"].shape))
        return encoder(chunk)

    batch = features(LENGTHS)
    got = run_by_length(recorded, batch, tf.constant(LENGTHS), 0, ("pooled_output",), INPUTS)
    assert widths == [(7, 16)]
    np.testing.assert_allclose(got["pooled_output"], encoder(batch)["pooled_output"], atol=1e-5)
    widths.clear()
    empty = run_by_length(recorded, features([]), tf.zeros([0], tf.int32), 3, ("pooled_output",), INPUTS)
    assert widths == [(0, 1)] and empty["pooled_output"].shape == (0, 14)
