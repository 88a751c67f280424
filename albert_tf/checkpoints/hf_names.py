"""Hugging Face ALBERT tensor names ↔ the original TF1 names (which `tf1_variables` maps to our weights).

Hugging Face stores the original tensors under other names, torch Linear weights as [out, in] (the TF1
kernels are [in, out]), and always has `embedding_hidden_mapping_in`, even when E = H.
"""

from albert_tf.config import POSITIVE_INT_KEYS, AlbertConfig

# Hugging Face `hidden_act` → ours. Hugging Face's "gelu" is the exact (erf) GELU; the original ALBERT's
# "gelu" is the tanh approximation, which Hugging Face calls "gelu_new" (and computes the same way under
# "gelu_pytorch_tanh" and "gelu_fast").
HF_ACTIVATIONS = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "gelu": "gelu_exact",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
TO_HF_ACTIVATIONS = {
    "gelu": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}

# Config keys shared by both formats.
SHARED_CONFIG_KEYS = (
    *POSITIVE_INT_KEYS,
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
)


def hf_to_tf1_names(config: AlbertConfig, with_projection: bool = True) -> dict[str, tuple[str, bool]]:
    """Hugging Face name (as `AlbertForPreTraining` saves it) → (TF1 name, transposed).

    Covers the encoder, the pretraining heads and the embedding projection (when `with_projection`).
    """
    names = {}

    def linear(hf, tf1):
        names[f"{hf}.weight"] = (f"{tf1}/kernel", True)
        names[f"{hf}.bias"] = (f"{tf1}/bias", False)

    def norm(hf, tf1):
        names[f"{hf}.weight"] = (f"{tf1}/gamma", False)
        names[f"{hf}.bias"] = (f"{tf1}/beta", False)

    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        names[f"albert.embeddings.{table}.weight"] = (f"bert/embeddings/{table}", False)
    norm("albert.embeddings.LayerNorm", "bert/embeddings/LayerNorm")
    if with_projection:
        linear("albert.encoder.embedding_hidden_mapping_in", "bert/encoder/embedding_hidden_mapping_in")
    for g in range(config.num_hidden_groups):
        for k in range(config.inner_group_num):
            hf = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{k}"
            tf1 = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
            for part in ("query", "key", "value"):
                linear(f"{hf}.attention.{part}", f"{tf1}/attention_1/self/{part}")
            linear(f"{hf}.attention.dense", f"{tf1}/attention_1/output/dense")
            norm(f"{hf}.attention.LayerNorm", f"{tf1}/LayerNorm")
            linear(f"{hf}.ffn", f"{tf1}/ffn_1/intermediate/dense")
            linear(f"{hf}.ffn_output", f"{tf1}/ffn_1/intermediate/output/dense")
            norm(f"{hf}.full_layer_layer_norm", f"{tf1}/LayerNorm_1")
    linear("albert.pooler", "bert/pooler/dense")
    linear("predictions.dense", "cls/predictions/transform/dense")
    norm("predictions.LayerNorm", "cls/predictions/transform/LayerNorm")
    names["predictions.bias"] = ("cls/predictions/output_bias", False)
    # Both store the SOP classifier as [2, H].
    names["sop_classifier.classifier.weight"] = ("cls/seq_relationship/output_weights", False)
    names["sop_classifier.classifier.bias"] = ("cls/seq_relationship/output_bias", False)
    return names


# Fine-tuned heads: Hugging Face name → original name (both [out, in]).
HF_TASK_HEADS = {
    "classifier.weight": "output_weights",
    "classifier.bias": "output_bias",
    "qa_outputs.weight": "cls/squad/output_weights",
    "qa_outputs.bias": "cls/squad/output_bias",
}
# Tensors Hugging Face derives from others: the decoder is tied to the word embeddings and its bias is
# `predictions.bias`; position and token-type id buffers are constants.
HF_DERIVED = ("predictions.decoder.weight", "predictions.decoder.bias", "albert.embeddings.position_ids")
ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def normalize_hf_names(tensors):
    """Names as AlbertForPreTraining saves them: AlbertModel's encoder names gain the `albert.` prefix."""
    if any(name.startswith("albert.") for name in tensors):
        return dict(tensors)
    return {
        (f"albert.{name}" if name.startswith(ENCODER_PREFIXES) else name): value
        for name, value in tensors.items()
    }
