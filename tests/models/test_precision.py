"""Models rebuilt in another precision: bfloat16 storage computes what Keras' mixed_bfloat16 policy does."""

import keras
import numpy as np
import pytest

from albert_tf.models import (
    AlbertClassifier,
    AlbertEncoder,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertSpanLabeler,
)
from albert_tf.models.precision import with_precision
from tests.helpers import encoder_inputs, random_features, tiny_config


def models():
    encoder = AlbertEncoder(tiny_config())
    return {
        "encoder": encoder,
        "pretrainer": AlbertPretrainer(encoder),
        "classifier": AlbertClassifier(encoder, num_classes=3, labels=("a", "b", "c")),
        "span": AlbertSpanLabeler(encoder, answerability=True),
        "multiple_choice": AlbertMultipleChoice(encoder, num_choices=2),
    }


def inputs(name):
    features = random_features(tiny_config(), batch_size=4)
    if name == "pretrainer":
        return features
    features = encoder_inputs(features)
    if name == "multiple_choice":
        return {key: value.reshape(2, 2, -1) for key, value in features.items()}
    return features


def mixed_copy(model):
    """The model rebuilt under Keras' mixed_bfloat16 policy (float32 weights cast at each use): its config
    without the policy it was saved with."""
    config = {key: value for key, value in model.get_config().items() if key != "dtype"}
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        copy = type(model).from_config(config)
    finally:
        keras.config.set_dtype_policy("float32")
    copy.set_weights(model.get_weights())
    return copy


def as_dict(outputs):
    outputs = outputs if isinstance(outputs, dict) else {"logits": outputs}
    return {k: np.asarray(keras.ops.cast(v, "float32")) for k, v in outputs.items() if k != "encoder_outputs"}


@pytest.mark.parametrize("name", ["encoder", "pretrainer", "classifier", "span", "multiple_choice"])
def test_bfloat16_computes_exactly_what_mixed_bfloat16_does_with_half_the_storage(name):
    model = models()[name]
    half = with_precision(model, "bfloat16")
    assert type(half) is type(model) and half is not model
    got, expected, single = (as_dict(m(inputs(name))) for m in (half, mixed_copy(model), model))
    assert set(got) == set(expected)
    for output in got:
        np.testing.assert_array_equal(got[output], expected[output], err_msg=output)
        assert 0 < np.abs(got[output] - single[output]).max() < 0.05, output  # bfloat16, near float32
    # Every weight once, in bfloat16 but for those the model keeps in float32 at any policy: the logit heads
    # built as float32 and the masked-LM output bias (added to float32 logits).
    assert len(half.weights) == len(model.weights)
    float32 = sorted(w.path for w in half.weights if w.dtype == "float32")
    heads = ["logits/bias", "logits/kernel"]
    expected_float32 = {
        "encoder": [],
        "pretrainer": ["masked_lm/output_bias"],
        "classifier": heads,
        "span": [f"answerable_{head}" for head in heads] + [f"span_{head}" for head in heads],
        "multiple_choice": [f"choice_{head}" for head in heads],
    }[name]
    assert [path.split("/", 1)[-1] if path.count("/") > 1 else path for path in float32] == expected_float32
    assert all(w.dtype == "bfloat16" for w in half.weights if w.dtype != "float32")
    if name == "classifier":
        assert half.labels == model.labels


def test_float32_is_the_model_itself_and_other_precisions_are_refused():
    encoder = AlbertEncoder(tiny_config())
    assert with_precision(encoder, "float32") is encoder
    back = with_precision(with_precision(encoder, "bfloat16"), "float32")
    assert back.dtype_policy.name == "float32" and all(w.dtype == "float32" for w in back.weights)
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16; got 'float16'"):
        with_precision(encoder, "float16")
