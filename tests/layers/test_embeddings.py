import numpy as np
import pytest

from albert_tf.layers import AlbertEmbedding
from tests import numpy_reference as ref


def make(use_projection=True, embedding_size=5):
    layer = AlbertEmbedding(97, embedding_size, 14, 16, 2, use_projection=use_projection)
    layer.build((2, 7))
    rng = np.random.default_rng(5)
    for weight in layer.weights:
        weight.assign(rng.standard_normal(weight.shape).astype("float32"))
    return layer


def test_factorized_embedding_matches_numpy_reference():
    layer = make()
    ids = np.random.default_rng(6).integers(0, 97, (2, 7)).astype("int32")
    types = np.array([[0, 0, 0, 1, 1, 1, 1], [0, 1, 1, 1, 0, 0, 0]], "int32")
    summed = (
        layer.word_embeddings.embeddings.numpy()[ids]
        + layer.position_embeddings.numpy()[None, :7]
        + layer.token_type_embeddings.embeddings.numpy()[types]
    ).astype(np.float64)
    expected = ref.dense(
        ref.layer_norm(summed, *ref.norm_weights(layer.layer_norm)), *ref.dense_weights(layer.projection)
    )
    out = layer(ids, types)
    assert out.shape == (2, 7, 14)
    np.testing.assert_allclose(out, expected, atol=2e-5, rtol=0)


def test_table_is_v_by_e():
    layer = make()
    assert layer.word_embeddings.embeddings.shape == (97, 5)
    assert layer.position_embeddings.shape == (16, 5)
    assert layer.projection.kernel.shape == (5, 14)


def test_without_projection_width_is_e():
    layer = make(use_projection=False, embedding_size=14)
    assert layer.projection is None
    assert layer(np.zeros((2, 7), "int32"), np.zeros((2, 7), "int32")).shape == (2, 7, 14)


def test_without_projection_needs_e_equal_h():
    with pytest.raises(ValueError, match="use_projection=False needs embedding_size == hidden_size"):
        AlbertEmbedding(97, 5, 14, 16, 2, use_projection=False)


def test_get_config_round_trip():
    layer = AlbertEmbedding(97, 5, 14, 16, 2, use_projection=True, hidden_dropout_prob=0.1)
    assert AlbertEmbedding.from_config(layer.get_config()).get_config() == layer.get_config()
