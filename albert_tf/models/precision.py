"""A model rebuilt to compute in another precision, with the same weights.

    served = with_precision(classifier, "bfloat16")   # what `export_saved_model(..., precision=...)` serves

Precisions (the Keras dtype policy each model is rebuilt under):
    float32    everything in float32.
    bfloat16   the encoder's and heads' matrix products and activations in bfloat16, with LayerNorm
               statistics, the attention scores and softmax and every logit in float32, as under Keras'
               "mixed_bfloat16" policy. The difference is storage: weights are kept in bfloat16 ("bfloat16"
               policy) instead of float32 copies that every layer call casts. The answers are the same (a
               weight cast to bfloat16 at each read is the weight stored in bfloat16), the model is half the
               size, and the casts leave the hot path: ALBERT reads its shared block's weights once per layer,
               12 times per call for ALBERT-base. Heads built as float32 (the logits) stay float32.
"""

import keras

PRECISIONS = ("float32", "bfloat16")


def _without_dtype(config):
    """A model's serialized config without its own dtype policy: the global one applies on rebuild."""
    config = dict(config)
    config.pop("dtype", None)
    return config


def with_precision(model, precision):
    """A copy of an albert_tf model (encoder, pretrainer or task model) computing in `precision`.

    Args:
      model: a built AlbertEncoder, AlbertPretrainer, AlbertClassifier, AlbertSpanLabeler or
        AlbertMultipleChoice, under any dtype policy.
      precision: one of PRECISIONS.

    Returns:
      A new model of the same class and configuration whose weights are model's, rounded to the
      precision's storage dtype (round to nearest even); float32 returns model itself when it already
      computes in float32.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    encoder = getattr(model, "encoder", model)
    if precision == "float32" and encoder.dtype_policy.name == "float32":
        return model
    config = model.get_config()
    if "encoder" in config:  # a model with heads: its encoder is serialized inside
        config["encoder"] = {**config["encoder"], "config": _without_dtype(config["encoder"]["config"])}
    config = _without_dtype(config)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        copy = type(model).from_config(config)
    finally:
        keras.config.set_dtype_policy(previous)
    copy.set_weights(model.get_weights())
    return copy
