"""The original TF1 checkpoint's variable names for our models' weights, and assignment by those names.

The table is the one place our weight structure meets the original names (scope `bert`, groups
`group_{g}/inner_group_{k}`), so the checkpoint converters and the golden tests stay short.
"""

from collections.abc import Mapping

import keras
import numpy as np

from albert_tf.models.encoder import AlbertEncoder
from albert_tf.models.pretrainer import AlbertPretrainer

# Names the original stores as [out, in] where our kernels are [in, out].
TRANSPOSED = frozenset({"cls/seq_relationship/output_weights"})


def _dense(prefix, layer):
    return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix, layer):
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def _encoder_variables(encoder: AlbertEncoder) -> dict[str, keras.Variable]:
    config = encoder.config
    if config.sharing in ("attention", "ffn"):
        raise ValueError(
            f"sharing={config.sharing!r} has no counterpart in the original checkpoint layout, "
            "which shares whole blocks only"
        )
    embeddings = encoder.embeddings
    names = {
        "bert/embeddings/word_embeddings": embeddings.word_embeddings.embeddings,
        "bert/embeddings/position_embeddings": embeddings.position_embeddings,
        "bert/embeddings/token_type_embeddings": embeddings.token_type_embeddings.embeddings,
        **_layer_norm("bert/embeddings/LayerNorm", embeddings.layer_norm),
    }
    if embeddings.projection is not None:
        names.update(_dense("bert/encoder/embedding_hidden_mapping_in", embeddings.projection))
    inner = config.inner_group_num
    for block in encoder.blocks:
        # Group layouts pair attention and feed-forward weights one to one: block index g*inner + k.
        index = encoder.attention_blocks.index(block.attention)
        prefix = f"bert/encoder/transformer/group_{index // inner}/inner_group_{index % inner}"
        attention, feed_forward = block.attention, block.feed_forward
        names.update(_dense(f"{prefix}/attention_1/self/query", attention.query))
        names.update(_dense(f"{prefix}/attention_1/self/key", attention.key))
        names.update(_dense(f"{prefix}/attention_1/self/value", attention.value))
        names.update(_dense(f"{prefix}/attention_1/output/dense", attention.output_dense))
        names.update(_layer_norm(f"{prefix}/LayerNorm", attention.layer_norm))
        names.update(_dense(f"{prefix}/ffn_1/intermediate/dense", feed_forward.intermediate_dense))
        names.update(_dense(f"{prefix}/ffn_1/intermediate/output/dense", feed_forward.output_dense))
        names.update(_layer_norm(f"{prefix}/LayerNorm_1", feed_forward.layer_norm))
    names.update(_dense("bert/pooler/dense", encoder.pooler))
    return names


def tf1_variable_map(model: AlbertEncoder | AlbertPretrainer) -> dict[str, keras.Variable]:
    """Maps each original variable name to our variable, for an encoder or a pretrainer.

    Names in `TRANSPOSED` hold the transpose of our variable.
    """
    if isinstance(model, AlbertEncoder):
        return _encoder_variables(model)
    if not isinstance(model, AlbertPretrainer):
        raise TypeError(f"expected an AlbertEncoder or AlbertPretrainer, got {type(model).__name__}")
    names = _encoder_variables(model.encoder)
    masked_lm = model.masked_lm
    names.update(_dense("cls/predictions/transform/dense", masked_lm.transform_dense))
    names.update(_layer_norm("cls/predictions/transform/LayerNorm", masked_lm.layer_norm))
    names["cls/predictions/output_bias"] = masked_lm.output_bias
    names["cls/seq_relationship/output_weights"] = model.sentence_order.dense.kernel
    names["cls/seq_relationship/output_bias"] = model.sentence_order.dense.bias
    return names


def assign_tf1_weights(model: AlbertEncoder | AlbertPretrainer, weights: Mapping[str, np.ndarray]) -> None:
    """Sets every weight of `model` from arrays keyed by original variable names.

    Raises:
        ValueError: listing every missing name, or naming a variable and both shapes on a mismatch.
            Nothing is assigned unless everything fits.
    """
    variables = tf1_variable_map(model)
    missing = sorted(set(variables) - set(weights))
    if missing:
        raise ValueError(f"missing variables: {', '.join(missing)}")
    values = {}
    for name, variable in variables.items():
        value = np.asarray(weights[name])
        transposed = name in TRANSPOSED
        expected = tuple(variable.shape)[::-1] if transposed else tuple(variable.shape)
        if value.shape != expected:
            raise ValueError(
                f"{name}: the checkpoint has shape {list(value.shape)}, the model expects {list(expected)}"
            )
        values[name] = value.T if transposed else value
    for name, variable in variables.items():
        variable.assign(values[name])
