"""The fine-tuning loop of run_classifier, run_race and run_squad, on any strategy, keeping the best model.

A task subclasses `FineTuningRun` and says how to read its data (`_read`), build its model (`_build_model`),
make batches (`_dataset`), what loss to train (`_example_losses`), how to score (`evaluate`, `metric_names`)
and what to predict (`predict`). The loop: the original's AdamW (no bias correction, weight decay 0.01,
clipping 1.0) with warmup + linear decay, evaluation every `save_checkpoints_steps`, and in `output_dir` a
model directory whose `task_model.keras` is the best evaluation's model (ready for `export_saved_model`)
and `eval_results.json` (metrics by name, from the best evaluation, and its `global_step`).

Under any `strategy` the batch sizes are global. Each global batch is split between the replicas as Keras
splits it for `fit` (`experimental_distribute_dataset`); each replica's loss is its examples' loss summed
and divided by the global batch size, and the optimizer sums the replicas' gradients before it clips them,
so a run on several devices or hosts makes the one-device updates. Only the chief (the one process, or
worker 0) writes; the other workers compute alongside it and keep nothing.

The steps are our loop rather than `model.fit`: in Keras 3.15 `fit` fails under MultiWorkerMirroredStrategy
(it reduces its logs with `axis=0` on scalars, and a nested first batch with a reduction that takes only
tensors; keras-team/keras#20585), and it restarts the input at every call. Evaluation is `model.predict`,
which distributes and gathers in order on every strategy.
"""

import dataclasses
import json
import sys

import keras
import tensorflow as tf

from albert_tf import file_io
from albert_tf.models import model_dir
from albert_tf.text.tokenizer import check_fits_vocabulary
from albert_tf.training import distribution, replicated_update
from albert_tf.training.loss_scale import DynamicLossScale
from albert_tf.training.optimizers import AdamWeightDecay
from albert_tf.training.schedules import WarmupPolynomialDecay


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningSettings:
    """The flags every fine-tuning entry point takes."""

    model_dir: str
    output_dir: str
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 2e-5
    train_step: int = 1000
    warmup_step: int = 100
    save_checkpoints_steps: int = 200
    dropout_rate: float = 0.1
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    strategy: str = "default"
    tpu: str | None = None
    mixed_precision: str = "float32"
    jit_compile: bool = False
    seed: int = 12345
    errors: str = "strict"


class FineTuningRun:
    """Reads the data, builds the model and its optimizer; `train()`, `evaluate()`, `predict()`."""

    name = "fine-tuning"  # the entry point, in progress lines

    def __init__(self, settings: FineTuningSettings):
        self.settings = s = settings
        # First: multi-worker collectives must be configured before TensorFlow runs any op.
        self.strategy = distribution.create_strategy(s.strategy, s.tpu)
        self.chief = distribution.is_chief(self.strategy)
        replicas = self.strategy.num_replicas_in_sync
        if s.train_batch_size % replicas:
            raise ValueError(
                f"--train_batch_size={s.train_batch_size} must be divisible by the {replicas} replica(s)"
            )
        keras.utils.set_random_seed(s.seed)
        distribution.set_precision(s.mixed_precision)
        self.spm = model_dir.spm_model_file(s.model_dir)
        if not self.spm:
            raise FileNotFoundError(f"{s.model_dir} has no spm.model")
        self.do_lower_case = model_dir.do_lower_case(s.model_dir)  # a cased model's text keeps its case
        config = model_dir.load_config(s.model_dir)
        check_fits_vocabulary(self.spm, config.vocab_size, file_io.join(s.model_dir, model_dir.CONFIG_FILE))
        positions = config.max_position_embeddings
        if s.max_seq_length > positions:
            raise ValueError(
                f"--max_seq_length={s.max_seq_length} exceeds the model's max_position_embeddings={positions}"
            )
        self.splits = self._read()
        with self.strategy.scope():
            self.model = self._build_model()
            schedule = WarmupPolynomialDecay(s.learning_rate, s.train_step, s.warmup_step)
            self.optimizer = AdamWeightDecay(schedule)
            self.optimizer.build(self.model.trainable_variables)
            # float16: our loss scaling, decided alike on every replica (replicated_update).
            self.loss_scale = DynamicLossScale() if s.mixed_precision == "float16" else None

    @property
    def metric_names(self):
        """The metrics `evaluate` returns; the first picks the best evaluation."""
        raise NotImplementedError

    def _read(self):
        """{split name: data} for the splits the settings ask for ("train", "dev", "test")."""
        raise NotImplementedError

    def _build_model(self):
        raise NotImplementedError

    def _example_losses(self, targets, outputs):
        """The training loss of each example of a batch: float32 [batch]."""
        raise NotImplementedError

    def _dataset(self, split, is_training=False):
        """tf.data batches of a split: (inputs, targets) when training, inputs alone may do otherwise."""
        raise NotImplementedError

    def evaluate(self):
        """{metric name: value} on the dev split."""
        raise NotImplementedError

    def predict(self):
        """Writes the test split's predictions to output_dir."""
        raise NotImplementedError

    def train(self, log=print):
        """Trains train_step steps; evaluates every save_checkpoints_steps; ends with the best model.

        Returns the best evaluation's metrics and global_step (None without a dev split).
        """
        s = self.settings
        dataset = self._dataset("train", is_training=True).repeat()
        iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
        train_steps = self._make_train_steps()
        best, best_weights, done = None, None, 0
        while done < s.train_step:
            steps = min(s.save_checkpoints_steps, s.train_step - done)
            loss = float(train_steps(iterator, tf.constant(steps)))
            done += steps
            line = f"step {done}/{s.train_step} | loss {loss:.4f}"
            if "dev" in self.splits:
                results = self.evaluate()
                line += " | " + " | ".join(f"{k} {v:.4f}" for k, v in results.items())
                if best is None or results[self.metric_names[0]] > best[self.metric_names[0]]:
                    best = {**results, "global_step": done}
                    # Kept in memory too: workers other than the chief have no copy on disk.
                    best_weights = self.model.get_weights()
                    self.save()
            else:
                self.save()
            if self.chief:
                log(f"{self.name}: {line}")
        if best_weights is not None:
            self.model.set_weights(best_weights)
        return best

    def _make_train_steps(self):
        """train_steps(iterator, steps): that many global batches; returns the applied ones' mean loss."""
        s, strategy, model, optimizer = self.settings, self.strategy, self.model, self.optimizer
        loss_scale, global_batch = self.loss_scale, float(s.train_batch_size)

        @tf.function(jit_compile=s.jit_compile, autograph=False)
        def gradients(inputs, targets, scale):
            """This replica's share of the global batch's mean loss, and its gradients (of loss × scale)."""
            with tf.GradientTape() as tape:
                outputs = model(inputs, training=True)
                loss = tf.reduce_sum(self._example_losses(targets, outputs)) / global_batch
                scaled = loss * scale
            return tape.gradient(scaled, model.trainable_variables), loss

        def replica_step(batch):
            scale = tf.constant(1.0) if loss_scale is None else loss_scale.scale.value()
            grads, loss = gradients(*batch, scale)
            grads, finite = replicated_update.summed_gradients(grads, scale)  # summed, then clipped on apply
            return loss, grads, finite

        @tf.function(autograph=False)  # the loop is written out: converting it costs seconds of start-up
        def train_steps(iterator, steps):
            def body(index, total, applied_steps):
                losses, grads, finite = strategy.run(replica_step, args=(next(iterator),))
                loss = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
                applied = replicated_update.apply_or_skip(
                    strategy, optimizer, model.trainable_variables, grads, finite, loss_scale
                )
                return (
                    index + 1,
                    total + tf.where(applied, loss, 0.0),
                    applied_steps + tf.cast(applied, tf.float32),
                )

            start = (tf.constant(0), tf.constant(0.0), tf.constant(0.0))
            _, total, applied_steps = tf.while_loop(lambda index, *_: index < steps, body, start)
            return total / tf.maximum(applied_steps, 1.0)

        return train_steps

    def save(self):
        """The model directory in output_dir (chief only)."""
        if self.chief:
            self._save(self.settings.output_dir)

    def write(self, name, text):
        """Writes a text file of output_dir (chief only), whole or not at all."""
        if self.chief:
            file_io.makedirs(self.settings.output_dir)
            file_io.write_atomically(file_io.join(self.settings.output_dir, name), text.encode("utf-8"))

    def _save(self, directory):
        """Writes the model directory: the pretrained files copied from model_dir, and this task model."""
        model_dir.copy_config_and_spm(self.settings.model_dir, directory)
        model_dir.save_task_model(self.model, directory)


def run(settings: FineTuningSettings, job_class):
    """Trains (do_train), evaluates (do_eval: eval_results.json) and predicts (do_predict).

    Every process of a multi-worker run calls it; only the chief writes.
    """
    job = job_class(settings)
    best = None
    if settings.do_train:
        best = job.train(log=lambda line: print(line, file=sys.stderr, flush=True))
    results = None
    if settings.do_eval:
        results = best or {**job.evaluate(), "global_step": 0}
        job.write("eval_results.json", json.dumps(results, indent=2, sort_keys=True) + "\n")
    if settings.do_predict:
        job.predict()
    return results
