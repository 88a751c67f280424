"""The evaluation side of a pretraining run: held-out masked-LM and sentence-order metrics."""

import numpy as np
import tensorflow as tf

from albert_tf import features
from albert_tf.pretraining import losses


class PretrainingEvaluator:
    """Metrics of a model on held-out records, up to max_steps global batches, read once, in order.

    Args:
      strategy: the run's tf.distribute.Strategy (the model's variables live under it).
      model: the AlbertPretrainer.
      dataset_fn: input_context → tf.data.Dataset of per-replica batches (PretrainingInput.eval_dataset).
      max_steps: the most batches evaluated.
      jit_compile: compile each replica's step with XLA (as the run's training step, --jit_compile).
    """

    def __init__(self, strategy, model, dataset_fn, max_steps, jit_compile=False):
        self.strategy, self.dataset_fn, self.max_steps = strategy, dataset_fn, max_steps
        vocab_size = model.encoder.config.vocab_size

        @tf.function(jit_compile=jit_compile, autograph=False)
        def replica_step(batch):
            outputs = model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=False)
            return losses.pretraining_sums(batch, outputs), losses.target_counts(batch, vocab_size)

        @tf.function(autograph=False)
        def step(batch):
            # One reduction each: a collective over the (sums, counts) pair would pack tensors of two shapes.
            return tuple(
                strategy.reduce(tf.distribute.ReduceOp.SUM, value, None)
                for value in strategy.run(replica_step, args=(batch,))
            )

        self._step = step

    def evaluate(self):
        """{masked_lm_loss, masked_lm_accuracy, masked_lm_baseline_accuracy, masked_lm_context_free_accuracy,
        sentence_order_loss, sentence_order_accuracy} (losses.metrics)."""
        totals, counts = np.zeros(len(losses.SUM_NAMES)), 0.0
        for index, batch in enumerate(self.strategy.distribute_datasets_from_function(self.dataset_fn)):
            if index >= self.max_steps:
                break
            sums, batch_counts = self._step(batch)
            totals, counts = totals + sums.numpy(), counts + batch_counts.numpy()
        results = losses.metrics(totals, counts)
        del results["loss"]
        return results
