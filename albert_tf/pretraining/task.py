"""What a pretraining run trains, for the training engine: the pretrainer, its optimizer, its records and the
original's losses written as sums.

The loss is the original's: masked LM = Σ(w · CE) / (Σw + 1e-5) over the global batch's masked positions (Σw
summed across replicas before the step: `replica_totals`), plus the sentence-order cross-entropy over the
global batch (losses.py).
"""

import math

import keras
import tensorflow as tf

from albert_tf import features
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.pretraining import losses
from albert_tf.pretraining.evaluator import PretrainingEvaluator
from albert_tf.training.engine import Task
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay


class PretrainingTask(Task):
    """Builds the model and optimizer under the strategy's scope.

    Args:
      settings: PretrainingSettings.
      strategy: the run's tf.distribute.Strategy.
      config: the AlbertConfig.
      inputs: PretrainingInput (training and held-out records).
    """

    name = "run_pretraining"
    # The best held-out accuracy's weights are kept apart (checkpoints/best); the run ends with its last.
    best_metric = "masked_lm_accuracy"
    ends_with_best = False

    def __init__(self, settings, strategy, config, inputs):
        s = self.settings = settings
        self.strategy, self.inputs = strategy, inputs
        with strategy.scope():
            self.model = AlbertPretrainer(AlbertEncoder(config, remat=s.remat))
            self.schedule = WarmupPolynomialDecay(
                s.learning_rate, s.num_train_steps, s.num_warmup_steps, power=s.poly_power
            )
            self.optimizer = create_optimizer(s.optimizer, self.schedule)
            self.optimizer.build(self.model.trainable_variables)
        self.vocab_size = config.vocab_size
        self.evaluator = None
        if inputs.eval_files:
            self.evaluator = PretrainingEvaluator(
                strategy, self.model, inputs.eval_dataset, s.max_eval_steps, jit_compile=s.jit_compile
            )

    @property
    def statistics_spec(self):
        return {
            "sums": tf.TensorSpec([len(losses.SUM_NAMES)]),
            "targets": tf.TensorSpec([2, self.vocab_size]),
        }

    @property
    def chance_loss(self):
        # A uniform guess: the masked token among the vocabulary, and the sentence order.
        return math.log(self.vocab_size) + math.log(2)

    def train_input(self, strategy, start):
        return strategy.distribute_datasets_from_function(
            lambda context: self.inputs.train_dataset(context, start)
        )

    def replica_totals(self, batch):
        # The masked-LM loss divides by the whole global batch's weight sum.
        return tf.reduce_sum(batch[features.MASKED_LM_WEIGHTS])

    def statistics(self, model, batch, training):
        outputs = model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=training)
        return {
            "sums": losses.pretraining_sums(batch, outputs),
            "targets": losses.target_counts(batch, self.vocab_size),
        }

    def loss(self, statistics, totals, global_batch):
        return losses.pretraining_loss(statistics["sums"], totals, global_batch)

    def progress(self, statistics):
        metrics = losses.metrics(statistics["sums"], statistics["targets"])
        text = (
            f"loss {metrics['loss']:.4f} | mlm_acc {metrics['masked_lm_accuracy']:.4f} "
            f"(most frequent token {metrics['masked_lm_baseline_accuracy']:.4f}, "
            f"without context {metrics['masked_lm_context_free_accuracy']:.4f}) | "
            f"sop_acc {metrics['sentence_order_accuracy']:.4f}"
        )
        return metrics, text

    def evaluate(self):
        return self.evaluator.evaluate() if self.evaluator else None

    def collapsed(self, metrics, best):
        return baseline_collapse(metrics, best)

    def failed_read(self, batch):
        return self.inputs.damaged_shard(batch)

    def load_weights_of(self, pretrainer, source):
        """Copies a converted pretrainer's weights into the model; ValueError naming source on a mismatch."""
        ours, theirs = self.model.weights, pretrainer.weights
        mismatch = len(ours) != len(theirs) or any(
            tuple(a.shape) != tuple(b.shape) for a, b in zip(ours, theirs, strict=True)
        )
        if mismatch:
            raise ValueError(
                f"--init_checkpoint={source} holds another architecture than --albert_config_file "
                f"({pretrainer.encoder.config.to_dict()} vs {self.model.encoder.config.to_dict()})"
            )
        self.model.set_weights([keras.ops.convert_to_numpy(w) for w in theirs])


def baseline_collapse(metrics, best):
    """Why held-out metrics look collapsed, or None: a masked-LM accuracy that was well above the most
    frequent token's (its best at least 1.5x) and is back within 1.1x of it."""
    accuracy, baseline = metrics["masked_lm_accuracy"], metrics["masked_lm_baseline_accuracy"]
    if best >= 1.5 * baseline and accuracy <= 1.1 * baseline:
        return (
            f"held-out masked-LM accuracy {accuracy:.4f} is back at the most frequent token's {baseline:.4f} "
            f"(its best: {best:.4f})"
        )
    return None
