"""The original ALBERT learning-rate schedule: linear warmup, then polynomial decay to zero."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """lr(step) = peak · step / warmup while step < warmup, else peak · (1 − min(step, total) / total)^power.

    As the original `optimization.py`: the decay is counted from step 0, not from the end of warmup, so the
    rate just after warmup is a little below the peak.

    Args:
        learning_rate: the peak rate.
        num_train_steps: the step at which the rate reaches 0 (and stays there).
        num_warmup_steps: linear warmup length; 0 for none.
        power: the decay's exponent (`poly_power`; the original uses 1.0).
    """

    def __init__(self, learning_rate, num_train_steps, num_warmup_steps=0, power=1.0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
        if not 0 <= num_warmup_steps <= num_train_steps:
            raise ValueError(f"num_warmup_steps must be in [0, {num_train_steps}], got {num_warmup_steps}")
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.power = float(power)

    # A variable multiplying the rate, or None: the training engine's, lowered after a rollback.
    scale = None

    def __call__(self, step):
        step = ops.cast(step, "float32")
        done = ops.minimum(step, self.num_train_steps) / self.num_train_steps
        rate = self.learning_rate * ops.power(1.0 - done, self.power)
        if self.num_warmup_steps:
            warmup = self.learning_rate * step / self.num_warmup_steps
            rate = ops.where(step < self.num_warmup_steps, warmup, rate)
        return rate if self.scale is None else rate * ops.cast(self.scale, "float32")

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "power": self.power,
        }
