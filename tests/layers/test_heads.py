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
