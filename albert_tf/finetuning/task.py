"""What every fine-tuning entry point shares (run_classifier, run_race, run_squad): the task the training
engine trains (albert_tf/training/engine.py), and `run`.

A task subclasses `FineTuningTask`, named like its command (`name`, which also picks its reader in
task_data.py), and says what it makes of the examples read (`_prepare`), how to build its model
(`_build_model`), make batches (`_dataset`), what loss to train (`_example_losses`), how to score the dev
split (`_evaluate`, `metric_names`) and what to predict (`predict`). The training: the original's AdamW (no
bias correction, weight decay 0.01, clipping 1.0) with warmup + linear decay; an evaluation every
`save_checkpoints_steps`, when a checkpoint is saved; the best evaluation's weights kept and restored at the
end. In `output_dir`: a model directory whose `task_model.keras` is the best evaluation's model (ready for
`export_saved_model`), `eval_results.json` (metrics by name, from the best evaluation, and its `global_step`),
the evaluation history, checkpoints and TensorBoard summaries. A run started again with the same flags resumes
from its last checkpoint and ends as an uninterrupted run does.

Under any strategy the batch sizes are global. Each global batch is split between the replicas as Keras
splits it for `fit` (`experimental_distribute_dataset`), and the engine makes the one-device update from
them. Only the chief writes the run's outputs. Evaluation is `model.predict`, which distributes and gathers
in order on every strategy.
"""

import json

import keras
import tensorflow as tf

from albert_tf import file_io, model_files
from albert_tf.finetuning import task_data
from albert_tf.finetuning.settings import FineTuningSettings
from albert_tf.models import model_dir
from albert_tf.training import distribution
from albert_tf.training.engine import Engine, EngineSettings, Task, TrainingError, check_batch
from albert_tf.training.optimizers import AdamWeightDecay
from albert_tf.training.run_log import RunLog
from albert_tf.training.schedules import WarmupPolynomialDecay


def engine_settings(settings: FineTuningSettings) -> EngineSettings:
    """Fine-tuning steps, logs, evaluates and saves every save_checkpoints_steps."""
    s = settings
    every = s.save_checkpoints_steps
    return EngineSettings(
        output_dir=s.output_dir, train_steps=s.train_step, train_batch_size=s.train_batch_size,
        gradient_accumulation_steps=s.gradient_accumulation_steps, steps_per_loop=every,
        log_every_steps=every, save_checkpoints_steps=every, keep_checkpoint_max=s.keep_checkpoint_max,
        eval_every_steps=every, jit_compile=s.jit_compile, loss_scaling=s.mixed_precision == "float16",
        rollback_on_collapse=s.rollback_on_collapse,
        rollback_learning_rate_factor=s.rollback_learning_rate_factor,
    )  # fmt: skip


class FineTuningTask(Task):
    """Takes the data read (task_data.read), builds the model and its optimizer under the run's strategy;
    what the engine trains, `predict()`."""

    name = "fine-tuning"  # the entry point, in progress lines

    def __init__(self, settings: FineTuningSettings, data: task_data.TaskData | None = None):
        """data: what task_data.read read (None: read it now, after the strategy is made)."""
        self.settings = s = settings
        self.ends_with_best = s.end_with_best
        self.written = []  # the files `write` wrote, which the run names at its end
        # First: multi-worker collectives must be configured before TensorFlow runs any op.
        if distribution.is_evaluator():
            raise ValueError(
                "TF_CONFIG names this process the cluster's evaluator: fine-tuning evaluates in its training "
                "tasks (every --save_checkpoints_steps); leave the evaluator out of the cluster"
            )
        self.strategy = distribution.create_strategy(s.strategy, s.tpu)
        self.chief = distribution.is_chief(self.strategy)
        with distribution.checked_together(self.strategy):  # a refusal stops every task of a cluster
            check_batch(engine_settings(s), self.strategy)
            keras.utils.set_random_seed(s.seed)
            distribution.set_precision(s.mixed_precision)
            data = data or task_data.read(s, self.name)
            self.spm, self.do_lower_case, self.labels = data.spm, data.do_lower_case, data.labels
            self.keep_accents = data.keep_accents
            self.splits = self._prepare(data.splits)
        with self.strategy.scope():
            self.model = self._build_model()
            self.model.encoder.remat = s.remat
            self.schedule = WarmupPolynomialDecay(s.learning_rate, s.train_step, s.warmup_step)
            self.optimizer = AdamWeightDecay(self.schedule)
            self.optimizer.build(self.model.trainable_variables)

    @property
    def metric_names(self):
        """The metrics `_evaluate` returns; the first picks the best evaluation."""
        raise NotImplementedError

    @property
    def best_metric(self):
        return self.metric_names[0] if "dev" in self.splits else None

    # What the engine trains -------------------------------------------------------------------------------

    @property
    def statistics_spec(self):
        return tf.TensorSpec([2])  # [the summed loss of the examples, their count]

    def train_input(self, strategy, start):
        return strategy.experimental_distribute_dataset(self._dataset("train", is_training=True, start=start))

    def statistics(self, model, batch, training):
        inputs, targets = batch
        losses = tf.cast(self._example_losses(targets, model(inputs, training=training)), tf.float32)
        return tf.stack([tf.reduce_sum(losses), tf.cast(tf.shape(losses)[0], tf.float32)])

    def loss(self, statistics, totals, global_batch):
        del totals
        return statistics[0] / global_batch  # each example's loss over the global batch: the mean

    def progress(self, statistics):
        loss = float(statistics[0] / max(statistics[1], 1.0))
        return {"loss": loss}, f"loss {loss:.4f}"

    def evaluate(self):
        return self._evaluate() if "dev" in self.splits else None

    # What a task says -------------------------------------------------------------------------------------

    def _prepare(self, splits):
        """{split name: what `_dataset` makes batches of}, from the examples read (TaskData.splits)."""
        return splits

    def _build_model(self):
        raise NotImplementedError

    def _example_losses(self, targets, outputs):
        """The training loss of each example of a batch: float32 [batch]."""
        raise NotImplementedError

    def _dataset(self, split, is_training=False, start=None):
        """tf.data batches of a split: (inputs, targets) when training, inputs alone may do otherwise.
        start: training batches repeated without end from batch number `start` (None: one pass)."""
        raise NotImplementedError

    def _evaluate(self):
        """{metric name: value} on the dev split."""
        raise NotImplementedError

    def predict(self):
        """Writes the test split's predictions to output_dir."""
        raise NotImplementedError

    def save(self, step, rollbacks=0):
        """The model directory in output_dir (chief only); step: the one its weights are of, after that many
        rollbacks."""
        if self.chief:
            self._save(self.settings.output_dir, step, rollbacks)

    def write(self, name, text):
        """Writes a text file of output_dir (chief only), whole or not at all."""
        if self.chief:
            file_io.makedirs(self.settings.output_dir)
            path = file_io.join(self.settings.output_dir, name)
            file_io.write_atomically(path, text.encode("utf-8"))
            self.written.append(path)

    def _save(self, directory, step, rollbacks):
        """Writes the model directory: the pretrained files copied from model_dir, and this task model."""
        model_dir.copy_config_and_spm(self.settings.model_dir, directory)
        model_dir.save_task_model(self.model, directory, step, rollbacks)


def run(settings: FineTuningSettings, task_class, data: task_data.TaskData | None = None):
    """Trains (do_train), evaluates (do_eval: eval_results.json) and predicts (do_predict).

    data: what task_data.read read (None: read it now). Every process of a multi-worker run calls it; only
    the chief writes.
    """
    task = task_class(settings, data)
    log = RunLog(task.name, settings.output_dir, task.chief)
    engine = Engine(task, engine_settings(settings), task.strategy, log)
    try:
        return _run(settings, task, engine, log)
    except file_io.DiskFullError as error:  # what is kept, and how to go on
        raise TrainingError(f"{error}. {engine.resume_advice(settings.do_train)}") from None


def _run(settings, task, engine, log):
    """run, once its task and engine are built."""
    best, step_known = None, True
    if settings.do_train:
        with distribution.checked_together(task.strategy):  # a refusal stops every task of a cluster
            engine.restore()
            if task.chief:  # what the checkpoints it writes are of (task_data read the one there)
                model_dir.write_run_model_config(task.model, settings.output_dir)
        best = engine.train()
        # The weights it ends with: the best evaluation's, or the last step's.
        weights = best or {"global_step": engine.step, "rollbacks": engine.state.rollbacks}
        task.save(weights["global_step"], weights.get("rollbacks", 0))
    else:  # the fine-tuned model of model_dir: its results are reported as the weights it was saved with
        step = model_files.global_step(settings.model_dir)
        step_known = step is not None
        task.optimizer.iterations.assign(step or 0)
        engine.state.rollbacks = model_files.rollbacks(settings.model_dir)
    results = None
    if settings.do_eval:
        # After training, the run's evaluation (None without a dev split): every task of a cluster decides
        # alike, as evaluating is a collective.
        results = best if settings.do_train else engine.evaluate(step_known=step_known)
    if results is not None:
        task.write("eval_results.json", json.dumps(results, indent=2, sort_keys=True) + "\n")
    if settings.do_predict:
        task.predict()
    if task.chief:  # where the outputs went, as run_pretraining says it
        out = settings.output_dir
        if settings.do_train:
            log.line(f"model directory: {out} ({', '.join(model_files.files(out))})")
        evaluation = [file_io.join(out, "eval_results.json"), engine.history_path]
        if results is not None:
            log.line(f"evaluation: {', '.join(path for path in evaluation if file_io.exists(path))}")
        predictions = [path for path in task.written if path not in evaluation]
        if predictions:
            log.line(f"predictions: {', '.join(predictions)}")
        if log.summary_folders():
            log.line(f"TensorBoard: tensorboard --logdir {out}")
    return results
