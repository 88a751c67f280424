"""Noticing a run that collapses: a training loss that spikes far above its best.

Users of the original and of other toolkits report from-scratch runs that plateau or collapse mid-way (a loss
that jumps and stays up, a masked-LM accuracy that falls back to predicting the most frequent token). The
guard reads the training loss of each progress line, smooths it (an exponential moving average over lines)
and flags a spike when the smoothed loss exceeds SPIKE_FACTOR times its running best. It remembers the last
step at which the run was healthy (smoothed loss within HEALTHY_FACTOR of the best): the newest checkpoint at
or before it is the one a rollback returns to. Held-out collapse is the task's to judge (Task.collapsed).
"""

SMOOTHING = 0.5  # weight of the previous smoothed value: a spike of one line shows, noise of one does not
SPIKE_FACTOR = 2.0
HEALTHY_FACTOR = 1.25


class CollapseGuard:
    """The smoothed training loss, its running best and the last healthy step (see the module docstring)."""

    def __init__(self):
        self.smoothed = None
        self.best = None
        self.healthy_step = 0

    def loss(self, loss, step):
        """Reads a progress line's training loss at `step`; returns why the run looks collapsed, or None."""
        self.smoothed = loss if self.smoothed is None else SMOOTHING * self.smoothed + (1 - SMOOTHING) * loss
        if self.best is None or self.smoothed < self.best:
            self.best = self.smoothed
        if self.smoothed <= HEALTHY_FACTOR * self.best:
            self.healthy_step = step
        if self.smoothed > SPIKE_FACTOR * self.best:
            return (
                f"loss spike: the smoothed loss {self.smoothed:.4f} is {self.smoothed / self.best:.1f}x its "
                f"best {self.best:.4f}"
            )
        return None

    def rolled_back(self, step):
        """After a rollback to `step`: the smoothed loss starts again from its best."""
        self.smoothed = self.best
        self.healthy_step = step
