"""The flags every fine-tuning entry point takes (run_classifier, run_race, run_squad), and their `main`.

Each entry point defines its task's own flags next to these, then calls `main(settings_class, command)`:
the flags named like the settings' fields become the settings, those not given taken from a fine-tuned
--model_dir where its model keeps them (settings.saved_settings); the model directory is checked and the
data read (albert_tf/finetuning/task_data.py) before TensorFlow starts (on a local disk; a remote file
system is TensorFlow's); then the task's module (settings.TASK_MODULES) trains: `run(settings, data)`, or
with several values of the grid's flags a sweep (sweep.py). Bad input (a data file, a flag value) ends the
run with one line naming the entry point and the problem.
"""

import dataclasses
import importlib
import sys

from absl import flags

from albert_tf import file_io, model_files, tf_startup
from albert_tf.finetuning import settings as task_settings
from albert_tf.finetuning import sweep, task_data


def _define_values(name, default, kind, text):
    flags.DEFINE(sweep.GridValues(kind), name, default, text, serializer=flags.CsvListSerializer(","))


SWEEPS = "several, comma-separated, make a sweep (docs/finetuning.md)"

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "model_dir", None,
    "The model directory to start from: pretrained (new head) or fine-tuned (its model, whose length, labels "
    "and span settings stand for the flags not given).",
)  # fmt: skip
flags.DEFINE_string("output_dir", None, "Where the fine-tuned model directory and results go.")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per sequence; longer inputs are truncated.")
_define_values(
    "train_batch_size", 32, int, f"Global training batch size (all replicas, one update); {SWEEPS}."
)
flags.DEFINE_integer("eval_batch_size", 64, "Global evaluation and prediction batch size.")
_define_values(
    "learning_rate", 2e-5, float, f"Peak learning rate (AdamW, warmup then linear decay); {SWEEPS}."
)
# The original's names; run_pretraining's (num_train_steps, num_warmup_steps) are taken too. A flag given
# twice, in either spelling, is as any absl flag given twice: the last wins, so a recipe's steps can be
# overridden under either name.
_define_values(
    "train_step",
    1000,
    int,
    f"Training steps (also --num_train_steps; in either spelling the last given wins); {SWEEPS}.",
)
flags.DEFINE_integer(
    "warmup_step", 100, "Warmup steps (also --num_warmup_steps; in either spelling the last given wins)."
)
flags.DEFINE_alias("num_train_steps", "train_step")
flags.DEFINE_alias("num_warmup_steps", "warmup_step")
flags.DEFINE_integer(
    "save_checkpoints_steps", 200,
    "Steps between checkpoints and evaluations: a run started again with the same flags resumes from the "
    "last checkpoint; the best evaluation's weights are kept apart and end the run.",
)  # fmt: skip
flags.DEFINE_integer("keep_checkpoint_max", 2, "Training checkpoints kept (besides the best evaluation's).")
flags.DEFINE_integer(
    "gradient_accumulation_steps", 1,
    "Micro-batches per update: the whole --train_batch_size's update in less memory (it must divide the "
    "batch of each replica).",
)  # fmt: skip
flags.DEFINE_bool(
    "remat", False,
    "Recompute each layer's activations in the backward pass instead of keeping them: the activation memory "
    "of about one layer instead of all, for about one more forward pass a step; the updates are those "
    "without it (dropout drops the same units in both passes).",
)  # fmt: skip
flags.DEFINE_bool(
    "rollback_on_collapse", False,
    "When the smoothed training loss rises over twice its best and by more than a quarter of the chance "
    "loss (ln of the classes; a regression's score variance), go back to the newest checkpoint before it, "
    "lower the learning rate by --rollback_learning_rate_factor and go on with the next batches (at most 3 "
    "times). Without it the run only says so.",
)  # fmt: skip
flags.DEFINE_float(
    "rollback_learning_rate_factor", 0.5, "What each rollback multiplies the learning rate by."
)
flags.DEFINE_bool(
    "end_with_best", True,
    "End with the best evaluation's weights and results (the model directory, eval_results.json); "
    "--noend_with_best: with the last step's. A sweep's runs end with their last step's.",
)  # fmt: skip
flags.DEFINE_float("dropout_rate", 0.1, "Dropout before the task head.")
flags.DEFINE_bool("do_train", True, "Train.")
flags.DEFINE_bool("do_eval", True, "Evaluate on the dev set and write eval_results.json.")
flags.DEFINE_bool("do_predict", False, "Predict the test set.")
flags.DEFINE_enum(
    "strategy", "default", ["default", "mirrored", "multi_worker_mirrored", "tpu"], "Distribution strategy."
)
flags.DEFINE_string("tpu", None, "TPU name or grpc:// address (--strategy=tpu); 'local' on a TPU VM.")
flags.DEFINE_enum("mixed_precision", "float32", ["float32", "bfloat16", "float16"], "Compute dtype.")
flags.DEFINE_bool("jit_compile", False, "Compile training steps with XLA.")
_define_values("seed", 12345, int, f"Seed of initialization, shuffling and dropout; {SWEEPS}.")
flags.DEFINE_integer(
    "sweep_task_index", None,
    "This process's share of a sweep's runs: runs index, index + count, ... (default: Slurm's, a Kubernetes "
    "indexed Job's or Vertex AI's index, else the only process).",
)  # fmt: skip
flags.DEFINE_integer(
    "sweep_task_count", None, "The processes sharing a sweep's runs (see --sweep_task_index)."
)
flags.DEFINE_enum(
    "errors", "strict", ["strict", "replace"],
    "Task data that is not UTF-8: strict refuses the file, naming the line and byte; replace reads each such "
    "byte as U+FFFD, as the served model does.",
)  # fmt: skip
flags.mark_flags_as_required(["model_dir", "output_dir"])


def main(settings_class, command, convert=None):
    """Builds settings_class from the flags of its fields, reads the data with task_data.read(settings,
    command), starts TensorFlow and runs the task's module (settings.TASK_MODULES): `run(settings, data)`,
    or the sweep of the grid's flags given several values (sweep.run); 1 on bad input.

    Args:
      command: "run_classifier", "run_race" or "run_squad": what the data is read as, and the name errors
        start with.
      convert: {field: function} applied to flag values that need it (e.g. a list flag to a tuple).
    """
    values = {field.name: FLAGS[field.name].value for field in dataclasses.fields(settings_class)}
    for name, function in (convert or {}).items():
        values[name] = function(values[name])
    grid = {name: values[name] for name in sweep.GRID}
    values.update({name: grid[name][0] for name in sweep.GRID})  # a sweep sets them per run
    # DataError and TokenizerError are ValueErrors; the training engine's errors join once TensorFlow is in.
    refusals = (ValueError, FileNotFoundError, file_io.DiskFullError)
    try:
        try:
            tf_startup.import_tensorflow_quietly_for(values.values())
            values["model_dir"] = model_files.resolve(values["model_dir"])
            values.update(_from_the_model(command, values))
            settings = settings_class(**values)
            several = len(sweep.plan(grid)) > 1
            slot = _slot(several)
            if several:
                sweep.check(settings, grid, command)
            else:
                sweep.check_single(settings)
            # Read once for every run: checked against the largest batch a run takes.
            largest = dataclasses.replace(settings, train_batch_size=max(grid["train_batch_size"]))
            data = task_data.read(largest, command)
        except (ValueError, FileNotFoundError) as error:
            if values["strategy"] == "multi_worker_mirrored":  # the cluster's other tasks are told first
                tf_startup.import_tensorflow_quietly()
                from albert_tf.training import distribution

                distribution.tell_the_cluster(values["strategy"], values["tpu"], error)
            raise
        tf_startup.import_tensorflow_quietly()
        from albert_tf.training.engine import TrainingError

        refusals += (TrainingError,)
        if several:
            sweep.run(settings, grid, data, command, slot)
        else:
            importlib.import_module(task_settings.TASK_MODULES[command]).run(settings, data)
    except refusals as error:
        print(f"{command}: error: {error}", file=sys.stderr)
        return 1
    return 0


def _slot(several):
    """This process's share of a sweep (sweep.task_slot); a single run refuses --sweep_task_* flags."""
    index, count = FLAGS.sweep_task_index, FLAGS.sweep_task_count
    if not several:
        if index is not None or count is not None:
            raise ValueError(
                "--sweep_task_index and --sweep_task_count split a sweep's runs; this command makes one "
                "run (a sweep takes several values of --seed, --learning_rate, --train_batch_size or "
                "--train_step)"
            )
        return sweep.Slot()
    return sweep.task_slot(index, count)


def _from_the_model(command, values):
    """What a fine-tuned --model_dir keeps (settings.saved_settings) for the flags not given on the command
    line or in a flagfile, where it differs from the flag's default; says on stderr what it took, and which
    flags given differ from the model's."""
    model_dir = values["model_dir"]
    task_model = model_files.task_model_config(model_dir)
    saved = task_settings.saved_settings(command, task_model, model_dir, values)
    given = {name for name in saved if not FLAGS[name].using_default_value}
    taken = {name: value for name, value in saved.items() if name not in given and value != values[name]}
    if taken:
        shown = " ".join(_flag(name, value) for name, value in taken.items())
        print(f"{command}: the fine-tuned model in {model_dir} gives {shown}", file=sys.stderr)
    for name in sorted(name for name in given if values[name] != saved[name]):
        print(
            f"{command}: {_flag(name, values[name])} given; the fine-tuned model in {model_dir} has "
            f"{_flag(name, saved[name])}",
            file=sys.stderr,
        )
    return taken


def _flag(name, value):
    """The flag as a command line gives it."""
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no{name}"
    if isinstance(value, tuple):  # labels, as the list flag takes them
        shown = ",".join(value[:8]) + (f",... ({len(value)} labels)" if len(value) > 8 else "")
        return f"--{name}={shown}"
    return f"--{name}={value}"
