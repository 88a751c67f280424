"""The loop of a pretraining run: steps in compiled chunks, progress lines, checkpoints, periodic evaluation.

Model Garden's controller, reduced to what a pretraining run needs. The trainer runs steps until the next
boundary (a log line, a checkpoint, an evaluation, the end); at each the controller logs, writes TensorBoard
scalars, saves a checkpoint (every worker does, as collective ops need all; only the chief's are the run's),
evaluates and appends to the evaluation history (output_dir/eval_history.jsonl: one JSON object per
evaluation, rewritten whole through a temporary name).
"""

import json
import time

import numpy as np
import tensorflow as tf

from albert_tf import file_io
from albert_tf.pretraining import losses
from albert_tf.pretraining.run_log import duration
from albert_tf.training.loss_scale import MINIMUM_SCALE

EVAL_HISTORY_FILE = "eval_history.jsonl"


class TrainingError(RuntimeError):
    """A run that cannot go on (a non-finite loss); the message says why and what was kept."""


class Controller:
    """Drives a PretrainingTrainer to num_train_steps (see the module docstring).

    Args:
      settings: PretrainingSettings.
      trainer: PretrainingTrainer.
      iterator: the distributed training iterator, positioned at the trainer's batch count.
      manager: tf.train.CheckpointManager of the trainer's state.
      log: RunLog.
      evaluator: PretrainingEvaluator, or None (no periodic evaluation).
      chief: whether this process writes the run's files.
      step_known: False when the weights evaluated come with no step (an evaluation alone of a Hugging Face
        directory): results say `"global_step": null`, TensorBoard files them at step 0.
      damaged_shard: batch number → a line naming the training shard that fails to read there, or None
        (PretrainingInput.damaged_shard).
    """

    def __init__(
        self, settings, trainer, iterator, manager, log, evaluator=None, chief=True, step_known=True,
        damaged_shard=None,
    ):  # fmt: skip
        self.settings, self.trainer, self.iterator = settings, trainer, iterator
        self.manager, self.log, self.evaluator, self.chief = manager, log, evaluator, chief
        self.step_known, self.damaged_shard = step_known, damaged_shard
        self.history_path = file_io.join(settings.output_dir, EVAL_HISTORY_FILE)

    def train(self):
        """Runs until num_train_steps; returns the last logged training metrics."""
        s, trainer = self.settings, self.trainer
        step = trainer.step
        last = {}
        started, start_step = time.perf_counter(), step
        window_start, window_sums, window_counts, skipped = self._new_window()
        every = [
            s.log_every_steps,
            s.save_checkpoints_steps,
            *([s.eval_every_steps] if self.evaluator and s.eval_every_steps else []),
        ]
        while step < s.num_train_steps:
            boundary = min(
                [s.num_train_steps, step + s.steps_per_loop] + [(step // n + 1) * n for n in every]
            )
            try:
                sums, counts, skips = trainer.loop(self.iterator, tf.constant(boundary - step))
            except tf.errors.DataLossError as error:
                raise self._data_error(error) from None
            sums, step = sums.numpy(), trainer.step
            window_sums, window_counts = window_sums + sums, window_counts + counts.numpy()
            skipped += float(skips)
            self._check_finite(sums, step)
            if step % s.log_every_steps == 0 or step == s.num_train_steps:
                elapsed = time.perf_counter() - window_start
                last = losses.metrics(window_sums, window_counts)
                rate = window_sums[5] / max(elapsed, 1e-9)
                learning_rate = float(trainer.schedule(step - 1))
                eta = (time.perf_counter() - started) / max(step - start_step, 1) * (s.num_train_steps - step)
                overflow = f" | {int(skipped)} float16 overflow steps skipped" if skipped else ""
                self.log.line(
                    f"step {step}/{s.num_train_steps} | loss {last['loss']:.4f} | "
                    f"mlm_acc {last['masked_lm_accuracy']:.4f} "
                    f"(most frequent token {last['masked_lm_baseline_accuracy']:.4f}, "
                    f"without context {last['masked_lm_context_free_accuracy']:.4f}) | "
                    f"sop_acc {last['sentence_order_accuracy']:.4f} | "
                    f"lr {learning_rate:.3e} | {rate:.1f} examples/s | ETA {duration(eta)}{overflow}"
                )
                scalars = {**last, "learning_rate": learning_rate, "examples_per_second": rate}
                if trainer.loss_scale is not None:
                    scalars["loss_scale"] = float(trainer.loss_scale.scale.numpy())
                self.log.scalars("train", scalars, step)
                window_start, window_sums, window_counts, skipped = self._new_window()
            if step % s.save_checkpoints_steps == 0 or step == s.num_train_steps:
                self.manager.save(checkpoint_number=step)
            if (
                self.evaluator
                and s.eval_every_steps
                and step % s.eval_every_steps == 0
                and step < s.num_train_steps
            ):
                self.evaluate()
        return last

    def _data_error(self, error):
        """Saves the last completed step (a failed read stops a step before it changes anything) and returns
        the TrainingError that names the damaged shard."""
        step, batch = self.trainer.step, int(self.trainer.batches.numpy())
        latest = self.manager.latest_checkpoint
        if not latest or not latest.endswith(f"-{step}"):
            latest = self.manager.save(checkpoint_number=step)
        where = (self.damaged_shard(batch) if self.damaged_shard else None) or error.message.strip()
        return TrainingError(
            f"the training records fail to read at step {step + 1}: {where}. "
            f"Step {step} is saved in {latest}; rebuild the shard (create_pretraining_data writes the same "
            "bytes again) or copy it whole, then run again: the run resumes there"
        )

    @staticmethod
    def _new_window():
        """(start time, sums, target counts, skipped steps) of a progress line's window."""
        return time.perf_counter(), np.zeros(len(losses.SUM_NAMES)), 0.0, 0.0

    def _check_finite(self, sums, step):
        trainer = self.trainer
        kept = self.manager.latest_checkpoint or "none: no checkpoint was written yet"
        if trainer.loss_scale is not None:
            scale = float(trainer.loss_scale.scale.numpy())
            if scale < MINIMUM_SCALE:
                raise TrainingError(
                    f"every float16 step overflows (loss scale {scale:g} at step {step}); stopping. "
                    f"Last good checkpoint: {kept}. Lower --learning_rate, or use --mixed_precision=bfloat16."
                )
        elif not np.all(np.isfinite(sums)):
            raise TrainingError(
                f"the loss is not finite at step {step} (NaN or Inf); stopping. Last good checkpoint: "
                f"{kept}. Lower --learning_rate, or use --mixed_precision=bfloat16 instead of float16."
            )

    def evaluate(self):
        """Evaluates, logs, writes eval scalars and appends to the evaluation history; returns the results."""
        step = self.trainer.step
        metrics = self.evaluator.evaluate()
        results = {**metrics, "global_step": step if self.step_known else None}
        self.log.scalars("eval", metrics, step)
        where = f"at step {step}" if self.step_known else "(the weights say no step)"
        self.log.line(f"eval {where}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        if self.chief:
            # A resumed run evaluates again at steps it had evaluated before it was stopped: keep the newer
            # (an evaluation of no known step replaces the one before it).
            history = [
                entry for entry in self.history()
                if entry["global_step"] is not None and (not self.step_known or entry["global_step"] < step)
            ] + [results]  # fmt: skip
            text = "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in history)
            file_io.write_atomically(self.history_path, text.encode())
        return results

    def history(self):
        """The evaluation history so far (a list of results, by step)."""
        if not file_io.exists(self.history_path):
            return []
        return [
            json.loads(line) for line in file_io.read_text(self.history_path).splitlines() if line.strip()
        ]
