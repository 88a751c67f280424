"""The pretraining loop: MLM + SOP on TFRecords under any strategy, resumable, with logs and summaries.

`run(settings)` does what `python -m albert_tf.run_pretraining` does. A run writes into `output_dir`:
    checkpoints/            training checkpoints (weights, optimizer, step, input-pipeline position),
                            every `save_checkpoints_steps`, the last `keep_checkpoint_max` kept;
    train/, eval/           TensorBoard summaries;
    albert_config.json, spm.model, pretrainer.weights.h5   the model directory, at the end;
    eval_results.json       held-out metrics after training.
A run started again with the same settings continues from its last checkpoint and ends with the weights an
uninterrupted run would have had: the input pipeline is a deterministic function of the seed, and a
resumed one skips the records the checkpointed steps consumed (tf.data cannot checkpoint the iterators of
multi-device strategies); the only random draws (dropout) come from seed-generator variables, which are
checkpointed too.
"""

import dataclasses
import json
import os
import sys
import time

import keras
import numpy as np
import tensorflow as tf

from albert_tf.atomic_file import write_atomically
from albert_tf.config import AlbertConfig
from albert_tf.data import features
from albert_tf.data.pretraining_dataset import OnlineMasking, check_records, pretraining_dataset
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from albert_tf.training import distribution, losses
from albert_tf.training.optimizers import create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay


@dataclasses.dataclass(frozen=True)
class PretrainingSettings:
    """Everything a pretraining run needs; the fields are the `run_pretraining` flags."""

    albert_config_file: str
    input_file: str
    output_dir: str
    eval_input_file: str | None = None
    spm_model_file: str | None = None
    init_checkpoint: str | None = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    optimizer: str = "lamb"
    learning_rate: float = 0.00176
    poly_power: float = 1.0
    num_train_steps: int = 125_000
    num_warmup_steps: int = 3125
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    max_eval_steps: int = 100
    strategy: str = "default"
    tpu: str | None = None
    jit_compile: bool = False
    mixed_precision: str = "float32"
    gradient_accumulation_steps: int = 1
    steps_per_loop: int = 100
    log_every_steps: int = 100
    seed: int = 12345
    online_masking: bool = False
    masked_lm_prob: float = 0.15
    shuffle_buffer_size: int = 10_000


class TrainingError(RuntimeError):
    """A run that cannot go on (a non-finite loss); the message says why and what was kept."""


class _Log:
    """The progress line (stderr) and TensorBoard summaries (chief only)."""

    def __init__(self, output_dir, enabled):
        self.enabled = enabled
        self.writers = {}
        if enabled:
            for name in ("train", "eval"):
                self.writers[name] = tf.summary.create_file_writer(os.path.join(output_dir, name))

    def line(self, text):
        if self.enabled:
            print(f"run_pretraining: {text}", file=sys.stderr, flush=True)

    def scalars(self, kind, values, step):
        if self.enabled:
            with self.writers[kind].as_default(step=step):
                for name, value in values.items():
                    tf.summary.scalar(name, value)
            self.writers[kind].flush()


def _duration(seconds):
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Pretraining:
    """One pretraining run (see the module docstring). Build it, then `train()` and `evaluate()`."""

    def __init__(self, settings: PretrainingSettings):
        self.settings = s = settings
        # First: multi-worker collectives must be configured before TensorFlow runs any op.
        self.strategy = distribution.create_strategy(s.strategy, s.tpu)
        need_masks = not s.online_masking
        check_records(s.input_file, s.max_seq_length, s.max_predictions_per_seq, "--input_file", need_masks)
        if s.eval_input_file:
            check_records(
                s.eval_input_file,
                s.max_seq_length,
                s.max_predictions_per_seq,
                "--eval_input_file",
                need_masks,
            )
        keras.utils.set_random_seed(s.seed)
        distribution.set_precision(s.mixed_precision)
        replicas = self.strategy.num_replicas_in_sync
        if s.train_batch_size % (replicas * s.gradient_accumulation_steps):
            raise ValueError(
                f"--train_batch_size={s.train_batch_size} must be divisible by the {replicas} replica(s) "
                f"times --gradient_accumulation_steps={s.gradient_accumulation_steps}"
            )
        if s.eval_batch_size % replicas:
            raise ValueError(
                f"--eval_batch_size={s.eval_batch_size} must be divisible by the {replicas} replica(s)"
            )
        self.chief = distribution.is_chief(self.strategy)
        self.log = _Log(s.output_dir, self.chief)
        self.config = AlbertConfig.from_json_file(s.albert_config_file)
        self.spm_model = s.spm_model_file or (
            s.init_checkpoint and model_dir.spm_model_file(s.init_checkpoint)
        )

        with self.strategy.scope():
            self.model = AlbertPretrainer(AlbertEncoder(self.config))
            if s.init_checkpoint:
                self.model.load_weights(os.path.join(s.init_checkpoint, model_dir.WEIGHTS_FILE))
            schedule = WarmupPolynomialDecay(
                s.learning_rate, s.num_train_steps, s.num_warmup_steps, power=s.poly_power
            )
            optimizer = create_optimizer(s.optimizer, schedule)
            if s.mixed_precision == "float16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            optimizer.build(self.model.trainable_variables)
            self.optimizer = optimizer
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.schedule = schedule

        # Dropout's seed-generator states are model variables that the model's checkpoint graph does not
        # reach; they are saved by hand, or a resumed run would draw other dropout masks.
        seed_states = [variable.value for variable in self.model.non_trainable_variables]
        self.checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.optimizer, step=self.step, seeds=seed_states
        )
        # Every worker saves (collective ops need all of them); only the chief's checkpoints are the run's.
        directory = os.path.join(s.output_dir, "checkpoints")
        if not self.chief:
            directory = os.path.join(directory, f"worker_{distribution.task_id(self.strategy)}")
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=s.keep_checkpoint_max
        )
        if self.manager.latest_checkpoint:
            self.checkpoint.restore(self.manager.latest_checkpoint).assert_existing_objects_matched()
            self.log.line(f"resumed from {self.manager.latest_checkpoint} at step {self.global_step()}")
        start = self.global_step()
        self.iterator = iter(
            self.strategy.distribute_datasets_from_function(
                lambda context: self._train_dataset(context, start)
            )
        )
        self._train_loop = self._make_train_loop()

    def global_step(self):
        return int(self.step.numpy())

    # Input --------------------------------------------------------------------------------------------

    def _dataset(self, input_context, patterns, global_batch_size, is_training, skip_records=0):
        s = self.settings
        masking = OnlineMasking(self.config.vocab_size, s.masked_lm_prob) if s.online_masking else None
        return pretraining_dataset(
            patterns,
            batch_size=input_context.get_per_replica_batch_size(global_batch_size),
            max_seq_length=s.max_seq_length,
            max_predictions_per_seq=s.max_predictions_per_seq,
            is_training=is_training,
            input_context=input_context,
            online_masking=masking,
            seed=s.seed,
            shuffle_buffer_size=s.shuffle_buffer_size,
            skip_records=skip_records,
        )

    def _train_dataset(self, input_context, start_step=0):
        # Each step takes one global batch, shared evenly by the input pipelines (one per worker).
        s = self.settings
        consumed = start_step * s.train_batch_size // input_context.num_input_pipelines
        return self._dataset(input_context, s.input_file, s.train_batch_size, True, skip_records=consumed)

    # Steps --------------------------------------------------------------------------------------------

    def _make_train_loop(self):
        s, strategy, model, optimizer = self.settings, self.strategy, self.model, self.optimizer
        accumulation = s.gradient_accumulation_steps
        global_batch = float(s.train_batch_size)

        @tf.function(jit_compile=s.jit_compile)
        def gradients(batch, mlm_weight_total):
            """Gradients of this micro-batch's share of the global loss, and its sums."""
            with tf.GradientTape() as tape:
                outputs = model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=True)
                sums = losses.pretraining_sums(batch, outputs)
                loss = losses.pretraining_loss(sums, mlm_weight_total, global_batch)
                scaled = optimizer.scale_loss(loss)
            grads = tape.gradient(scaled, model.trainable_variables)
            # Dense, so that micro-batches add up (embedding gradients come as IndexedSlices).
            return [tf.convert_to_tensor(g) for g in grads], sums

        def replica_step(batch):
            context = tf.distribute.get_replica_context()
            # The masked-LM loss divides by the whole global batch's weight sum, so it is summed first.
            mlm_weight_total = context.all_reduce(
                tf.distribute.ReduceOp.SUM, tf.reduce_sum(batch[features.MASKED_LM_WEIGHTS])
            )
            micro = {name: tf.split(value, accumulation) for name, value in batch.items()}
            total_grads, total_sums = None, 0.0
            for index in range(accumulation):
                grads, sums = gradients(
                    {name: parts[index] for name, parts in micro.items()}, mlm_weight_total
                )
                total_sums += sums
                total_grads = (
                    grads if total_grads is None else [a + b for a, b in zip(total_grads, grads, strict=True)]
                )
            optimizer.apply(total_grads, model.trainable_variables)
            return total_sums

        @tf.function
        def train_loop(iterator, steps):
            totals = tf.zeros([len(losses.SUM_NAMES)])
            for _ in tf.range(steps):
                per_replica = strategy.run(replica_step, args=(next(iterator),))
                totals += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
                self.step.assign_add(1)
            return totals

        return train_loop

    # Training -----------------------------------------------------------------------------------------

    def train(self):
        """Runs until num_train_steps; returns the last logged metrics (empty when nothing was left to do)."""
        s = self.settings
        step = self.global_step()
        last = {}
        started, start_step = time.perf_counter(), step
        window_start, window_sums = time.perf_counter(), np.zeros(len(losses.SUM_NAMES))
        while step < s.num_train_steps:
            # Stop at the next log, checkpoint or end of the run, whichever comes first.
            boundary = min(
                s.num_train_steps,
                (step // s.log_every_steps + 1) * s.log_every_steps,
                (step // s.save_checkpoints_steps + 1) * s.save_checkpoints_steps,
                step + s.steps_per_loop,
            )
            sums = self._train_loop(self.iterator, tf.constant(boundary - step)).numpy()
            step = self.global_step()
            window_sums += sums
            if not np.all(np.isfinite(sums)):
                kept = self.manager.latest_checkpoint or "none: no checkpoint was written yet"
                raise TrainingError(
                    f"the loss is not finite at step {step} (NaN or Inf); stopping. Last good checkpoint: "
                    f"{kept}. Lower --learning_rate, or use --mixed_precision=bfloat16 instead of float16."
                )
            if step % s.log_every_steps == 0 or step == s.num_train_steps:
                elapsed = time.perf_counter() - window_start
                last = losses.metrics(window_sums)
                rate = window_sums[5] / max(elapsed, 1e-9)
                learning_rate = float(self.schedule(step - 1))
                done = step - start_step
                eta = (time.perf_counter() - started) / done * (s.num_train_steps - step)
                self.log.line(
                    f"step {step}/{s.num_train_steps} | loss {last['loss']:.4f} | "
                    f"mlm_acc {last['masked_lm_accuracy']:.4f} | "
                    f"sop_acc {last['sentence_order_accuracy']:.4f} | "
                    f"lr {learning_rate:.3e} | {rate:.1f} examples/s | ETA {_duration(eta)}"
                )
                self.log.scalars(
                    "train", {**last, "learning_rate": learning_rate, "examples_per_second": rate}, step
                )
                window_start, window_sums = time.perf_counter(), np.zeros(len(losses.SUM_NAMES))
            if step % s.save_checkpoints_steps == 0 or step == s.num_train_steps:
                self.manager.save(checkpoint_number=step)
        return last

    # Evaluation and output ----------------------------------------------------------------------------

    def evaluate(self):
        """Metrics on --eval_input_file (up to max_eval_steps batches, read once, in order)."""
        s, strategy, model = self.settings, self.strategy, self.model

        def eval_dataset(input_context):
            return self._dataset(input_context, s.eval_input_file, s.eval_batch_size, False)

        @tf.function
        def eval_step(batch):
            def replica_step(batch):
                outputs = model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=False)
                return losses.pretraining_sums(batch, outputs)

            return strategy.reduce(
                tf.distribute.ReduceOp.SUM, strategy.run(replica_step, args=(batch,)), None
            )

        totals = np.zeros(len(losses.SUM_NAMES))
        for index, batch in enumerate(strategy.distribute_datasets_from_function(eval_dataset)):
            if index >= s.max_eval_steps:
                break
            totals += eval_step(batch).numpy()
        results = losses.metrics(totals)
        del results["loss"]
        results["global_step"] = self.global_step()
        self.log.scalars("eval", {k: v for k, v in results.items() if k != "global_step"}, self.global_step())
        self.log.line("eval: " + ", ".join(f"{k} {v:.4f}" for k, v in results.items() if k != "global_step"))
        return results

    def write_outputs(self, eval_results=None):
        """The model directory (and eval_results.json) in output_dir; the chief only."""
        if not self.chief:
            return
        model_dir.save_model_dir(self.model, self.settings.output_dir, spm_model=self.spm_model)
        if eval_results is not None:
            path = os.path.join(self.settings.output_dir, "eval_results.json")
            write_atomically(path, (json.dumps(eval_results, indent=2, sort_keys=True) + "\n").encode())


def run(settings: PretrainingSettings):
    """Trains, evaluates on eval_input_file (when given) and writes the model directory; returns the
    eval results (or None)."""
    if settings.num_train_steps <= 0:
        raise ValueError(f"--num_train_steps must be positive, got {settings.num_train_steps}")
    for name in (
        "save_checkpoints_steps",
        "steps_per_loop",
        "log_every_steps",
        "gradient_accumulation_steps",
    ):
        if getattr(settings, name) <= 0:
            raise ValueError(f"--{name} must be positive, got {getattr(settings, name)}")
    run_ = Pretraining(settings)
    run_.train()
    results = run_.evaluate() if settings.eval_input_file else None
    run_.write_outputs(results)
    return results
