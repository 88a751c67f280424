import keras
import numpy as np

from albert_tf.layers import MaskedLMHead, SentenceOrderHead
from tests import numpy_reference as ref


def test_masked_lm_head_gathers_and_ties_to_the_table():
    table = keras.layers.Embedding(97, 5)
    table.build((None,))
    head = MaskedLMHead(table)
    sequence = np.random.default_rng(7).standard_normal((2, 7, 14)).astype("float32")
    positions = np.array([[1, 3, 6], [0, 0, 5]], "int32")
    head(sequence, positions)
    rng = np.random.default_rng(8)
    for weight in head.weights:
        weight.assign(rng.standard_normal(weight.shape).astype("float32"))

    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1).astype(np.float64)
    transformed = ref.layer_norm(
        ref.gelu_tanh(ref.dense(gathered, *ref.dense_weights(head.transform_dense))),
        *ref.norm_weights(head.layer_norm),
    )
    expected = transformed @ table.embeddings.numpy().T + head.output_bias.numpy()
    logits = head(sequence, positions)
    assert logits.dtype == "float32" and logits.shape == (2, 3, 97)
    np.testing.assert_allclose(logits, expected, atol=1e-4, rtol=1e-6)

    # The head owns no [V, E] table of its own: changing the encoder's table changes its logits.
    assert {tuple(w.shape) for w in head.weights if w is not table.embeddings} == {(14, 5), (5,), (97,)}
    table.embeddings.assign(table.embeddings.numpy() * 2.0)
    assert np.abs(head(sequence, positions) - logits).max() > 0.1


def test_sentence_order_head():
    head = SentenceOrderHead()
    pooled = np.random.default_rng(9).standard_normal((2, 14)).astype("float32")
    logits = head(pooled)
    assert logits.shape == (2, 2) and logits.dtype == "float32"
    np.testing.assert_allclose(
        logits, pooled @ head.dense.kernel.numpy() + head.dense.bias.numpy(), atol=1e-6
    )
    assert SentenceOrderHead.from_config(head.get_config()).get_config() == head.get_config()


def test_masked_lm_logits_are_multiplied_in_float32_under_mixed_bfloat16():
    """Logits of 300 and 301 from bfloat16-exact inputs and table rows: a bfloat16 product rounds 301 to 300
    (its spacing there is 2), which would tie the two tokens."""
    table = keras.layers.Embedding(3, 4, dtype="mixed_bfloat16")
    table.build((None,))
    head = MaskedLMHead(table, dtype="mixed_bfloat16")
    head.build((1, 2, 4))
    x = keras.ops.cast(np.array([[[1, 1, 0, 0]]], "float32"), "bfloat16")  # (B, P, E)
    rows = keras.ops.cast(np.array([[1, 1, 0, 0], [300, 0, 0, 0], [300, 1, 0, 0]], "float32"), "bfloat16")
    logits = head._logits(x, rows)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    np.testing.assert_array_equal(np.asarray(logits)[0, 0], [2.0, 300.0, 301.0])
