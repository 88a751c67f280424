"""Noticing a run that collapses: a training loss that spikes far above its best.

Users of the original and of other toolkits report from-scratch runs that plateau or collapse mid-way (a loss
that jumps and stays up, a masked-LM accuracy that falls back to predicting the most frequent token). The
guard reads the training loss of each progress line, smooths it (an exponential moving average over lines)
and flags a spike when the smoothed loss is both over SPIKE_FACTOR times its running best and above it by
more than RISE_OF_CHANCE times the task's chance loss: what a model that has learned nothing scores, in the
task's own units (ln 2 for a two-class classifier, the scores' variance for a regression: Task.chance_loss).
The factor alone cries wolf near zero: a fine-tuned classifier's loss of 0.003 that drifts to 0.009 on noise
is 3x its best, yet 0.006 is nothing beside chance's 0.69; a collapse climbs back a good part of that way.

It remembers the last step at which the run was healthy (smoothed loss within HEALTHY_FACTOR of the best):
the newest checkpoint at or before it is the one a rollback returns to. Held-out collapse is the task's to
judge (Task.collapsed). `state()` and `restore_state()` carry it through checkpoints, so that a resumed run
judges its next lines as the uninterrupted run does.
"""

SMOOTHING = 0.5  # weight of the previous smoothed value: a spike of one line shows, noise of one does not
SPIKE_FACTOR = 2.0
RISE_OF_CHANCE = 0.25  # the least rise above the best that is a spike, as a share of the chance loss
HEALTHY_FACTOR = 1.25


class CollapseGuard:
    """The smoothed training loss, its running best and the last healthy step (see the module docstring).

    Args:
      chance_loss: the training loss of a model that has learned nothing (Task.chance_loss).
    """

    def __init__(self, chance_loss):
        self.chance_loss = chance_loss
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
        rise = self.smoothed - self.best
        if self.smoothed > SPIKE_FACTOR * self.best and rise > RISE_OF_CHANCE * self.chance_loss:
            # A loss of exactly 0 (a regression fitted perfectly) or a chance loss of 0 (constant scores).
            times = f"{self.smoothed / self.best:.1f}x" if self.best else "above"
            against = (
                f"{rise / self.chance_loss:.0%} of the chance loss ({self.chance_loss:.4f}) above it"
                if self.chance_loss
                else "with a chance loss of 0"
            )
            smoothed, best = f"{self.smoothed:.4f}", f"{self.best:.4f}"
            return f"loss spike: the smoothed loss {smoothed} is {times} its best {best}, {against}"
        return None

    def rolled_back(self, step):
        """After a rollback to `step`: the smoothed loss starts again from its best."""
        self.smoothed = self.best
        self.healthy_step = step

    def state(self):
        """What the guard has read so far, as a JSON-ready dict."""
        return {name: getattr(self, name) for name in ("smoothed", "best", "healthy_step")}

    def restore_state(self, state):
        """Takes back what `state()` returned."""
        for name, value in state.items():
            setattr(self, name, value)
