"""Distribution strategies and mixed-precision policies, by the names the `--strategy` and
`--mixed_precision` flags use."""

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
