"""Fine-tuning sweeps: seeds and a grid of settings, each run in its own folder, split over processes, and
gathered into a summary (sweep_summary.py).

    python -m albert_tf.run_classifier --task_name=text --train_file=train.csv --dev_file=dev.csv \
        --model_dir=DIR --learning_rate=1e-5,2e-5,3e-5 --train_batch_size=16,32 --seed=1,2,3,4,5 \
        --output_dir=runs/sweep

Several values of --learning_rate, --train_batch_size, --train_step or --seed make a sweep. A *setting* is
one learning rate, batch size and step count; each setting runs once per seed, in plan order (the settings
in the order the values were given, the seeds within each), into output_dir/<setting>/seed<N>/
(`lr2e-05_batch32_steps1000/seed3/`): a model directory, as a single run's output_dir is (but ending with
its last step's weights and evaluation: PER_RUN), and run.json once the run has ended. Every other flag is
shared by the runs, and output_dir/sweep.json records them with the runs: a sweep started again goes on
where it was (a run that has ended is not run again, one stopped mid-way resumes from its last checkpoint),
more values of the grid's flags add their runs to it, and other values of the shared flags that change what
a run learns are refused before its runs mix with the first ones.

Runs are independent, so processes split them: the process of index i among n takes runs i, i + n,
i + 2n, ... (`task_slot`: --sweep_task_index and --sweep_task_count, or what Slurm array jobs, Kubernetes
indexed Jobs and Vertex AI set), all writing to output_dir on shared storage (any TensorFlow file system).
The process that ends the last run writes the summary; `python -m albert_tf.summarize_sweep` writes it
once they are all gone, or says which runs have not ended.
"""

import dataclasses
import importlib
import itertools
import json
import logging
import os
import sys

from absl import flags

from albert_tf import file_io, model_files
from albert_tf.finetuning import sweep_summary
from albert_tf.finetuning.settings import TASK_MODULES

GRID = ("learning_rate", "train_batch_size", "train_step", "seed")  # the flags that take several values
# Flags a sweep may be started again with other values of: they change how runs go, not what they learn.
NOT_COMPARED = ("output_dir", "strategy", "tpu", "eval_batch_size", "keep_checkpoint_max", "do_predict")
# Each run ends with its last step's weights and evaluation: the best of several evaluations of one run would
# flatter the settings that evaluate more often or train longer.
PER_RUN = {"end_with_best": False}
VERTEX_POOLS = ("workerpool0", "workerpool1")  # Vertex AI's primary replica and its workers


class GridValues(flags.ArgumentParser):
    """The grid's flags' parser: one value, or several separated by commas, as a tuple."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def parse(self, argument):
        items = argument if isinstance(argument, list | tuple) else str(argument).split(",")
        values = tuple(self.kind(item.strip() if isinstance(item, str) else item) for item in items)
        if len(set(values)) < len(values):
            raise ValueError(f"{argument}: a value is given twice")
        return values

    def flag_type(self):
        return f"comma-separated list of {self.kind.__name__}"


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a sweep: its setting's values and its seed."""

    learning_rate: float
    train_batch_size: int
    train_step: int
    seed: int

    @property
    def setting(self):
        """The setting's name, its folder under output_dir (repr: the shortest text that reads back as the
        same float, so two learning rates never share a folder)."""
        return f"lr{self.learning_rate!r}_batch{self.train_batch_size}_steps{self.train_step}"

    @property
    def folder(self):
        return f"{self.setting}/seed{self.seed}"


@dataclasses.dataclass(frozen=True)
class Slot:
    """Which share of the runs this process takes: runs index, index + count, ...; source: where the index
    came from, as the log says it."""

    index: int = 0
    count: int = 1
    source: str = ""


def plan(grid):
    """The sweep's runs in plan order. grid: {flag of GRID: tuple of its values}."""
    settings = itertools.product(grid["learning_rate"], grid["train_batch_size"], grid["train_step"])
    return [Run(*setting, seed) for setting in settings for seed in grid["seed"]]


def task_slot(index=None, count=None, environ=None):
    """This process's Slot: from the flags (--sweep_task_index, --sweep_task_count), else from the
    scheduler's environment: a Slurm array job (SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP, _COUNT), a
    Kubernetes indexed Job (JOB_COMPLETION_INDEX; the count, which it does not set, from --sweep_task_count),
    Vertex AI (CLUSTER_SPEC: the replicas of worker pools 0 and 1, in order); else the only one.
    --sweep_task_count=1 alone is one process whatever the environment says. ValueError naming the flag or
    variable when they do not make one."""
    environ = os.environ if environ is None else environ
    source = "--sweep_task_index"
    if index is None and count == 1:  # one process, whatever the scheduler says (an array of other jobs)
        return Slot()
    if index is None:
        index, from_environment, source = _index_from(environ)
        count = count if count is not None else from_environment
    if index is None:
        if count not in (None, 1):
            raise ValueError(f"--sweep_task_count={count} needs --sweep_task_index, this process's index")
        return Slot()
    if count is None:
        raise ValueError(
            f"{source} gives this process's index but not how many processes share the sweep: give "
            "--sweep_task_count (a Kubernetes indexed Job's .spec.completions)"
        )
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"{source}: index {index} of {count} processes; expected 0 ≤ index < count ≥ 1")
    return Slot(index, count, source)


def _index_from(environ):
    """(index, count or None, the variable they came from) of the scheduler's environment, or Nones."""
    if "SLURM_ARRAY_TASK_ID" in environ:
        task = _integer(environ, "SLURM_ARRAY_TASK_ID", 0)
        first = _integer(environ, "SLURM_ARRAY_TASK_MIN", 0)
        step = _integer(environ, "SLURM_ARRAY_TASK_STEP", 1)
        count = _integer(environ, "SLURM_ARRAY_TASK_COUNT", 0)
        last = _integer(environ, "SLURM_ARRAY_TASK_MAX", first + step * (count - 1))
        if (task - first) % step or count < 1 or last != first + step * (count - 1):
            raise ValueError(
                f"SLURM_ARRAY_TASK_ID={task} is not one of an array of evenly spaced indices from "
                f"SLURM_ARRAY_TASK_MIN={first} to _MAX={last} by SLURM_ARRAY_TASK_STEP={step}, {count} "
                "tasks (--array=0-N or A-B:S); give --sweep_task_index and --sweep_task_count"
            )
        return (task - first) // step, count, "SLURM_ARRAY_TASK_ID"
    if "JOB_COMPLETION_INDEX" in environ:
        return _integer(environ, "JOB_COMPLETION_INDEX", 0), None, "JOB_COMPLETION_INDEX"
    if "CLUSTER_SPEC" in environ:
        try:
            spec = json.loads(environ["CLUSTER_SPEC"])
            pools, task = spec["cluster"], spec["task"]
            sizes = [len(pools.get(pool, ())) for pool in VERTEX_POOLS]
            kind, index = task["type"], int(task["index"])
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                "CLUSTER_SPEC: expected Vertex AI's {'cluster': {pool: [replicas]}, 'task': {'type': pool, "
                f"'index': i}} ({error!r}); give --sweep_task_index and --sweep_task_count"
            ) from None
        if kind not in VERTEX_POOLS:
            raise ValueError(
                f"CLUSTER_SPEC: this replica is in {kind}; a sweep's processes are the replicas of "
                f"{' and '.join(VERTEX_POOLS)} (the other pools are parameter servers, reduction servers or "
                "evaluators)"
            )
        return sum(sizes[: VERTEX_POOLS.index(kind)]) + index, sum(sizes), "CLUSTER_SPEC"
    return None, None, None


def _integer(environ, name, default):
    try:
        return int(environ.get(name, default))
    except ValueError:
        raise ValueError(f"{name}={environ[name]!r}: expected a whole number") from None


def shared_settings(settings):
    """The settings every run of the sweep shares and that change what it learns, by flag: all but the
    grid's and NOT_COMPARED."""
    values = dataclasses.asdict(settings)
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in values.items()
        if name not in GRID + NOT_COMPARED + tuple(PER_RUN)
    }


def check_single(settings):
    """A single run does not write into a sweep's folder (its files would stand for the sweep's model)."""
    if file_io.exists(file_io.join(settings.output_dir, model_files.SWEEP_FILE)):
        raise ValueError(
            f"--output_dir={settings.output_dir} holds a sweep ({model_files.SWEEP_FILE}): give the sweep's "
            "values of --seed and the grid's flags to go on with it, or another --output_dir"
        )


def check(settings, grid, command):
    """Before TensorFlow starts: a sweep's settings are ones it can run, compare and go on with. ValueError
    when it would train nothing, evaluate nothing, train across a cluster, when a value of the grid does not
    go with the other flags, or when output_dir holds a model, or a sweep of another command or of other
    shared settings (naming the flags that differ)."""
    s = settings
    for steps in grid["train_step"]:
        if not 0 <= s.warmup_step <= steps:
            raise ValueError(f"--warmup_step={s.warmup_step} must be at most each --train_step, not {steps}")
    for batch in grid["train_batch_size"]:
        if batch % s.gradient_accumulation_steps:
            raise ValueError(
                f"--train_batch_size={batch} must be divisible by --gradient_accumulation_steps="
                f"{s.gradient_accumulation_steps}"
            )
    if not (s.do_train and s.do_eval):
        raise ValueError(
            "a sweep (several values of --seed or of the grid's flags) trains and evaluates each run: "
            "leave --do_train and --do_eval on"
        )
    if s.strategy == "multi_worker_mirrored":
        raise ValueError(
            "a sweep's runs are split over processes by --sweep_task_index, not trained across a cluster: "
            "use --strategy=default or mirrored"
        )
    if model_files.run_model_config(s.output_dir) or model_files.is_model_dir(s.output_dir):
        raise ValueError(f"--output_dir={s.output_dir} holds a model directory: a sweep needs its own folder")
    before = _read_plan(s.output_dir)
    if before is None:
        return
    if before["command"] != command:
        raise ValueError(
            f"--output_dir={s.output_dir} holds a sweep of {before['command']}; give another folder"
        )
    shared = shared_settings(s)
    differ = sorted(
        name
        for name in shared.keys() | before["shared"].keys()
        if shared.get(name) != before["shared"].get(name)
    )
    if differ:
        shown = ", ".join(
            f"--{name}={before['shared'].get(name)} there, {shared.get(name)} here" for name in differ
        )
        raise ValueError(
            f"--output_dir={s.output_dir} holds a sweep of other settings ({shown}): its runs would not "
            "compare with these; give another --output_dir"
        )


def _read_plan(output_dir):
    path = file_io.join(output_dir, model_files.SWEEP_FILE)
    if not file_io.exists(path):
        return None
    return sweep_summary.read_plan(output_dir)


def run(settings, grid, data, command, slot=Slot()):
    """Runs this process's share of the sweep and, when every run has ended, writes its summary (see the
    module docstring); returns the summary, or None while runs of other processes have not ended.

    Args:
      settings: the command's settings; output_dir is the sweep's folder, and the grid's flags are set per
        run.
      grid: {flag of GRID: tuple of values}.
      data: what task_data.read read, shared by the runs (read with the grid's largest batch).
      command: "run_classifier", "run_race" or "run_squad".
      slot: this process's share (task_slot).
    """
    import keras  # the runs have started TensorFlow already
    import tensorflow as tf

    from albert_tf.training.engine import DivergenceError

    module = importlib.import_module(TASK_MODULES[command])
    check(settings, grid, command)  # again: another process may have written the plan since
    if os.environ.pop("TF_CONFIG", None):
        # Vertex AI, for one, describes its replicas as one TensorFlow cluster; here each run trains alone.
        _say(command, "TF_CONFIG left out: each run trains in this process alone")
    # Each run traces its own training functions: TensorFlow counts them as one function retraced.
    tf.get_logger().addFilter(_NotRetracing())
    runs = _extend_plan(settings, command, plan(grid), module.constant_baseline(settings, data))
    mine = runs[slot.index :: slot.count]
    share = (
        f" (process {slot.index} of {slot.count} by {slot.source}: {len(mine)} runs)"
        if slot.count > 1
        else ""
    )
    _say(command, f"{len(runs)} runs in {settings.output_dir}{share}")
    for number, one in enumerate(mine, 1):
        folder = file_io.join(settings.output_dir, one.folder)
        ended = file_io.join(folder, sweep_summary.RUN_FILE)
        if file_io.exists(ended):
            _say(command, f"run {number} of {len(mine)}: {one.folder} ended before; kept")
            continue
        _say(command, f"run {number} of {len(mine)}: {one.folder}")
        values = dataclasses.asdict(one)
        record = {"run": one.folder, **values, "shared": shared_settings(settings), "stopped": None}
        try:
            module.run(dataclasses.replace(settings, output_dir=folder, **values, **PER_RUN), data)
        except DivergenceError as error:
            record["stopped"] = str(error)
            _say(
                command, f"{one.folder} stopped: {str(error).rstrip('.')}. Counted failed; the sweep goes on"
            )
        file_io.write_atomically(ended, (json.dumps(record, indent=2) + "\n").encode())
        keras.backend.clear_session()  # the next run builds its model afresh; the last one's graphs go
    summary, missing = sweep_summary.gather(settings.output_dir)
    if summary is None:
        _say(
            command,
            f"{len(missing)} runs of other processes have not ended (e.g. {missing[0]}): the one that "
            "ends last writes the summary, or python -m albert_tf.summarize_sweep "
            f"--output_dir={settings.output_dir} once they have",
        )
        return None
    for line in sweep_summary.write(settings.output_dir, summary):
        _say(command, line)
    return summary


def _extend_plan(settings, command, runs, baseline):
    """The sweep's runs: those of the plan in output_dir (sweep.json), then those of `runs` it lacks, which
    are added to it (a grid given more values grows the sweep; nothing it ran is left out of the summary,
    whose earlier version goes). sweep.json holds the command, the shared settings, the runs in plan order
    and the dev split's constant prediction (its keys in the order the task reports them: the first picks).
    ValueError when the dev split's constant prediction differs from the plan's: other dev data."""
    before = _read_plan(settings.output_dir)
    earlier = [Run(*(run[name] for name in GRID)) for run in before["runs"]] if before else []
    if before and before["baseline"] != baseline:
        raise ValueError(
            f"--output_dir={settings.output_dir} holds a sweep evaluated on other dev data (its constant "
            f"prediction scores {before['baseline']}, this data's {baseline}); give another --output_dir"
        )
    added = [run for run in runs if run not in earlier]
    if before and not added:
        return earlier
    if before:
        _say(command, f"{len(added)} runs join the {len(earlier)} of {model_files.SWEEP_FILE}")
        sweep_summary.remove_summary(settings.output_dir)
    every = earlier + added
    record = {
        "command": command,
        "shared": shared_settings(settings),
        "runs": [{"run": one.folder, "setting": one.setting, **dataclasses.asdict(one)} for one in every],
        "metrics": list(baseline),
        "baseline": baseline,
    }
    file_io.makedirs(settings.output_dir)
    path = file_io.join(settings.output_dir, model_files.SWEEP_FILE)
    file_io.write_atomically(path, (json.dumps(record, indent=2) + "\n").encode())
    return every


class _NotRetracing(logging.Filter):
    """Drops TensorFlow's notice that a function is traced again and again, which each run's own
    functions would set off: it asks for a change that does not apply."""

    def filter(self, record):
        return "triggered tf.function retracing" not in record.getMessage()


def _say(command, text):
    print(f"{command}: sweep: {text}", file=sys.stderr, flush=True)
