"""What a run checkpoints besides its variables: the collapse guard's readings, the rollbacks so far, a loss
spike or a rollback not yet in an evaluation's entry, and the best evaluation's results (those of the
weights kept in checkpoints/best). A run resumed from a checkpoint then flags, rolls back and reports as the
uninterrupted run would have.
"""

import json

import tensorflow as tf

from albert_tf.training.collapse_guard import CollapseGuard


class RunState(tf.train.experimental.PythonState):
    """The run's Python state, saved in its checkpoints as one JSON string.

    Args:
      chance_loss: the task's training loss when nothing is learned (CollapseGuard).

    Attributes:
      guard: the CollapseGuard.
      rollbacks: the rollbacks after a collapse so far.
      spike: why the training loss looked collapsed since the last evaluation, or None.
      rolled_back: the rollback since the last evaluation (why, from which step to which), or None.
      best_results: the best evaluation's results ({metric: value, "global_step": step}), or None.
    """

    def __init__(self, chance_loss):
        self.guard = CollapseGuard(chance_loss)
        self.rollbacks = 0
        self.spike = None
        self.rolled_back = None
        self.best_results = None

    def serialize(self):
        state = {"guard": self.guard.state(), "rollbacks": self.rollbacks, "spike": self.spike,
                 "rolled_back": self.rolled_back, "best_results": self.best_results}  # fmt: skip
        return json.dumps(state, sort_keys=True)

    def deserialize(self, string_value):
        state = json.loads(string_value)
        self.guard.restore_state(state["guard"])
        for name in ("rollbacks", "spike", "rolled_back", "best_results"):
            setattr(self, name, state[name])
