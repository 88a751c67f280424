import numpy as np
import pytest

from albert_tf.layers import FeedForwardBlock
from tests import numpy_reference as ref


def test_matches_numpy_reference():
    x = np.random.default_rng(3).standard_normal((2, 7, 14)).astype("float32")
    block = FeedForwardBlock(intermediate_size=19)
    block.build((2, 7, 14))
    rng = np.random.default_rng(4)
    for weight in block.weights:
        weight.assign(rng.standard_normal(weight.shape).astype("float32") * 0.5)
    expected = ref.feed_forward_block(
        x.astype(np.float64),
        ref.dense_weights(block.intermediate_dense),
        ref.dense_weights(block.output_dense),
        ref.norm_weights(block.layer_norm),
    )
    np.testing.assert_allclose(block(x), expected, atol=2e-5, rtol=0)


@pytest.mark.parametrize("name, function", [("gelu_exact", "erf"), ("relu", "relu")])
def test_activation_names(name, function):
    from math import erf

    block = FeedForwardBlock(intermediate_size=19, hidden_act=name)
    x = np.linspace(-3, 3, 11).astype("float32")
    expected = {
        "erf": [0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x],
        "relu": np.maximum(x, 0),
    }[function]
    np.testing.assert_allclose(block.activation(x), expected, atol=1e-6)


def test_get_config_round_trip():
    block = FeedForwardBlock(19, hidden_act="relu", hidden_dropout_prob=0.1, initializer_range=0.05)
    assert FeedForwardBlock.from_config(block.get_config()).get_config() == block.get_config()
