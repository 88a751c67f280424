import keras
import numpy as np

from albert_tf.layers import AttentionBlock, FeedForwardBlock, TransformerBlock


def test_runs_attention_then_feed_forward():
    attention, feed_forward = AttentionBlock(2), FeedForwardBlock(19)
    block = TransformerBlock(attention, feed_forward)
    x = np.random.default_rng(10).standard_normal((2, 7, 14)).astype("float32")
    bias = np.zeros((2, 1, 1, 7), "float32")
    np.testing.assert_allclose(block(x, bias), feed_forward(attention(x, bias)), atol=1e-6)


def shared_attention_model():
    """Two TransformerBlocks sharing one AttentionBlock, each with its own FeedForwardBlock."""
    shared = AttentionBlock(2, initializer_range=0.1)
    first = TransformerBlock(shared, FeedForwardBlock(19, hidden_act="relu"))
    second = TransformerBlock(shared, FeedForwardBlock(19))
    inputs = keras.Input((7, 14))
    bias = keras.Input((1, 1, 7))
    return keras.Model([inputs, bias], second(first(inputs, bias), bias)), first, second


def test_blocks_can_share_a_sub_layer():
    model, first, second = shared_attention_model()
    assert first.attention is second.attention
    assert len(model.weights) == len(first.weights) + len(second.feed_forward.weights)


def test_a_keras_file_round_trip_keeps_settings_weights_outputs_and_sharing(tmp_path):
    model, _, _ = shared_attention_model()
    path = tmp_path / "blocks.keras"
    model.save(path)
    clone = keras.saving.load_model(path)
    first, second = (layer for layer in clone.layers if isinstance(layer, TransformerBlock))
    assert first.attention is second.attention  # still one layer, its weights stored once
    assert first.attention.initializer_range == 0.1 and first.feed_forward.hidden_act == "relu"
    assert second.feed_forward.hidden_act != "relu"
    assert len(clone.weights) == len(model.weights)
    for saved, loaded in zip(model.weights, clone.weights, strict=True):
        np.testing.assert_array_equal(loaded.numpy(), saved.numpy())
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 7, 14)).astype("float32")
    bias = np.where(rng.random((2, 1, 1, 7)) < 0.3, -10000.0, 0.0).astype("float32")
    np.testing.assert_array_equal(clone([x, bias]), model([x, bias]))
