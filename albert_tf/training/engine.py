"""The one training engine of every entry point: pretraining, classifiers, spans and multiple choice.

A `Task` says what is trained: its model and optimizer, its input from a position, the statistics a batch
adds up (sums over its examples, so that micro-batches, replicas and steps add), the loss written from them,
its progress line and its evaluation. The `Engine` does the rest, the same for every task:

- one update: each replica's share of the global batch split into `gradient_accumulation_steps`
  micro-batches whose gradients add up; the loss is the global batch's, written as sums, so an update does
  not depend on the replica count; the gradients summed across replicas explicitly, then clipped and applied
  (replicated_update); under float16 the loss is scaled and a step whose summed gradients are not finite
  is skipped on every replica alike (loss_scale);
- steps in compiled chunks up to the next boundary: a progress line, a checkpoint, an evaluation, the end;
- checkpoints (output_dir/checkpoints) of the weights, the optimizer, the input position (`batches`, the
  global batches consumed), dropout's seed states, the loss scale, the best evaluation so far and the
  run's state (run_state.py: the collapse guard's readings, rollbacks, the best evaluation's results). The
  input is a deterministic function of the seed and the position, so a run started again with the same
  settings resumes from its last checkpoint and ends with the weights and history of an uninterrupted run;
- evaluation every `eval_every_steps` and at the end, its history (output_dir/eval_history.jsonl, one JSON
  object per evaluation, rewritten whole through a temporary name; an evaluation of weights it holds
  replaces their entry, `_record`), TensorBoard summaries (train/, eval/) and progress lines; with a task's
  `best_metric`, the best evaluation that is not a collapse kept apart from the rolling checkpoints
  (checkpoints/best) with its results and, with `ends_with_best`, restored at the end, its results the
  run's;
- a guard against collapse (collapse_guard.py, Task.collapsed): said in the progress line and the history;
  with `rollback_on_collapse`, back to the last healthy checkpoint at a lower learning rate (`roll_back`);
- cluster roles: only the chief (training.distribution.is_chief) writes the run's outputs. Every task saves
  its checkpoints (collective ops need all of them); a task that is not the chief keeps its own in a scratch
  folder of its output_dir (checkpoints/worker_<id>), which it removes once the run ends. On resume all
  restore the newest step every task holds (`restore`). An evaluator beside training evaluates each
  checkpoint as it lands (`evaluate_each_checkpoint`).

The steps are our loop rather than `model.fit`: in Keras 3.15 `fit` fails under MultiWorkerMirroredStrategy
(keras-team/keras#20585), restarts its input at every call and keeps no input position. Task models stay
Keras models: `fit` works on them in a notebook.
"""

import contextlib
import dataclasses
import json
import math
import time

import numpy as np
import tensorflow as tf

from albert_tf import file_io
from albert_tf.training import distribution, memory, replicated_update
from albert_tf.training.loss_scale import MINIMUM_SCALE, DynamicLossScale
from albert_tf.training.run_log import duration
from albert_tf.training.run_state import RunState

CHECKPOINTS = "checkpoints"
MAX_ROLLBACKS = 3  # more collapses than this: the recipe, not bad luck; the run stops
EVAL_HISTORY_FILE = "eval_history.jsonl"
BEST_VALUE = "best_value/.ATTRIBUTES/VARIABLE_VALUE"  # its key in checkpoints/best


class TrainingError(RuntimeError):
    """A run that cannot go on (a non-finite loss, records that fail to read); the message says why and
    which checkpoint was kept."""


class DivergenceError(TrainingError):
    """A run stopped by its own training: a loss that is not finite, float16 steps that all overflow, or a
    collapse no rollback mends. Its recipe or seed failed, not the machine or its files: a sweep
    (albert_tf/finetuning/sweep.py) records it as a failed run and goes on."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How a run steps, saves and evaluates (the flags every entry point shares)."""

    output_dir: str
    train_steps: int
    train_batch_size: int
    gradient_accumulation_steps: int = 1
    steps_per_loop: int = 100
    log_every_steps: int = 100
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    eval_every_steps: int = 0  # 0: at the end only
    jit_compile: bool = False
    loss_scaling: bool = False  # float16
    rollback_on_collapse: bool = False
    rollback_learning_rate_factor: float = 0.5


def check_batch(settings, strategy):
    """ValueError unless the global batch splits evenly into replicas and micro-batches."""
    s, replicas = settings, strategy.num_replicas_in_sync
    if s.train_batch_size % (replicas * s.gradient_accumulation_steps):
        raise ValueError(
            f"--train_batch_size={s.train_batch_size} must be divisible by the {replicas} replica(s) "
            f"times --gradient_accumulation_steps={s.gradient_accumulation_steps}"
        )


def newest_common_step(every_task):
    """The newest step every task holds (every_task: {task name: steps}); None when no task holds any.
    TrainingError naming each task's steps when some do but they share none."""
    if not any(every_task.values()):
        return None
    common = set.intersection(*(set(steps) for steps in every_task.values()))
    if not common:
        raise TrainingError(
            f"the run's tasks hold no checkpoint step in common ({_held(every_task)}): training on would "
            "start them from different weights. Give every task the chief's --output_dir on storage they all "
            "read, or delete the checkpoints to start over"
        )
    return max(common)


def _held(every_task):
    held = {name: ", ".join(map(str, steps)) if steps else "none" for name, steps in every_task.items()}
    return "; ".join(f"{name} holds {steps}" for name, steps in held.items())


def _step_of(path):
    return int(path.rsplit("-", 1)[1])


class Task:
    """What the engine trains. A subclass builds, under the strategy's scope, `model` (a Keras model),
    `optimizer` (with `apply_summed`: training.optimizers) and `schedule` (step → learning rate), and says:"""

    name = "train"  # the entry point, which prefixes progress lines
    best_metric = None  # the evaluation metric whose highest value is kept apart (checkpoints/best)
    ends_with_best = True  # the run ends with the best evaluation's weights (else with the last step's)

    @property
    def statistics_spec(self):
        """`statistics`' structure: a nest like it of tf.TensorSpec (float32)."""
        raise NotImplementedError

    @property
    def chance_loss(self):
        """The training loss of a model that has learned nothing (a uniform guess; for a regression, the
        mean score): the scale the collapse guard measures a rise of the loss on."""
        raise NotImplementedError

    def train_input(self, strategy, start):
        """A distributed dataset of the training batches from global batch `start` on, endless."""
        raise NotImplementedError

    def replica_totals(self, batch):
        """float32 []: a number of this replica's batch that the engine sums across replicas before the step
        and gives to `loss` (a normalizer of the global batch, e.g. its masked positions)."""
        del batch
        return tf.constant(0.0)

    def statistics(self, model, batch, training):
        """A nest of float32 sums over the batch's examples (the loss among them), from the model's
        outputs."""
        raise NotImplementedError

    def loss(self, statistics, totals, global_batch):
        """A batch's share of the global batch's loss, from its statistics, the replicas' summed totals and
        the global batch size."""
        raise NotImplementedError

    def progress(self, statistics):
        """(scalars for TensorBoard, the progress line's text starting "loss ...") from statistics summed
        over the steps since the last line (NumPy)."""
        raise NotImplementedError

    def evaluate(self):
        """{metric: value} on held-out data, or None when there is none."""
        return None

    def collapsed(self, metrics, best):
        """Why an evaluation looks collapsed (given the best value of best_metric so far), or None."""
        del metrics, best

    def failed_read(self, batch):
        """A line naming the training file that fails to read at global batch `batch`, or None."""
        del batch


class Engine:
    """Trains a Task under a strategy (see the module docstring).

    Args:
      task: the Task, its model and optimizer built under strategy.scope().
      settings: EngineSettings.
      strategy: the tf.distribute.Strategy.
      log: RunLog (the chief's says and writes; the others' are silent).
    """

    def __init__(self, task, settings, strategy, log):
        s = settings
        check_batch(s, strategy)
        self.task, self.settings, self.strategy, self.log = task, s, strategy, log
        self.chief = distribution.is_chief(strategy)
        self.model, self.optimizer = task.model, task.optimizer
        with strategy.scope():
            self.batches = tf.Variable(0, dtype=tf.int64, trainable=False, name="batches")
            self.best_value = tf.Variable(-math.inf, dtype=tf.float64, trainable=False, name="best_value")
            self.best_step = tf.Variable(-1, dtype=tf.int64, trainable=False, name="best_step")
            # What `batches` counts in: a resume with another global batch size is refused (restore).
            self.batch_size = tf.Variable(
                s.train_batch_size, dtype=tf.int64, trainable=False, name="train_batch_size"
            )
            self.loss_scale = DynamicLossScale() if s.loss_scaling else None
            # Multiplies the schedule's rate: lowered by each rollback after a collapse.
            self.learning_rate_scale = tf.Variable(1.0, trainable=False, name="learning_rate_scale")
        task.schedule.scale = self.learning_rate_scale
        # The collapse guard, rollbacks, a pending spike, the best results.
        self.state = RunState(task.chance_loss)
        folder = file_io.join(s.output_dir, CHECKPOINTS)
        self.scratch = (
            None if self.chief else file_io.join(folder, f"worker_{distribution.task_id(strategy)}")
        )
        # What the scratch folder's making adds (its output_dir too, when new): removed again at the end.
        self._scratch_folders = file_io.missing_folders(self.scratch) if self.scratch else []
        folder = self.scratch or folder
        self.manager = tf.train.CheckpointManager(
            tf.train.Checkpoint(**self._checkpointed()), folder, max_to_keep=s.keep_checkpoint_max
        )
        # The best evaluation's weights and its value: what a run stopped before its next checkpoint names
        # the best resumes with (_adopt_a_newer_best).
        self.best = tf.train.CheckpointManager(
            tf.train.Checkpoint(model=self.model, best_value=self.best_value),
            file_io.join(folder, "best"),
            max_to_keep=1,
        )
        self.history_path = file_io.join(s.output_dir, EVAL_HISTORY_FILE)
        self._loop = self._make_loop()
        self._iterator = None  # the training input, from the input position once training starts

    @property
    def step(self):
        """The applied updates so far: the run's step, which the learning-rate schedule follows."""
        return int(self.optimizer.iterations.numpy())

    def _checkpointed(self):
        # Dropout's seed-generator states are model variables that the model's checkpoint graph does not
        # reach; they are saved by hand, or a resumed run would draw other dropout masks.
        seeds = [variable.value for variable in self.model.non_trainable_variables]
        state = {
            "model": self.model, "optimizer": self.optimizer, "batches": self.batches, "seeds": seeds,
            "best_value": self.best_value, "best_step": self.best_step, "train_batch_size": self.batch_size,
            "learning_rate_scale": self.learning_rate_scale, "run_state": self.state,
        }  # fmt: skip
        if self.loss_scale is not None:
            state["loss_scale"] = self.loss_scale
        return state

    def restore(self, partial=False):
        """Restores the newest checkpoint that every task of the run holds and says so; returns its path, or
        None when none holds one.

        Tasks other than the chief hold the checkpoints of their scratch folder and, when their output_dir
        is the chief's (shared storage), the chief's. Tasks whose newest steps differ (one killed while
        saving) would train on mismatched weights: all restore the newest step they all hold, and with none
        in common the run stops naming each task's steps. A checkpoint of another global batch size is
        refused: its input position counts batches of that size, and which records a batch holds depends on
        the size (lanes, shuffling), so no position converts exactly.

        partial: only what evaluation needs may be there (an evaluation alone, of a run's checkpoint).
        """
        if not partial:  # evaluation alone may look at a live run's folder: its saves are not ours to remove
            self._remove_partial_checkpoints()
        held = {}
        folders = [self.manager.directory]
        if self.scratch:
            folders.insert(0, file_io.join(self.settings.output_dir, CHECKPOINTS))  # its own copy wins
        for folder in folders:
            state = tf.train.get_checkpoint_state(folder)
            for path in state.all_model_checkpoint_paths if state else []:
                held[_step_of(path)] = path
        # Gathered before anything here can refuse (checked_together): the chief's best checkpoint, which a
        # resume may take as the run's best (_adopt).
        every_task, best = self._steps_of_every_task(sorted(held), (-1, 0) if partial else self._chief_best())
        step = newest_common_step(every_task)
        if step is None:
            return None
        path = held[step]
        older = self._restore_from(path, partial)
        saved, batch = int(self.batch_size.numpy()), self.settings.train_batch_size
        if saved != batch and not partial:
            raise ValueError(
                f"--train_batch_size={batch}, but {path} was trained with batches of {saved}: its input "
                "position counts batches of that size and does not carry over. Resume with "
                f"--train_batch_size={saved}, or start a new --output_dir from its weights "
                "(--init_checkpoint)"
            )
        if older and int(self.best_step.numpy()) >= 0:  # its best results: in the history
            self.state.best_results = self._best_results_in_history()
        if not partial:
            self._adopt(*best)
        newest = {max(steps) for steps in every_task.values() if steps}
        fallback = f" (the newest step every task holds; {_held(every_task)})" if len(newest) > 1 else ""
        self.log.line(f"resumed from {path} at step {self.step}{fallback}")
        return path

    def _best_results_in_history(self, step=None):
        """The chief's: the newest evaluation in the history of `step` (None: best_step) that is not a
        collapse (None on other tasks, which write no results)."""
        if not self.chief:
            return None
        step = int(self.best_step.numpy()) if step is None else step
        entries = [entry for entry in self.history() if entry["global_step"] == step]
        return next((entry for entry in reversed(entries) if "collapse" not in entry), None)

    def _chief_best(self):
        """(step, the value's float64 bits as an int64) of the chief's best checkpoint, or (-1, 0): None on
        other tasks, none held, or none readable. The value is saved beside the weights; a best checkpoint
        written before it was is valued by its step's entry in the history."""
        path = self.best.latest_checkpoint if self.chief else None
        if path is None:
            return -1, 0
        step, metric = _step_of(path), self.task.best_metric
        try:
            if BEST_VALUE in dict(tf.train.list_variables(path)):
                value = tf.train.load_checkpoint(path).get_tensor(BEST_VALUE)
            else:
                entry = self._best_results_in_history(step)
                if not entry or metric not in entry:
                    return -1, 0
                value = entry[metric]
        except tf.errors.OpError:  # a damaged checkpoint: the run's end names it (_end)
            return -1, 0
        return step, int(np.float64(value).view(np.int64))

    def _adopt(self, step, bits):
        """After a resume: the chief's best checkpoint (_chief_best), when it holds a better evaluation than
        the checkpoint restored names, becomes the run's best, with its step, value and results.

        A run stopped between saving a new best (checkpoints/best keeps one: the older best's weights are
        gone) and its next checkpoint resumes with the older best's step and value. Training again, it may
        not beat the older value (evaluations on a GPU are not bit-exact), and would end with the newer
        weights under the older results. Any newer best is better than every evaluation before it, so the
        value, not the step, tells it (after a rollback a newer best may have a smaller step).
        """
        value = float(np.int64(bits).view(np.float64))
        if step < 0 or not value > float(self.best_value.numpy()):
            return
        self.best_step.assign(step)
        self.best_value.assign(value)
        self.state.best_results = self._best_results_in_history()
        self.log.line(f"the best evaluation is step {step}'s, saved after the checkpoint resumed from")

    def _restore_from(self, path, partial=False):
        """Restores the checkpoint at path; returns whether it was written before runs saved their state
        (RunState), whose guard then starts afresh. ValueError when it is of another model or task.

        partial: only what evaluation needs may be there."""
        checkpoint = self.manager.checkpoint
        older = not any(name.startswith("run_state/") for name, _ in tf.train.list_variables(path))
        if older:
            parts = {name: part for name, part in self._checkpointed().items() if name != "run_state"}
            checkpoint = tf.train.Checkpoint(**parts)
        try:
            status = checkpoint.restore(path)
            (status.expect_partial() if partial else status.assert_existing_objects_matched())
        except (ValueError, AssertionError) as error:  # a shape that differs; a variable it does not hold
            raise ValueError(
                f"{path} is a checkpoint of another model or task than this run's ({error}). Resume with the "
                "settings it was trained with, or use a new --output_dir"
            ) from None
        return older

    def _steps_of_every_task(self, steps, best):
        """({task name: the steps it holds}, the chief's `best`) for every task of a multi-worker run (the
        strategy's collective gathers them); ({"this task": steps}, best) otherwise."""
        if not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            return {"this task": steps}, best
        width = 2 * self.settings.keep_checkpoint_max + 2  # its own and the chief's, newest first
        row = [int(self.chief), distribution.task_id(self.strategy), *best]
        row += (steps[::-1] + [-1] * width)[:width]
        rows = distribution.gather_rows(self.strategy, row).reshape(-1, width + 4)
        every_task = {
            ("chief" if chief else f"worker {task}"): sorted(int(s) for s in held if s >= 0)
            for chief, task, _, _, *held in rows
        }
        return every_task, next((int(step), int(bits)) for chief, _, step, bits, *_ in rows if chief)

    # The compiled steps ---------------------------------------------------------------------------------

    def _make_loop(self):
        s, task, strategy, model, optimizer = (
            self.settings,
            self.task,
            self.strategy,
            self.model,
            self.optimizer,
        )
        loss_scale, accumulation = self.loss_scale, s.gradient_accumulation_steps
        global_batch = float(s.train_batch_size)

        @tf.function(jit_compile=s.jit_compile, autograph=False)
        def gradients(batch, totals, scale):
            """A micro-batch's gradients of its share of the global loss (times scale), and its statistics."""
            # Inside a tf.function only ops on the same resource are ordered: dropout's seed-generator
            # updates read no input, and would run for a step whose batch failed to read (a damaged file),
            # leaving a saved state that no uninterrupted run has. They wait for the batch.
            with tf.control_dependencies(tf.nest.flatten(batch)), tf.GradientTape() as tape:
                statistics = task.statistics(model, batch, training=True)
                loss = task.loss(statistics, totals, global_batch) * scale
            grads = tape.gradient(loss, model.trainable_variables)
            # Dense, so that micro-batches add up (embedding gradients come as IndexedSlices); a variable
            # the task's loss does not reach keeps None.
            return [None if g is None else tf.convert_to_tensor(g) for g in grads], statistics

        def replica_step(batch):
            """This replica's statistics, and the global batch's gradients summed over replicas (and
            whether they are finite)."""
            context = tf.distribute.get_replica_context()
            totals = context.all_reduce(tf.distribute.ReduceOp.SUM, task.replica_totals(batch))
            scale = tf.constant(1.0) if loss_scale is None else loss_scale.scale.value()
            micro = [tf.split(value, accumulation) for value in tf.nest.flatten(batch)]
            summed_grads, summed_statistics = None, None
            for index in range(accumulation):
                part = tf.nest.pack_sequence_as(batch, [parts[index] for parts in micro])
                grads, statistics = gradients(part, totals, scale)
                if summed_grads is None:
                    summed_grads, summed_statistics = grads, statistics
                else:
                    summed_grads = [
                        None if a is None else a + b for a, b in zip(summed_grads, grads, strict=True)
                    ]
                    summed_statistics = tf.nest.map_structure(tf.add, summed_statistics, statistics)
            grads, finite = replicated_update.summed_gradients(summed_grads, scale)
            return summed_statistics, grads, finite

        zeros = tf.nest.map_structure(lambda spec: tf.zeros(spec.shape), task.statistics_spec)

        @tf.function(autograph=False)  # the loop is written out: converting it costs seconds of start-up
        def loop(iterator, steps):
            """Runs `steps` global batches; returns the applied steps' summed statistics and the skipped
            steps' count."""

            def body(index, totals, skipped):
                statistics, grads, finite = strategy.run(replica_step, args=(next(iterator),))
                statistics = tf.nest.map_structure(
                    lambda value: strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None), statistics
                )
                applied = replicated_update.apply_or_skip(
                    strategy, optimizer, model.trainable_variables, grads, finite, loss_scale
                )
                totals = tf.nest.map_structure(
                    lambda total, value: total + tf.where(applied, value, tf.zeros_like(value)),
                    totals, statistics,
                )  # fmt: skip
                with tf.control_dependencies(tf.nest.flatten(statistics)):  # counted once its batch arrived
                    self.batches.assign_add(1)
                return index + 1, totals, skipped + 1.0 - tf.cast(applied, tf.float32)

            start = (tf.constant(0), zeros, tf.constant(0.0))
            _, totals, skipped = tf.while_loop(lambda index, *_: index < steps, body, start)
            return totals, skipped

        return loop

    def run_steps(self, count):
        """Runs `count` global batches from the input position (one call into the compiled loop); returns
        the applied steps' summed statistics and the skipped steps' count, as tensors."""
        if self._iterator is None:
            self._iterator = iter(self.task.train_input(self.strategy, int(self.batches.numpy())))
        return self._loop(self._iterator, tf.constant(count))

    # The run ----------------------------------------------------------------------------------------------

    def train(self):
        """Trains to train_steps from the restored step; evaluates every eval_every_steps and at the end.

        Returns the evaluation the run ends with: the best one when the task ends_with_best and one was
        kept, else the last (None when the task evaluates nothing, or none was made). TrainingError when a
        file of the run cannot be written for a full disk, saying which checkpoint is kept.
        """
        try:
            return self._train()
        except file_io.DiskFullError as error:
            raise TrainingError(f"{error}. {self.resume_advice()}") from None
        finally:
            # The training input (its threads and prefetched batches) goes when training ends, not when the
            # garbage collector finds this engine (its tf.functions keep it in a reference cycle). Deleting a
            # tf.data iterator can wait out the rest of its autotuning thread's sleep, which grows with the
            # iterator's age to a minute, and a collection that deletes it holds the interpreter meanwhile.
            self._iterator = None

    def _train(self):
        s = self.settings
        step = self.step
        every = [
            s.log_every_steps,
            s.save_checkpoints_steps,
            *([s.eval_every_steps] if s.eval_every_steps else []),
        ]
        started, start_step = time.perf_counter(), step
        window = self._new_window()
        results = None
        while step < s.train_steps:
            boundary = min([s.train_steps, step + s.steps_per_loop] + [(step // n + 1) * n for n in every])
            try:
                statistics, skips = self.run_steps(boundary - step)
            except tf.errors.DataLossError as error:
                raise self._data_error(error) from None
            step = self.step
            window["statistics"] = tf.nest.map_structure(
                lambda total, value: total + value.numpy(), window["statistics"], statistics
            )
            window["skipped"] += float(skips)
            self._check_finite(window["statistics"], step)
            collapse = None
            if step % s.log_every_steps == 0 or step == s.train_steps:
                collapse = self._progress_line(window, step, started, start_step)
                window = self._new_window()
            if step == s.train_steps or (s.eval_every_steps and step % s.eval_every_steps == 0):
                results = self.evaluate(keep_best=True)
                collapse = collapse or (results or {}).get("collapse")
            if collapse and s.rollback_on_collapse:
                step = self.roll_back(collapse, step)
                window = self._new_window()
                continue
            if step % s.save_checkpoints_steps == 0 or step == s.train_steps:
                self._save(self.manager, step)
        return self._end(results)

    def roll_back(self, reason, step):
        """Restores the newest checkpoint of a healthy step, keeps the input going on from where it is (the
        batches around the collapse are not seen again), lowers the learning rate and says so; returns the
        step restored. TrainingError when no checkpoint precedes the collapse, or after MAX_ROLLBACKS."""
        s, state = self.settings, self.state
        healthy = [path for path in self.manager.checkpoints if _step_of(path) <= state.guard.healthy_step]
        if not healthy or state.rollbacks == MAX_ROLLBACKS:
            why = "no checkpoint precedes it" if not healthy else f"{MAX_ROLLBACKS} rollbacks did not help"
            raise DivergenceError(
                f"{reason} at step {step}, and {why}; stopping. Lower --learning_rate, raise "
                "--num_warmup_steps, or check the data of the steps around it"
            )
        path, position = healthy[-1], int(self.batches.numpy())
        # What the run has learned since that checkpoint stays: the best evaluation and the guard's readings.
        kept = [(variable, variable.numpy()) for variable in (self.best_value, self.best_step)]
        kept_state = state.serialize()
        scale = float(self.learning_rate_scale.numpy()) * s.rollback_learning_rate_factor
        self._restore_from(path)
        self.batches.assign(position)
        for variable, value in kept:
            variable.assign(value)
        state.deserialize(kept_state)
        self.learning_rate_scale.assign(scale)
        state.rollbacks += 1
        # The next evaluation's entry says it; the weights it evaluates are not those that collapsed.
        note = f"{reason} at step {step}: rolled back to step {self.step}"
        state.spike, state.rolled_back = None, "; ".join(filter(None, (state.rolled_back, note)))
        state.guard.rolled_back(self.step)
        self.log.line(
            f"{reason} at step {step}: rolled back to {path} (step {self.step}); the learning rate is now "
            f"{scale:g}x the schedule's; the input goes on from global batch {position}"
        )
        return self.step

    def _save(self, manager, step):
        """Saves manager's checkpoint of step; returns its path. On a full disk, its partial folder (which
        TensorFlow leaves, `ckpt-N_temp`) is removed and DiskFullError names the checkpoint."""
        prefix = file_io.join(manager.directory, f"ckpt-{step}")
        try:
            with file_io.disk_full_named(prefix):
                return manager.save(checkpoint_number=step)
        except file_io.DiskFullError:
            file_io.rmtree(f"{prefix}_temp")
            raise

    def _remove_partial_checkpoints(self):
        """Removes the partial checkpoint folders a run stopped while saving left (`ckpt-N_temp`: a full
        disk, a kill), which nothing reads and which can be as large as a checkpoint."""
        folders = [self.manager.directory, self.best.directory]
        for partial in sorted(
            path for folder in folders for path in file_io.glob(file_io.join(folder, "*_temp"))
        ):
            file_io.rmtree(partial)
            self.log.line(f"removed {partial}, a checkpoint a stopped run left half-written")

    def resume_advice(self, training=True):
        """What a run stopped by a full disk keeps, and how to go on (training: else an evaluation alone)."""
        latest = self.manager.latest_checkpoint
        if not training:
            return "Free space, then run the same command again"
        if not latest:
            return "No checkpoint was written yet: free space, then run the same command again"
        megabytes, step = (
            sum(file_io.size(path) for path in file_io.glob(f"{latest}.*")) / 1e6,
            _step_of(latest),
        )
        return (
            f"Step {step} is kept in {latest} (a checkpoint takes {megabytes:,.1f} MB there): free space, "
            f"then run the same command again; it goes on from step {step}"
        )

    def _end(self, results):
        """After the last step: the best evaluation's weights back in the model (a task's best_metric), the
        scratch folder of a task that is not the chief removed; returns the evaluation the run ends with."""
        best_step = int(self.best_step.numpy())
        if self.task.best_metric and self.task.ends_with_best and best_step >= 0:
            path = self.best.latest_checkpoint
            with distribution.checked_together(self.strategy):  # the chief's refusal stops every task
                if self.chief and (path is None or _step_of(path) != best_step):
                    raise ValueError(
                        f"the best evaluation is step {best_step}'s, but {self.best.directory} holds "
                        f"{path or 'no checkpoint'}: the run cannot end with that evaluation's weights (its "
                        f"last step's are in {self.manager.latest_checkpoint})"
                    )
            # The weights alone: the value is the run's already (and older best checkpoints lack it).
            status = tf.train.Checkpoint(model=self.model).restore(path)
            status.assert_existing_objects_matched().expect_partial()
            results = self.state.best_results or results
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            # The last save is collective, but each task writes its files alone: a task removing the folders
            # made for its scratch must wait until the chief's files are in them (on shared storage they are
            # the chief's folders too), or it removes a folder the chief is still saving into.
            distribution.gather_rows(self.strategy, [0])
        if self.scratch:
            file_io.rmtree(self.scratch)
            file_io.remove_empty(self._scratch_folders)
        return results

    def _progress_line(self, window, step, started, start_step):
        """Says and records a window's training metrics; returns why the run looks collapsed, or None."""
        s = self.settings
        elapsed = time.perf_counter() - window["start"]
        scalars, text = self.task.progress(window["statistics"])
        examples = (int(self.batches.numpy()) - window["batches"]) * s.train_batch_size
        rate = examples / max(elapsed, 1e-9)
        learning_rate = float(self.task.schedule(step - 1))
        eta = (time.perf_counter() - started) / max(step - start_step, 1) * (s.train_steps - step)
        skipped = window["skipped"]
        overflow = f" | {int(skipped)} float16 overflow steps skipped" if skipped else ""
        collapse = self.state.guard.loss(scalars["loss"], step)
        self.state.spike = collapse or self.state.spike
        self.log.line(
            f"step {step}/{s.train_steps} | {text} | lr {learning_rate:.3e} | {rate:.1f} examples/s | "
            f"ETA {duration(eta)} | {memory.peak_text()}{overflow}"
            + (f" | collapse: {collapse}" if collapse else "")
        )
        scalars = {**scalars, "learning_rate": learning_rate, "examples_per_second": rate,
                   "peak_host_memory_gb": memory.host_peak_bytes() / 1e9}  # fmt: skip
        if self.loss_scale is not None:
            scalars["loss_scale"] = float(self.loss_scale.scale.numpy())
        self.log.scalars("train", scalars, step)
        return collapse

    def _new_window(self):
        """What a progress line sums up: since when, from which input position, the statistics, the
        skipped steps."""
        return {
            "start": time.perf_counter(),
            "batches": int(self.batches.numpy()),
            "statistics": tf.nest.map_structure(lambda spec: np.zeros(spec.shape), self.task.statistics_spec),
            "skipped": 0.0,
        }

    def _data_error(self, error):
        """Saves the last completed step (a failed read stops a step before it changes anything) and returns
        the TrainingError that names the damaged file."""
        step, batch = self.step, int(self.batches.numpy())
        latest = self.manager.latest_checkpoint
        if not latest or not latest.endswith(f"-{step}"):
            latest = self._save(self.manager, step)
        where = self.task.failed_read(batch) or error.message.strip()
        return TrainingError(
            f"the training records fail to read at step {step + 1}: {where}. "
            f"Step {step} is saved in {latest}; rebuild the shard (create_pretraining_data writes the same "
            "bytes again) or copy it whole, then run again: the run resumes there"
        )

    def _check_finite(self, statistics, step):
        kept = self.manager.latest_checkpoint or "none: no checkpoint was written yet"
        if self.loss_scale is not None:
            scale = float(self.loss_scale.scale.numpy())
            if scale < MINIMUM_SCALE:
                raise DivergenceError(
                    f"every float16 step overflows (loss scale {scale:g} at step {step}); stopping. "
                    f"Last good checkpoint: {kept}. Lower --learning_rate, or use --mixed_precision=bfloat16."
                )
        elif not all(np.all(np.isfinite(value)) for value in tf.nest.flatten(statistics)):
            raise DivergenceError(
                f"the loss is not finite at step {step} (NaN or Inf); stopping. Last good checkpoint: "
                f"{kept}. Lower --learning_rate, or use --mixed_precision=bfloat16 instead of float16."
            )

    # Evaluation -------------------------------------------------------------------------------------------

    def evaluate(self, keep_best=False, step_known=True):
        """Evaluates, logs, writes eval scalars and records the results in the evaluation history; returns
        them with their `global_step` (None when not step_known: weights that say no step), or None when the
        task has nothing to evaluate.

        keep_best: during training: a collapse is looked for, and a new best of the task's best_metric that
        is not a collapse is saved apart (checkpoints/best) with its results (what the run ends with).
        """
        metrics = self.task.evaluate()
        if metrics is None:
            return None
        step, state = self.step, self.state
        results = {**metrics, "global_step": step if step_known else None}
        if state.rollbacks:
            results["rollbacks"] = state.rollbacks  # weights of the run after that many rollbacks
        if state.rolled_back:
            results["rolled_back"], state.rolled_back = state.rolled_back, None
        collapse = self.task.collapsed(metrics, float(self.best_value.numpy())) if keep_best else None
        collapse = collapse or state.spike  # a spike since the last evaluation is in its entry
        state.spike = None
        if collapse:
            results["collapse"] = collapse
        if self.chief:
            self._record(results)
        self.log.scalars("eval", metrics, step)
        where = f"at step {step}" if step_known else "(the weights say no step)"
        self.log.line(
            f"eval {where}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
            + (f" | collapse: {collapse}" if collapse else "")
        )  # fmt: skip
        metric = self.task.best_metric
        if keep_best and metric and not collapse and metrics[metric] > float(self.best_value.numpy()):
            self.best_value.assign(metrics[metric])
            self.best_step.assign(step)
            self._save(self.best, step)
            state.best_results = results
        return results

    def _record(self, results):
        """Writes results into the evaluation history: in place of the last entry of the same weights (the
        same step after as many rollbacks: an evaluation a run stopped and resumed makes again, or one made
        again alone), else after the others. Every other entry stays: those of steps the run has not reached
        again after a resume, the collapses and what came before each rollback."""

        def weights_of(entry):
            return entry["global_step"], entry.get("rollbacks", 0)

        history = self.history()
        same = [index for index, entry in enumerate(history) if weights_of(entry) == weights_of(results)]
        if same:
            history[same[-1]] = results
        else:
            history.append(results)
        text = "".join(json.dumps(entry, sort_keys=True) + "\n" for entry in history)
        file_io.makedirs(self.settings.output_dir)
        file_io.write_atomically(self.history_path, text.encode())

    def evaluate_each_checkpoint(self, folder, last_step, timeout):
        """Evaluates each checkpoint that lands in `folder` (a run training beside this one), in the order
        they were written, until the one of `last_step`, or `timeout` seconds without a new one; returns the
        last results (None if none landed). Checkpoints that land while one is evaluated are each evaluated
        next; one written again (a rollback saves its steps again) is evaluated again; one deleted before it
        is read (keep_checkpoint_max) is passed over."""
        results, evaluated, waited_since = None, set(), time.monotonic()
        while True:
            state = tf.train.get_checkpoint_state(folder)
            landed = []
            for path in state.all_model_checkpoint_paths if state else []:
                with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                    written = file_io.modified(f"{path}.index")
                    if (path, written) not in evaluated:
                        landed.append((written, path))
            if not landed:
                if time.monotonic() - waited_since > timeout:
                    return results
                time.sleep(1)
                continue
            written, path = min(landed)
            evaluated.add((path, written))
            waited_since = time.monotonic()
            try:
                self.manager.checkpoint.restore(path).expect_partial()
            except (tf.errors.NotFoundError, tf.errors.DataLossError):
                continue
            results = self.evaluate()
            if _step_of(path) >= last_step:
                return results

    def history(self):
        """The evaluation history so far (a list of results, by step)."""
        if not file_io.exists(self.history_path):
            return []
        return [
            json.loads(line) for line in file_io.read_text(self.history_path).splitlines() if line.strip()
        ]
