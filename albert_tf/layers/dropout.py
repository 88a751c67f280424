"""`Dropout` whose mask can come from a seed drawn earlier: what a rematerialized block needs."""

import keras


class _DrawnSeed(keras.random.SeedGenerator):
    """A seed already drawn, int [2], handed to `keras.random` (which takes seeds as ints or generators):
    `next()` returns it unchanged, so every call with it draws the same mask. Holds no state variable."""

    def __init__(self, seed):  # the parent's __init__ is not called: it would create a state variable
        self.seed = seed

    def next(self, ordered=True):
        return self.seed


@keras.saving.register_keras_serializable(package="albert_tf")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` that can be called with a seed drawn before the call.

    A rematerialized block (`TransformerBlock(remat=True)`) runs its forward pass twice: once in the
    forward pass, again in the backward pass. A Dropout drawing from its seed generator in each run would
    drop other units the second time, and the gradients would be of another network. The block draws each
    mask's seed once, outside the recomputed function, with `next_seed()`, and passes it in both runs.
    Without a seed the layer is `keras.layers.Dropout`, with the same generator, variables and masks.

    Call args:
        inputs: float tensor.
        training: bool.
        seed: optional int [2] from `next_seed()`.
    """

    def next_seed(self):
        """int [2]: the seed the next call without one would use, taken from the generator."""
        return self.seed_generator.next()

    def call(self, inputs, training=False, seed=None):
        if seed is None or not training or self.rate == 0:
            return super().call(inputs, training=training)
        return keras.random.dropout(inputs, self.rate, noise_shape=self.noise_shape, seed=_DrawnSeed(seed))
