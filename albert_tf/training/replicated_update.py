"""One optimizer update from per-replica gradients, the same on every replica and worker.

Used by the pretraining and fine-tuning loops: each replica sums its gradients with the others' explicitly
(`summed_gradients`, in replica context), so every replica holds the global batch's gradient and the same
verdict on whether it is finite; the update is then applied, or skipped on float16 overflow, from
cross-replica context (`apply_or_skip`), where the decision can be control flow (a synchronization point
inside control flow within a replica's function is not supported by tf.distribute).
"""

import tensorflow as tf


def summed_gradients(grads, scale):
    """Replica context: (grads unscaled by `scale` and summed across replicas, None kept; float32 1.0 when
    every summed gradient is finite, else 0.0). The same values on every replica."""
    present = [index for index, grad in enumerate(grads) if grad is not None]
    context = tf.distribute.get_replica_context()
    # Dense: embedding gradients come as IndexedSlices.
    dense = [tf.convert_to_tensor(grads[i]) / scale for i in present]
    reduced = context.all_reduce(tf.distribute.ReduceOp.SUM, dense)
    summed = list(grads)
    for index, grad in zip(present, reduced, strict=True):
        summed[index] = grad
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in reduced])
    return summed, tf.cast(finite, tf.float32)


def apply_or_skip(strategy, optimizer, variables, grads, finite, loss_scale=None):
    """Cross-replica context: applies the summed grads (per replica values of `summed_gradients`) with
    `optimizer.apply_summed`, unless loss scaling is on and they are not finite; updates the loss scale.

    Returns a bool tensor: whether the update was applied.
    """
    present = [index for index, grad in enumerate(grads) if grad is not None]
    used_variables = [variables[index] for index in present]

    def update(*used_grads):
        # Keras counts the update (optimizer.iterations) with an op that reads no gradient, and inside a
        # tf.function only ops on the same resource are ordered: tied to the gradients, a step whose batch
        # failed to read counts nothing.
        with tf.control_dependencies(used_grads):
            optimizer.apply_summed(list(used_grads), used_variables)

    def apply(used_grads=tuple(grads[index] for index in present)):
        strategy.run(update, args=used_grads)
        return tf.constant(True)

    # The same on every replica (their summed gradients are the same): the mean is that value.
    finite = strategy.reduce(tf.distribute.ReduceOp.MEAN, finite, axis=None) > 0.5
    if loss_scale is None:
        apply()
        return tf.constant(True)
    applied = tf.cond(finite, apply, lambda: tf.constant(False))
    loss_scale.update(finite)
    return applied
