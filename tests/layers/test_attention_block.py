import keras
import numpy as np
import pytest

from albert_tf.layers import AttentionBlock
from tests import numpy_reference as ref


def randomize(layer, seed=0):
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.standard_normal(weight.shape).astype("float32") * 0.5)


def test_matches_numpy_reference_with_padding():
    x = np.random.default_rng(1).standard_normal((2, 7, 14)).astype("float32")
    mask = np.ones((2, 7), "float32")
    mask[1, 4:] = 0
    block = AttentionBlock(num_attention_heads=2)
    block.build((2, 7, 14))
    randomize(block)
    bias = ((1.0 - mask) * -10000.0)[:, None, None, :]
    expected = ref.attention_block(
        x.astype(np.float64),
        mask,
        2,
        ref.dense_weights(block.query),
        ref.dense_weights(block.key),
        ref.dense_weights(block.value),
        ref.dense_weights(block.output_dense),
        ref.norm_weights(block.layer_norm),
    )
    np.testing.assert_allclose(block(x, bias), expected, atol=2e-5, rtol=0)


def test_scores_and_softmax_run_in_float32_under_mixed_bfloat16():
    """Scores of 300 and 301 from bfloat16-exact queries and keys: a bfloat16 product rounds 301 to 300 (its
    spacing there is 2), which would weigh the two keys equally instead of 0.27 / 0.73."""
    block = AttentionBlock(num_attention_heads=1, dtype="mixed_bfloat16")
    block.build((1, 3, 4))
    query = np.array([[[[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]]], "float32")  # (B, N, T, D)
    key = np.array([[[[1, 1, 0, 0], [300, 0, 0, 0], [300, 1, 0, 0]]]], "float32")
    bfloat16 = [keras.ops.cast(t, "bfloat16") for t in (query, key)]
    probs = block._attention_probs(*bfloat16, np.zeros((1, 1, 1, 3), "float32"))
    assert keras.backend.standardize_dtype(probs.dtype) == "float32"
    expected = ref.softmax(np.array([2.0, 300.0, 301.0]))  # [~0, 0.269, 0.731]
    np.testing.assert_allclose(np.asarray(probs)[0, 0, 0], expected, atol=1e-6, rtol=0)


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="input width 14 is not divisible by num_attention_heads=3"):
        AttentionBlock(num_attention_heads=3).build((2, 7, 14))


def test_attention_dropout_only_in_training():
    # Hidden dropout off: what training changes here is the attention probabilities' dropout alone.
    block = AttentionBlock(2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.5)
    x = np.random.default_rng(2).standard_normal((2, 7, 14)).astype("float32")
    bias = np.zeros((2, 1, 1, 7), "float32")
    np.testing.assert_array_equal(block(x, bias), block(x, bias, training=False))
    assert np.abs(block(x, bias, training=True) - block(x, bias)).max() > 1e-3


def test_get_config_round_trip():
    block = AttentionBlock(
        2, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.2, initializer_range=0.05
    )
    clone = AttentionBlock.from_config(block.get_config())
    assert clone.get_config() == block.get_config()
    assert (
        keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(block)).num_attention_heads
        == 2
    )
