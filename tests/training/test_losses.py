"""Pretraining loss sums against a hand computation in NumPy."""

import numpy as np

from albert_tf.training import losses


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_sums_loss_and_metrics_match_numpy():
    rng = np.random.default_rng(3)
    mlm_logits = rng.normal(size=(2, 3, 11)).astype("float32")
    sop_logits = rng.normal(size=(2, 2)).astype("float32")
    ids = np.array([[1, 4, 0], [7, 2, 9]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], "float32")  # one padded prediction
    labels = np.array([1, 0])
    batch = {"masked_lm_ids": ids, "masked_lm_weights": weights, "sentence_order_label": labels}
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
    ]
    np.testing.assert_allclose(sums, expected, rtol=1e-6)
    # The original's loss: Σ(w·CE)/(Σw + 1e-5) + mean SOP CE; a replica's share divides by global totals.
    total = float(losses.pretraining_loss(sums, 5.0, 2.0))
    np.testing.assert_allclose(total, expected[0] / (5.0 + 1e-5) + expected[3] / 2.0, rtol=1e-6)
    reported = losses.metrics(sums)
    np.testing.assert_allclose(reported["masked_lm_accuracy"], expected[2] / 5.0)
    np.testing.assert_allclose(reported["loss"], total, rtol=1e-6)


def test_target_counts_give_the_most_frequent_targets_share():
    ids = np.array([[5, 5, 0], [2, 5, 2], [9, 2, 5]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], "float32")  # padding is id 0
    counts = np.asarray(losses.target_counts({"masked_lm_ids": ids, "masked_lm_weights": weights}, 11))
    np.testing.assert_array_equal(counts, [0, 0, 2, 0, 0, 3, 0, 0, 0, 1, 0])  # by hand: 5 ×3, 2 ×2, 9 ×1
    reported = losses.metrics([0.0, 6.0, 2.0, 0.0, 0.0, 3.0], counts)
    assert reported["masked_lm_baseline_accuracy"] == 3 / 6 and reported["masked_lm_accuracy"] == 2 / 6
    assert "masked_lm_baseline_accuracy" not in losses.metrics([0.0, 6.0, 2.0, 0.0, 0.0, 3.0])
