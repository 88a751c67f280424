"""The original ALBERT optimizers: LAMB for pretraining, Adam with decoupled weight decay for fine-tuning.

Both follow google-research/albert (`lamb_optimizer.py`, `optimization.py`), not the textbook versions:
no bias correction, weight decay added to the update (so LAMB's trust ratio sees it), and variables whose
path matches "LayerNorm", "layer_norm" or "bias" get neither weight decay nor LAMB's trust ratio.

One deliberate difference: gradients are clipped to a global norm of 1.0 after they are summed across
replicas. The original clips each TPU shard's gradient before `CrossShardOptimizer` sums them, so its update
depends on the number of shards; clipping the sum makes the update the same for any replica count.

They are Keras optimizers: `model.compile(optimizer=Lamb(...))` works, as does `optimizer.apply(grads)` in a
custom loop (or `apply_summed` for gradients the loop summed across replicas itself), and
`keras.optimizers.LossScaleOptimizer` wraps them for float16 in `fit`.
"""

import re

import keras
import tensorflow as tf
from keras import ops

EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """Adam with decoupled weight decay and no bias correction, as the original's AdamWeightDecayOptimizer.

    m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  u = m / (√v + ε) + wd·w;  w ← w − lr·u.

    Args:
        learning_rate: a float or a `keras.optimizers.schedules.LearningRateSchedule`.
        weight_decay_rate: wd above, for variables not excluded.
        beta_1, beta_2, epsilon: Adam's constants (the original's 0.9, 0.999, 1e-6).
        exclude_from_weight_decay: regular expressions searched in each variable's path.
        clip_global_norm: the summed gradient is scaled down to this global norm; None for no clipping.
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
        clip_global_norm=1.0,
        name="adam_weight_decay",
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = tuple(exclude_from_weight_decay)
        self.clip_global_norm = clip_global_norm

    def _excluded(self, variable):
        return any(re.search(pattern, variable.path) for pattern in self.exclude_from_weight_decay)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._v = self.add_optimizer_variables(var_list, ["m", "v"])
        self._decayed = [bool(self.weight_decay_rate) and not self._excluded(v) for v in var_list]
        self._adapted = [not self._excluded(v) for v in var_list]

    def apply_summed(self, grads, trainable_variables):
        """apply() for gradients a custom loop has already summed across replicas (to check them first, as
        float16 loss scaling does): clipped and applied without being summed again."""
        self._summed = True
        try:
            return self.apply(grads, trainable_variables)
        finally:
            self._summed = False

    def _all_reduce_sum_gradients(self, grads_and_vars):
        # Keras clips in apply(), before this cross-replica sum, as the original clips each TPU shard's
        # gradient: the update would depend on the replica count. Clipping the sum here makes it the same
        # update for any count (a deliberate difference from the original).
        if not getattr(self, "_summed", False):
            grads_and_vars = super()._all_reduce_sum_gradients(grads_and_vars)
        grads_and_vars = list(grads_and_vars)
        if not self.clip_global_norm:
            return grads_and_vars
        grads, variables = zip(*grads_and_vars, strict=True)
        grads, _ = tf.clip_by_global_norm(list(grads), self.clip_global_norm)
        return list(zip(grads, variables, strict=True))

    def _update(self, gradient, variable):
        """Updates m and v; returns u = m / (√v + ε) (+ wd·w) and the variable's index."""
        index = self._get_variable_index(variable)
        # Embedding gradients arrive as IndexedSlices; the moments of every row decay, so work densely.
        gradient = ops.cast(tf.convert_to_tensor(gradient), variable.dtype)
        m, v = self._m[index], self._v[index]
        next_m = self.beta_1 * m + (1.0 - self.beta_1) * gradient
        next_v = self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient)
        self.assign(m, next_m)
        self.assign(v, next_v)
        update = next_m / (ops.sqrt(next_v) + self.epsilon)
        if self._decayed[index]:
            update = update + self.weight_decay_rate * variable
        return update, index

    def update_step(self, gradient, variable, learning_rate):
        update, _ = self._update(gradient, variable)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * update)

    def get_config(self):
        config = super().get_config()
        config.update(
            weight_decay_rate=self.weight_decay_rate,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            exclude_from_weight_decay=list(self.exclude_from_weight_decay),
            clip_global_norm=self.clip_global_norm,
        )
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class Lamb(AdamWeightDecay):
    """LAMB (You et al. 2020) as the original ALBERT code implements it.

    The AdamWeightDecay update u, scaled per variable by the trust ratio ‖w‖ / ‖u‖ (1 when either norm is
    0, and for excluded variables): w ← w − lr · ratio · u. Same arguments as `AdamWeightDecay`.
    """

    def __init__(self, *args, name="lamb", **kwargs):
        super().__init__(*args, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        update, index = self._update(gradient, variable)
        ratio = 1.0
        if self._adapted[index]:
            weight_norm = ops.sqrt(ops.sum(ops.square(variable)))
            update_norm = ops.sqrt(ops.sum(ops.square(update)))
            usable = ops.logical_and(weight_norm > 0, update_norm > 0)
            ratio = ops.where(usable, weight_norm / ops.where(usable, update_norm, 1.0), 1.0)
        self.assign_sub(variable, ops.cast(learning_rate, variable.dtype) * ratio * update)


def create_optimizer(name, learning_rate, *, weight_decay_rate=0.01, clip_global_norm=1.0):
    """`lamb` or `adamw` (the `--optimizer` flag) with the original's constants."""
    classes = {"lamb": Lamb, "adamw": AdamWeightDecay}
    if name not in classes:
        raise ValueError(f"optimizer must be one of {sorted(classes)}, got {name!r}")
    return classes[name](
        learning_rate=learning_rate, weight_decay_rate=weight_decay_rate, clip_global_norm=clip_global_norm
    )
