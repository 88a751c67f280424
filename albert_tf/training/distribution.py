"""Distribution strategies and mixed-precision policies, by the names the `--strategy` and
`--mixed_precision` flags use; the collectives every task of a multi-worker run calls alike (`gather_rows`,
`checked_together`)."""

import contextlib
import json
import os

import keras
import tensorflow as tf

STRATEGIES = ("default", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def create_strategy(name, tpu=None):
    """A tf.distribute.Strategy.

    default: one device (the first GPU if any, else the CPU). mirrored: every GPU of this host (or, with
    none, the CPU devices TensorFlow was configured with). multi_worker_mirrored: every GPU of every host
    named in the TF_CONFIG environment variable. tpu: the TPU named by `tpu` ("local" on a TPU VM, a name
    or grpc:// address otherwise).

    Raises:
      ValueError: TF_CONFIG names several training tasks (chief, workers) and `name` is default or mirrored,
        which would train each as a run of its own, all writing one output folder.
    """
    cluster = _tf_config().get("cluster", {})
    tasks = sum(len(cluster.get(job, [])) for job in ("chief", "worker"))
    if name in ("default", "mirrored") and tasks > 1 and not is_evaluator():
        raise ValueError(
            f"TF_CONFIG names a cluster of {tasks} training tasks, which --strategy={name} would train as "
            f"{tasks} separate runs writing one output folder: use --strategy=multi_worker_mirrored, or "
            "unset TF_CONFIG"
        )
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {name!r}")


def set_precision(name):
    """Sets Keras' global dtype policy (before the model is built): float32, bfloat16 or float16."""
    if name not in PRECISIONS:
        raise ValueError(f"mixed_precision must be one of {', '.join(PRECISIONS)}; got {name!r}")
    keras.config.set_dtype_policy(PRECISIONS[name])


def is_chief(strategy):
    """Whether this process writes the run's outputs: the only process, or the cluster's chief.

    The chief is TF_CONFIG's `chief` task when the cluster has one (as Vertex AI, Kubeflow's TFJob and
    SageMaker lay clusters out), else worker 0: TensorFlow's own rule (multi_worker_util.is_chief). Any other
    task (a worker beside a chief, an evaluator) is not.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    # Only TF_CONFIG describes a cluster locally; a TPU resolver's cluster_spec() asks the Cloud TPU API.
    tf_config = isinstance(resolver, tf.distribute.cluster_resolver.TFConfigClusterResolver)
    if tf_config and "chief" in resolver.cluster_spec().jobs:
        return resolver.task_type == "chief"
    return resolver.task_type == "worker" and resolver.task_id == 0


def is_evaluator():
    """Whether TF_CONFIG names this process the cluster's `evaluator` task: it evaluates checkpoints beside
    the training tasks and is no part of their strategy (TensorFlow's convention)."""
    task = _tf_config().get("task", {})
    return task.get("type") == "evaluator"


def _tf_config():
    """The TF_CONFIG environment variable's cluster and task, as a dict ({} when unset)."""
    return json.loads(os.environ.get("TF_CONFIG") or "{}")


def task_id(strategy):
    resolver = getattr(strategy, "cluster_resolver", None)
    return (resolver.task_id or 0) if resolver is not None and resolver.task_type else 0


def trains_in_a_cluster(strategy_name):
    """Whether a run with --strategy=strategy_name is one of several training tasks of TF_CONFIG's cluster
    (read before TensorFlow starts; an evaluator is none)."""
    cluster = _tf_config().get("cluster", {})
    tasks = sum(len(cluster.get(job, [])) for job in ("chief", "worker"))
    return strategy_name == "multi_worker_mirrored" and tasks > 1 and not is_evaluator()


def gather_rows(strategy, row):
    """Every task's `row` (a list of ints, the same length on each), concatenated in task order: a collective
    op, so every task of a multi-worker run must call it, and it returns once all have. NumPy int64."""
    row = tf.constant(row, tf.int64)

    @tf.function(autograph=False)
    def gather():
        return strategy.gather(strategy.run(lambda: tf.identity(row)), axis=0)

    return gather().numpy()


REFUSAL_BYTES = 2000  # the most of a refusal's message another task is told


@contextlib.contextmanager
def checked_together(strategy):
    """Runs the block (the checks of a run's settings and files) and, in a multi-worker run, shares its
    outcome: when any task refused (ValueError, or OSError: a file it cannot read or write), every task
    raises, the others ValueError naming it. A task that stopped alone would leave the others waiting on
    their next collective until it timed out. Every task must enter the same blocks in the same order, and a
    collective inside a block must come before anything in it that can refuse."""
    refusal = None
    try:
        yield
    except (ValueError, OSError) as error:  # a setting, or a file it cannot read or write
        refusal = error
    refuse_together(strategy, refusal)


def refuse_together(strategy, refusal):
    """checked_together's collective: raises `refusal` (an exception or None) on its task and, in a
    multi-worker run, ValueError on every other task when one refused (the first in task order)."""
    others = (
        _share(strategy, refusal) if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) else None
    )
    if refusal is not None:
        raise refusal
    if others:
        raise ValueError(others)


def tell_the_cluster(strategy_name, tpu, refusal):
    """For a refusal before the run's strategy exists: in a multi-worker run, tells the cluster's other
    tasks, which would otherwise wait for this one until their collectives time out (they stop at their
    first checked_together). Starts the strategy."""
    if trains_in_a_cluster(strategy_name):
        _share(create_strategy(strategy_name, tpu), refusal)


def _share(strategy, refusal):
    """Gathers every task's refusal (an exception or None); returns what the first task that refused, other
    than this one, is to be named by ("worker 1 of this run refused, ...: reason"), or None."""
    message = str(refusal).encode("utf-8")[:REFUSAL_BYTES] if refusal is not None else b""
    this_task = [int(is_chief(strategy)), task_id(strategy)]
    row = this_task + [int(refusal is not None), len(message)]
    row += list(message) + [0] * (REFUSAL_BYTES - len(message))
    for chief, task, refused, length, *text in gather_rows(strategy, row).reshape(-1, len(row)):
        if refused and [chief, task] != this_task:
            who = "the chief" if chief else f"worker {task}"
            reason = bytes(int(byte) for byte in text[:length]).decode("utf-8", errors="replace")
            return f"{who} of this run refused, so this task stops too: {reason}"
    return None
