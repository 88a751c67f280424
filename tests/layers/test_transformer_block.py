import keras
import numpy as np

from albert_tf.layers import AttentionBlock, FeedForwardBlock, TransformerBlock


def test_runs_attention_then_feed_forward():
    attention, feed_forward = AttentionBlock(2), FeedForwardBlock(19)
    block = TransformerBlock(attention, feed_forward)
    x = np.random.default_rng(10).standard_normal((2, 7, 14)).astype("float32")
    bias = np.zeros((2, 1, 1, 7), "float32")
    np.testing.assert_allclose(block(x, bias), feed_forward(attention(x, bias)), atol=1e-6)


def test_blocks_can_share_a_sub_layer():
    shared = AttentionBlock(2)
    first, second = (
        TransformerBlock(shared, FeedForwardBlock(19)),
        TransformerBlock(shared, FeedForwardBlock(19)),
    )
    inputs = keras.Input((7, 14))
    bias = keras.Input((1, 1, 7))
    model = keras.Model([inputs, bias], second(first(inputs, bias), bias))
    per_block = len(first.weights)
    assert len(model.weights) == 2 * per_block - len(shared.weights)


def test_serialization_round_trip():
    block = TransformerBlock(
        AttentionBlock(2, initializer_range=0.1), FeedForwardBlock(19, hidden_act="relu")
    )
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(block))
    assert isinstance(clone.attention, AttentionBlock) and clone.feed_forward.hidden_act == "relu"
    assert clone.get_config() == block.get_config()
