"""Cluster roles: which task of a TF_CONFIG cluster writes a run's outputs, checked against TensorFlow's own
rule, and a chief + worker cluster on loopback with one writer."""

import json
import types

import pytest
import tensorflow as tf
from tensorflow.python.distribute import multi_worker_util

from albert_tf.training import distribution

CLUSTERS = {
    "workers only": {"worker": ["a:1", "b:1", "c:1"]},
    "chief and workers": {"chief": ["a:1"], "worker": ["b:1", "c:1"]},
    "chief, workers, evaluator": {"chief": ["a:1"], "worker": ["b:1"], "evaluator": ["c:1"]},
}


def _strategy_of(cluster, task_type, task_id, monkeypatch):
    """An object with the cluster_resolver a MultiWorkerMirroredStrategy would have for this TF_CONFIG."""
    config = {"cluster": cluster, "task": {"type": task_type, "index": task_id}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    return types.SimpleNamespace(cluster_resolver=tf.distribute.cluster_resolver.TFConfigClusterResolver())


@pytest.mark.parametrize("layout", sorted(CLUSTERS))
def test_the_chief_is_tensorflows_chief(layout, monkeypatch):
    cluster = CLUSTERS[layout]
    chiefs = []
    for task_type, addresses in cluster.items():
        for task_id in range(len(addresses)):
            ours = distribution.is_chief(_strategy_of(cluster, task_type, task_id, monkeypatch))
            # TensorFlow calls an evaluator the chief of its own one-task job; it writes no training output.
            theirs = task_type != "evaluator" and multi_worker_util.is_chief(cluster, task_type, task_id)
            assert ours == theirs, (layout, task_type, task_id)
            chiefs += [(task_type, task_id)] if ours else []
    assert chiefs == ([("chief", 0)] if "chief" in cluster else [("worker", 0)])


def test_one_process_is_its_own_chief():
    assert distribution.is_chief(tf.distribute.get_strategy())


@pytest.mark.parametrize("strategy", ["default", "mirrored"])
def test_a_cluster_of_several_training_tasks_needs_the_multi_worker_strategy(strategy, monkeypatch):
    """Under a one-host strategy each task would train a run of its own, all writing one output folder."""
    config = {"cluster": CLUSTERS["chief and workers"], "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    with pytest.raises(ValueError, match=f"a cluster of 3 training tasks, which --strategy={strategy} would"):
        distribution.create_strategy(strategy)
    # The cluster's evaluator evaluates on one device; one training task is a cluster of one.
    config["task"] = {"type": "evaluator", "index": 0}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    assert distribution.create_strategy(strategy).num_replicas_in_sync >= 1
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}}))
    assert distribution.create_strategy(strategy).num_replicas_in_sync >= 1
