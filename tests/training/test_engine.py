"""The training engine's rule for tasks that hold different checkpoints (the runs: tests/pretraining and
tests/finetuning)."""

import pytest

from albert_tf.training.engine import TrainingError, newest_common_step


def test_tasks_take_the_newest_step_they_all_hold():
    assert newest_common_step({"this task": [4, 8]}) == 8
    assert newest_common_step({"chief": [3, 6], "worker 0": [3]}) == 3
    assert newest_common_step({"worker 0": [2, 4, 6], "worker 1": [4, 6, 8]}) == 6
    assert newest_common_step({"chief": [], "worker 0": []}) is None


def test_tasks_without_a_step_in_common_stop_the_run_naming_their_steps():
    with pytest.raises(TrainingError, match="chief holds 3, 6; worker 0 holds none"):
        newest_common_step({"chief": [3, 6], "worker 0": []})
    with pytest.raises(TrainingError, match="worker 0 holds 2; worker 1 holds 4"):
        newest_common_step({"worker 0": [2], "worker 1": [4]})
