"""Activation functions by the names used in `albert_config.json` files."""

import keras

from albert_tf.config import ACTIVATIONS


def get_activation(name: str):
    """Returns the activation function for a config's `hidden_act`.

    "gelu" means the tanh approximation, as in the original ALBERT and BERT code; "gelu_new" is Hugging
    Face's name for the same function; "gelu_exact" is the erf form.
    """
    if name in ("gelu", "gelu_new"):
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name == "gelu_exact":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name in ("relu", "tanh", "linear"):
        return keras.activations.get(name)
    raise ValueError(f"hidden_act={name!r} is not one of {', '.join(ACTIVATIONS)}")
