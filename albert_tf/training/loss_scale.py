"""Dynamic loss scaling for float16 training, decided the same way on every replica.

As `keras.optimizers.LossScaleOptimizer` (and tf.keras' before it): the loss is multiplied by a scale before
the backward pass, so that small float16 gradients do not underflow; a step whose gradients overflow (Inf or
NaN) is skipped and the scale halved; after `growth_steps` finite steps in a row it doubles. Unlike Keras'
wrapper, the finiteness check reads the gradients summed across replicas, so every replica (and every
worker) sees the same gradients and takes the same decision, and the step counter counts applied updates
only (the learning-rate schedule follows it).
"""

import tensorflow as tf

INITIAL_SCALE = 2.0**15
GROWTH_STEPS = 2000
MINIMUM_SCALE = 1.0  # below this every step overflowed: the run is broken, not unlucky


class DynamicLossScale(tf.Module):
    """The scale and the count of finite steps since it last changed; both are checkpointed.

    Create it under the strategy's scope. `scale` is read in replica context; `update` runs in cross-replica
    context once per step with that step's (replica-independent) finiteness.
    """

    def __init__(self, initial_scale=INITIAL_SCALE, growth_steps=GROWTH_STEPS):
        super().__init__(name="loss_scale")
        self.growth_steps = growth_steps
        self.scale = tf.Variable(initial_scale, trainable=False, dtype=tf.float32, name="scale")
        self.finite_steps = tf.Variable(0, trainable=False, dtype=tf.int64, name="finite_steps")

    def update(self, finite):
        """After a step: halve on overflow, double after growth_steps finite steps in a row."""
        grow = finite & (self.finite_steps + 1 >= self.growth_steps)
        self.scale.assign(tf.where(finite, tf.where(grow, self.scale * 2.0, self.scale), self.scale / 2.0))
        self.finite_steps.assign(
            tf.where(finite & ~grow, self.finite_steps + 1, tf.zeros_like(self.finite_steps))
        )
