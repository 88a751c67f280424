"""The training side of a pretraining run: the model, its optimizer, and the compiled loop of steps.

One step, on every replica: the replica's share of the global batch, split into micro-batches
(gradient_accumulation_steps) whose gradients add up; the loss is the original's written as sums over the
global batch, so the update does not depend on the replica count; the gradients are summed across replicas
here, explicitly, then clipped to global norm 1.0 and applied (`AdamWeightDecay.apply_summed`). Under
float16 the loss is scaled (loss_scale.DynamicLossScale) and a step whose summed gradients are not finite is
skipped on every replica alike.
"""

import keras
import tensorflow as tf

from albert_tf import features
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.pretraining import losses
from albert_tf.training import replicated_update
from albert_tf.training.loss_scale import DynamicLossScale
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay


class PretrainingTrainer:
    """Builds the model and optimizer under the strategy; `loop(iterator, steps)` trains.

    Attributes:
      model: the AlbertPretrainer.
      optimizer: Lamb or AdamWeightDecay; `optimizer.iterations` counts applied updates: the run's step,
        which the learning-rate schedule follows.
      batches: int64 variable, the global batches consumed (the input position; more than the step when
        float16 steps were skipped).
      loss_scale: DynamicLossScale under float16, else None.
    """

    def __init__(self, settings, strategy, config):
        s = settings
        self.settings, self.strategy = s, strategy
        with strategy.scope():
            self.model = AlbertPretrainer(AlbertEncoder(config))
            self.schedule = WarmupPolynomialDecay(
                s.learning_rate, s.num_train_steps, s.num_warmup_steps, power=s.poly_power
            )
            self.optimizer = create_optimizer(s.optimizer, self.schedule)
            self.optimizer.build(self.model.trainable_variables)
            self.batches = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches")
            self.loss_scale = DynamicLossScale() if s.mixed_precision == "float16" else None
        self.loop = self._make_loop()

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def checkpointed(self):
        """What a training checkpoint holds, by name."""
        # Dropout's seed-generator states are model variables that the model's checkpoint graph does not
        # reach; they are saved by hand, or a resumed run would draw other dropout masks.
        seeds = [variable.value for variable in self.model.non_trainable_variables]
        state = {"model": self.model, "optimizer": self.optimizer, "batches": self.batches, "seeds": seeds}
        if self.loss_scale is not None:
            state["loss_scale"] = self.loss_scale
        return state

    def _make_loop(self):
        s, strategy, model, optimizer = self.settings, self.strategy, self.model, self.optimizer
        loss_scale, accumulation = self.loss_scale, s.gradient_accumulation_steps
        global_batch = float(s.train_batch_size)
        vocab_size = model.encoder.config.vocab_size

        @tf.function(jit_compile=s.jit_compile, autograph=False)
        def gradients(batch, mlm_weight_total, scale):
            """Gradients of this micro-batch's share of the global loss (times scale), and its sums."""
            # Inside a tf.function only ops on the same resource are ordered: dropout's seed-generator
            # updates read no input, and would run for a step whose batch failed to read (a damaged shard),
            # leaving a saved state that no uninterrupted run has. They wait for the batch.
            with tf.control_dependencies(tf.nest.flatten(batch)), tf.GradientTape() as tape:
                outputs = model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=True)
                sums = losses.pretraining_sums(batch, outputs)
                loss = losses.pretraining_loss(sums, mlm_weight_total, global_batch) * scale
            grads = tape.gradient(loss, model.trainable_variables)
            # Dense, so that micro-batches add up (embedding gradients come as IndexedSlices).
            return [tf.convert_to_tensor(g) for g in grads], sums

        def replica_gradients(batch):
            """This replica's sums and target counts, and the global batch's gradient summed over replicas
            (and finiteness)."""
            context = tf.distribute.get_replica_context()
            # The masked-LM loss divides by the whole global batch's weight sum, so it is summed first.
            mlm_weight_total = context.all_reduce(
                tf.distribute.ReduceOp.SUM, tf.reduce_sum(batch[features.MASKED_LM_WEIGHTS])
            )
            scale = tf.constant(1.0) if loss_scale is None else loss_scale.scale.value()
            micro = {name: tf.split(value, accumulation) for name, value in batch.items()}
            total_grads, sums = None, 0.0
            for index in range(accumulation):
                part = {name: parts[index] for name, parts in micro.items()}
                grads, part_sums = gradients(part, mlm_weight_total, scale)
                sums += part_sums
                total_grads = (
                    grads if total_grads is None else [a + b for a, b in zip(total_grads, grads, strict=True)]
                )
            grads, finite = replicated_update.summed_gradients(total_grads, scale)
            return sums, losses.target_counts(batch, vocab_size), grads, finite

        @tf.function(autograph=False)  # the loop is written out: converting it costs seconds of start-up
        def loop(iterator, steps):
            """Runs `steps` global batches; returns the sums and target counts of the applied steps and the
            skipped count."""

            def body(index, totals, counts, skipped):
                sums, batch_counts, grads, finite = strategy.run(replica_gradients, args=(next(iterator),))
                sums, batch_counts = (
                    strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None)
                    for value in (sums, batch_counts)
                )
                applied = replicated_update.apply_or_skip(
                    strategy, optimizer, model.trainable_variables, grads, finite, loss_scale
                )
                totals += tf.where(applied, sums, tf.zeros_like(sums))
                counts += tf.where(applied, batch_counts, tf.zeros_like(batch_counts))
                skipped += 1.0 - tf.cast(applied, tf.float32)
                with tf.control_dependencies([sums]):  # counted once its batch arrived (see above)
                    self.batches.assign_add(1)
                return index + 1, totals, counts, skipped

            start = (
                tf.constant(0),
                tf.zeros([len(losses.SUM_NAMES)]),
                tf.zeros([2, vocab_size]),
                tf.constant(0.0),
            )
            _, totals, counts, skipped = tf.while_loop(lambda index, *_: index < steps, body, start)
            return totals, counts, skipped

        return loop

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
