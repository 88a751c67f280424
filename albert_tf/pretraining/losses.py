"""Masked-LM and sentence-order losses, as sums that add up across replicas and micro-batches.

The original losses: masked LM = Σ(w · CE) / (Σw + 1e-5) over the batch's masked positions, sentence order
= mean CE over the batch, total = their sum. Written as sums so that the whole (global) batch's loss is the
sum of each replica's (and each micro-batch's) contribution, whatever the replica count.
"""

from keras import ops

from albert_tf.text.tokenizer import MASK, SPECIAL_IDS

# Order of the entries of a sums vector. mlm_kept: the weight of masked positions whose input still shows
# the target (the builder's 10% "kept" positions), which a model can get right by copying its input.
SUM_NAMES = (
    "mlm_loss_sum", "mlm_weight", "mlm_correct", "sop_loss_sum", "sop_correct", "examples", "mlm_kept"
)  # fmt: skip
MLM_EPSILON = 1e-5


def pretraining_sums(batch, outputs):
    """float32 [7] sums (SUM_NAMES) over a batch.

    Args:
        batch: dict with input_word_ids int [B, T], masked_lm_positions, masked_lm_ids int [B, P],
            masked_lm_weights float [B, P] and sentence_order_label int [B].
        outputs: the pretrainer's dict: mlm_logits [B, P, V], sop_logits [B, 2].
    """
    weights = ops.cast(batch["masked_lm_weights"], "float32")
    mlm_logits = ops.cast(outputs["mlm_logits"], "float32")
    mlm_labels = batch["masked_lm_ids"]
    mlm_ce = ops.sparse_categorical_crossentropy(mlm_labels, mlm_logits, from_logits=True)
    mlm_hit = ops.cast(ops.equal(ops.argmax(mlm_logits, axis=-1), ops.cast(mlm_labels, "int32")), "float32")
    sop_logits = ops.cast(outputs["sop_logits"], "float32")
    sop_labels = batch["sentence_order_label"]
    sop_ce = ops.sparse_categorical_crossentropy(sop_labels, sop_logits, from_logits=True)
    sop_hit = ops.cast(ops.equal(ops.argmax(sop_logits, axis=-1), ops.cast(sop_labels, "int32")), "float32")
    return ops.stack(
        [
            ops.sum(weights * mlm_ce),
            ops.sum(weights),
            ops.sum(weights * mlm_hit),
            ops.sum(sop_ce),
            ops.sum(sop_hit),
            ops.cast(ops.shape(sop_labels)[0], "float32"),
            ops.sum(weights * ops.cast(ops.equal(_inputs_at_targets(batch), mlm_labels), "float32")),
        ]
    )


def _inputs_at_targets(batch):
    """int [B, P]: the input id at each masked position ([MASK], a random id, or the target kept)."""
    positions = ops.cast(batch["masked_lm_positions"], "int32")
    return ops.take_along_axis(ops.cast(batch["input_word_ids"], "int32"), positions, axis=1)


def pretraining_loss(sums, mlm_weight_total, global_batch_size):
    """This batch's share of the global loss: MLM over the global weight sum + SOP over the global batch."""
    return sums[0] / (mlm_weight_total + MLM_EPSILON) + sums[3] / global_batch_size


def target_counts(batch, vocab_size):
    """float32 [2, vocab_size]: the masked-LM weight of each target id in a batch (histograms of targets),
    row 0 over every masked position, row 1 over the positions whose input is [MASK].

    Row 0's largest entry over its sum is the accuracy of always predicting the most frequent target token.
    Row 1 gives what a model that ignores the context reaches (see `metrics`).
    """
    ids = ops.reshape(ops.cast(batch["masked_lm_ids"], "int32"), [-1])
    weights = ops.reshape(ops.cast(batch["masked_lm_weights"], "float32"), [-1])
    at_mask = ops.cast(ops.equal(ops.reshape(_inputs_at_targets(batch), [-1]), SPECIAL_IDS[MASK]), "float32")
    return ops.stack(
        [
            ops.segment_sum(weights, ids, num_segments=vocab_size),
            ops.segment_sum(weights * at_mask, ids, num_segments=vocab_size),
        ]
    )


def metrics(sums, counts=None):
    """The reported metrics from sums (numbers, e.g. totals over steps or an evaluation), and from the target
    counts (target_counts summed alike) two baselines of masked LM:

    masked_lm_baseline_accuracy: always predicting the most frequent target token.
    masked_lm_context_free_accuracy: the best a model reaches without looking at the context: at a position
        whose input is [MASK], the most frequent target of such positions; elsewhere, its own input token
        (right at the kept positions, wrong at the randomly replaced ones). A model at this figure has
        learned token frequencies and to copy its input, nothing of the context.
    """
    mlm_loss_sum, mlm_weight, mlm_correct, sop_loss_sum, sop_correct, examples, mlm_kept = (
        float(x) for x in sums
    )
    masked_lm_loss = mlm_loss_sum / (mlm_weight + MLM_EPSILON)
    sentence_order_loss = sop_loss_sum / max(examples, 1.0)
    results = {
        "loss": masked_lm_loss + sentence_order_loss,
        "masked_lm_loss": masked_lm_loss,
        "masked_lm_accuracy": mlm_correct / max(mlm_weight, MLM_EPSILON),
        "sentence_order_loss": sentence_order_loss,
        "sentence_order_accuracy": sop_correct / max(examples, 1.0),
    }
    if counts is not None:
        every, at_mask = counts
        results["masked_lm_baseline_accuracy"] = float(max(every)) / max(float(sum(every)), MLM_EPSILON)
        results["masked_lm_context_free_accuracy"] = (mlm_kept + float(max(at_mask))) / max(
            mlm_weight, MLM_EPSILON
        )
    return results
