"""A pretraining run: MLM + SOP on TFRecords under any strategy, resumable, evaluated as it goes.

`run(settings)` does what `python -m albert_tf.run_pretraining` does. A run writes into `output_dir` (a local
path or any TensorFlow file system: gs://...):
    checkpoints/            training checkpoints (weights, optimizer, input position, dropout and float16
                            loss-scale states) every `save_checkpoints_steps`; the last `keep_checkpoint_max`
                            are kept;
    train/, eval/           TensorBoard summaries;
    albert_config.json, spm.model, global_step.json, pretrainer.weights.h5   the model directory, at the end;
    eval_results.json       held-out metrics after training, with the step evaluated (global_step);
    eval_history.jsonl      every evaluation, one per line: each --eval_every_steps and the last.
A run started again with the same settings continues from its last checkpoint and ends with the weights an
uninterrupted run would have had: the input is a deterministic function of the seed and the position is
checkpointed (input.py), the only random draws (dropout) come from checkpointed seed-generator
variables. With `do_train=False` it evaluates the latest checkpoint in output_dir, or init_checkpoint, and
reports the step those weights were trained to (null when init_checkpoint does not say: a Hugging Face
directory, a model directory written before global_step.json existed).

The parts: input.py (datasets), task.py (model, optimizer, losses: what the training engine,
albert_tf/training/engine.py, trains), evaluator.py.
"""

import dataclasses
import json

import keras
import tensorflow as tf

from albert_tf import file_io, model_files
from albert_tf.config import AlbertConfig
from albert_tf.models import model_dir
from albert_tf.pretraining.input import PretrainingInput
from albert_tf.pretraining.settings import PretrainingSettings
from albert_tf.pretraining.task import PretrainingTask
from albert_tf.text.tokenizer import check_fits_vocabulary
from albert_tf.training import distribution
from albert_tf.training.engine import Engine, EngineSettings, TrainingError, check_batch
from albert_tf.training.run_log import RunLog

__all__ = ["PretrainingRun", "PretrainingSettings", "TrainingError", "build", "run"]
EVAL_RESULTS_FILE = "eval_results.json"
CONTINUOUS_EVAL = "continuous_eval"  # an evaluator's folder in output_dir


def _training_checkpoint(path):
    """The prefix of a training checkpoint of ours at path (a prefix, or a folder of them), or None."""
    prefix = tf.train.latest_checkpoint(path) if file_io.isdir(path) else path
    if not prefix or not file_io.exists(f"{prefix}.index"):
        return None
    names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    return (
        prefix
        if "_CHECKPOINTABLE_OBJECT_GRAPH" in names and any(n.startswith("model/") for n in names)
        else None
    )


def _start_from(task, engine, path, log, train):
    """Loads --init_checkpoint's weights (a training checkpoint's optimizer too when not `train`).

    Returns:
      (its SentencePiece model or None, the step its weights were trained to or None when it does not say:
      a training checkpoint's, a model directory's global_step.json, a TF1 checkpoint's global_step).

    Raises:
      TokenizerError: its SentencePiece model or casing is not the one the records were built with.
    """
    prefix = _training_checkpoint(path)
    if prefix:
        # A run starts a new optimizer; evaluation alone takes the saved one, for its step count.
        parts = {"model": task.model} if train else {"model": task.model, "optimizer": task.optimizer}
        tf.train.Checkpoint(**parts).restore(prefix).expect_partial()
        log.line(f"weights from the training checkpoint {prefix}")
        return None, engine.step
    from albert_tf.checkpoints import convert

    conversion = convert.from_any(path)
    task.inputs.check_starting_model(
        path, conversion.spm_model, conversion.do_lower_case, conversion.keep_accents
    )
    task.load_weights_of(conversion.pretrainer, path)
    for note in conversion.notes:
        log.line(note)
    return conversion.spm_model, conversion.global_step


def _restore_or_start(settings, task, engine, log):
    """Restores the run's last checkpoint, or loads --init_checkpoint's weights when it has none.

    Returns:
      (the SentencePiece model of the run, or None; whether the step of the weights is known).
    """
    s = settings
    spm_model, step_known = s.spm_model_file, True
    restored = engine.restore(partial=not s.do_train)
    if restored and s.init_checkpoint and not s.do_train:  # which of the two to evaluate is not said
        raise ValueError(
            f"--nodo_train --init_checkpoint={s.init_checkpoint}, but --output_dir={s.output_dir} holds "
            "checkpoints too: give another --output_dir to evaluate --init_checkpoint, or leave it out to "
            "evaluate the latest checkpoint there"
        )
    if not restored and s.init_checkpoint:
        converted_spm, evaluated_step = _start_from(task, engine, s.init_checkpoint, log, s.do_train)
        spm_model = spm_model or converted_spm
        if not s.do_train:  # evaluation alone reports the step of the weights it evaluates
            step_known = evaluated_step is not None
            task.optimizer.iterations.assign(evaluated_step or 0)
    elif not restored and not s.do_train:
        raise ValueError(
            f"nothing to evaluate: no checkpoint in {engine.manager.directory} and no --init_checkpoint"
        )
    if s.init_checkpoint and not spm_model:
        spm_model = model_files.spm_model_file(s.init_checkpoint)
    return spm_model, step_known


@dataclasses.dataclass
class PretrainingRun:
    """A built run: its parts, restored from its last checkpoint (or started from init_checkpoint)."""

    settings: PretrainingSettings
    strategy: tf.distribute.Strategy
    task: PretrainingTask
    engine: Engine
    inputs: PretrainingInput
    log: RunLog
    spm_model: str | None
    step_known: bool = True

    @property
    def model(self):
        return self.task.model

    @property
    def chief(self):
        return self.engine.chief

    def train(self):
        """Trains to num_train_steps, evaluating every eval_every_steps and at the end; returns the last
        evaluation (None without held-out records)."""
        return self.engine.train()

    def evaluate(self):
        return self.engine.evaluate(step_known=self.step_known)


def engine_settings(settings: PretrainingSettings) -> EngineSettings:
    s = settings
    return EngineSettings(
        output_dir=s.output_dir, train_steps=s.num_train_steps, train_batch_size=s.train_batch_size,
        gradient_accumulation_steps=s.gradient_accumulation_steps, steps_per_loop=s.steps_per_loop,
        log_every_steps=s.log_every_steps, save_checkpoints_steps=s.save_checkpoints_steps,
        keep_checkpoint_max=s.keep_checkpoint_max, eval_every_steps=s.eval_every_steps,
        jit_compile=s.jit_compile, loss_scaling=s.mixed_precision == "float16",
        rollback_on_collapse=s.rollback_on_collapse,
        rollback_learning_rate_factor=s.rollback_learning_rate_factor,
    )  # fmt: skip


def build(settings: PretrainingSettings, restore=True) -> PretrainingRun:
    """Sets the strategy, precision and seed, and builds the run's parts (see the module docstring); with
    `restore`, restored from the run's last checkpoint or started from init_checkpoint."""
    s = settings
    s.check()
    # First: multi-worker collectives must be configured before TensorFlow runs any op.
    strategy = distribution.create_strategy(s.strategy, s.tpu)
    with distribution.checked_together(strategy):  # a refusal stops every task of a cluster
        check_batch(engine_settings(s), strategy)
        replicas = strategy.num_replicas_in_sync
        if s.eval_batch_size % replicas:
            raise ValueError(
                f"--eval_batch_size={s.eval_batch_size} must be divisible by the {replicas} replica(s)"
            )
        keras.utils.set_random_seed(s.seed)
        distribution.set_precision(s.mixed_precision)
        log = RunLog("run_pretraining", s.output_dir, distribution.is_chief(strategy))
        config = AlbertConfig.from_json_file(s.albert_config_file)
        inputs = PretrainingInput(s, config.vocab_size, log)
    task = PretrainingTask(s, strategy, config, inputs)
    engine = Engine(task, engine_settings(s), strategy, log)
    with distribution.checked_together(strategy):
        spm_model, step_known = (
            _restore_or_start(s, task, engine, log) if restore else (s.spm_model_file, True)
        )
        if spm_model:  # before the first step: an id past the embedding table fails mid-graph, or reads zeros
            check_fits_vocabulary(spm_model, config.vocab_size, s.albert_config_file)
    start = int(engine.batches.numpy())
    if s.do_train and engine.step < s.num_train_steps:
        cost = inputs.resume_cost(start)
        if cost:
            log.line(cost)
    return PretrainingRun(s, strategy, task, engine, inputs, log, spm_model, step_known)


def run(settings: PretrainingSettings):
    """Trains (do_train), evaluates (do_eval), writes the outputs; returns the final eval results or None.
    With continuous_eval, or as TF_CONFIG's `evaluator` task: evaluate_continuously."""
    if settings.continuous_eval or distribution.is_evaluator():
        return evaluate_continuously(settings)
    run_ = build(settings)
    try:
        results = run_.train() if settings.do_train else None
        if results is None and run_.task.evaluator:  # evaluation alone, or a run already at its last step
            results = run_.evaluate()
        if run_.chief:
            _write_outputs(run_, results)
    except file_io.DiskFullError as error:  # what is kept, and how to go on
        raise TrainingError(f"{error}. {run_.engine.resume_advice(settings.do_train)}") from None
    return results


def evaluate_continuously(settings: PretrainingSettings):
    """Evaluates each checkpoint of settings.output_dir as it lands, beside a training run with the same
    settings, until the checkpoint of num_train_steps (or continuous_eval_timeout seconds without a new one).
    On one device, whatever the training run's strategy; results, history and summaries go to
    output_dir/continuous_eval/. Returns the last results (None when no checkpoint landed)."""
    s = settings
    watched = file_io.join(s.output_dir, "checkpoints")
    own = file_io.join(s.output_dir, CONTINUOUS_EVAL)
    run_ = build(dataclasses.replace(s, strategy="default", do_train=False, output_dir=own), restore=False)
    results = run_.engine.evaluate_each_checkpoint(watched, s.num_train_steps, s.continuous_eval_timeout)
    if results is not None:
        path = file_io.join(own, EVAL_RESULTS_FILE)
        _write_results(path, results)
    return results


def _write_results(path, results):
    file_io.write_atomically(path, (json.dumps(results, indent=2, sort_keys=True) + "\n").encode())


def _write_outputs(run_, results):
    """The model directory (after training) and eval_results.json; says what went where."""
    s, log = run_.settings, run_.log
    if s.do_train:
        model_dir.save_model_dir(
            run_.model, s.output_dir, spm_model=run_.spm_model, step=run_.engine.step,
            do_lower_case=run_.inputs.do_lower_case, keep_accents=run_.inputs.keep_accents,
        )  # fmt: skip
        log.line(f"model directory: {s.output_dir} ({', '.join(model_files.files(s.output_dir))})")
    if results is not None:
        path = file_io.join(s.output_dir, EVAL_RESULTS_FILE)
        _write_results(path, results)
        history = run_.engine.history_path
        log.line(f"evaluation: {', '.join([path] + ([history] if file_io.exists(history) else []))}")
    elif s.do_eval and not s.eval_input_file:
        log.line("no evaluation: no --eval_input_file")
    if log.summary_folders():
        log.line(f"TensorBoard: tensorboard --logdir {s.output_dir}")
