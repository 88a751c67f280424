"""Pretraining loss sums against a hand computation in NumPy."""

import numpy as np

from albert_tf.pretraining import losses


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_sums_loss_and_metrics_match_numpy():
    rng = np.random.default_rng(3)
    mlm_logits = rng.normal(size=(2, 3, 11)).astype("float32")
    sop_logits = rng.normal(size=(2, 2)).astype("float32")
    ids = np.array([[1, 6, 0], [7, 2, 9]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], "float32")  # one padded prediction
    labels = np.array([1, 0])
    # What the inputs show at the masked positions 1, 2, 3: row 0 [MASK] (4), 6 kept, padding (0, equal to
    # its target but of weight 0); row 1 7 kept, [MASK], a random 5 for 9. Kept weight: 2.
    inputs = np.array([[2, 4, 6, 0], [2, 7, 4, 5]])
    positions = np.array([[1, 2, 3], [1, 2, 3]])
    batch = {"masked_lm_ids": ids, "masked_lm_weights": weights, "sentence_order_label": labels,
             "input_word_ids": inputs, "masked_lm_positions": positions}  # fmt: skip
    sums = np.asarray(losses.pretraining_sums(batch, {"mlm_logits": mlm_logits, "sop_logits": sop_logits}))

    mlm_ce = -np.take_along_axis(log_softmax(mlm_logits.astype(np.float64)), ids[..., None], -1)[..., 0]
    sop_ce = -np.take_along_axis(log_softmax(sop_logits.astype(np.float64)), labels[:, None], -1)[:, 0]
    expected = [
        (weights * mlm_ce).sum(),
        5.0,
        (weights * (mlm_logits.argmax(-1) == ids)).sum(),
        sop_ce.sum(),
        (sop_logits.argmax(-1) == labels).sum(),
        2.0,
        2.0,
    ]
    np.testing.assert_allclose(sums, expected, rtol=1e-6)
    # The original's loss: Σ(w·CE)/(Σw + 1e-5) + mean SOP CE; a replica's share divides by global totals.
    total = float(losses.pretraining_loss(sums, 5.0, 2.0))
    np.testing.assert_allclose(total, expected[0] / (5.0 + 1e-5) + expected[3] / 2.0, rtol=1e-6)
    reported = losses.metrics(sums)
    np.testing.assert_allclose(reported["masked_lm_accuracy"], expected[2] / 5.0)
    np.testing.assert_allclose(reported["masked_lm_loss"], expected[0] / (5.0 + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(reported["sentence_order_accuracy"], expected[4] / 2.0)
    np.testing.assert_allclose(reported["sentence_order_loss"], expected[3] / 2.0, rtol=1e-6)
    np.testing.assert_allclose(reported["loss"], total, rtol=1e-6)


def test_target_counts_give_the_most_frequent_and_the_context_free_baselines():
    ids = np.array([[5, 5, 0], [2, 5, 2], [9, 2, 5]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], "float32")  # padding is id 0
    # Inputs at the masked positions 1, 2, 3 ([MASK] is 4): row 0 5 kept, [MASK], pad; row 1 [MASK], [MASK],
    # 2 kept; row 2 [MASK], (weight 0), (weight 0).
    inputs = np.array([[2, 5, 4, 0], [2, 4, 4, 2], [2, 4, 4, 4]])
    batch = {"masked_lm_ids": ids, "masked_lm_weights": weights, "input_word_ids": inputs,
             "masked_lm_positions": np.array([[1, 2, 3]] * 3)}  # fmt: skip
    counts = np.asarray(losses.target_counts(batch, 11))
    np.testing.assert_array_equal(counts[0], [0, 0, 2, 0, 0, 3, 0, 0, 0, 1, 0])  # by hand: 5 ×3, 2 ×2, 9 ×1
    np.testing.assert_array_equal(counts[1], [0, 0, 1, 0, 0, 2, 0, 0, 0, 1, 0])  # at [MASK]: 5, 2, 5, 9
    sums = [0.0, 6.0, 2.0, 0.0, 0.0, 3.0, 2.0]  # 2 kept: (0, 1) and (1, 3)
    reported = losses.metrics(sums, counts)
    assert reported["masked_lm_baseline_accuracy"] == 3 / 6 and reported["masked_lm_accuracy"] == 2 / 6
    # Copy the 2 kept inputs, say 5 (the most frequent target shown as [MASK]) at the 4 [MASK]s: 2 + 2 right.
    assert reported["masked_lm_context_free_accuracy"] == 4 / 6
    assert "masked_lm_baseline_accuracy" not in losses.metrics(sums)
