"""Writes tests/testdata/goldens_*.npz: ALBERT outputs computed by Hugging Face transformers (PyTorch),
and tests/testdata/hf_*/: the same models as transformers saves them (config.json, model.safetensors).

An independent implementation pins our numerics. For each config below the script draws deterministic
weights keyed by the original TF1 variable names, loads them into `transformers.AlbertForPreTraining`,
runs it in float64 on a small padded batch, and stores the weights, the inputs and the outputs.
The test (tests/models/test_goldens.py) loads the same weights into our model by those names; the
checkpoint-conversion tests convert the hf_* directories and compare with the same outputs.

Needs `pip install torch transformers` (not needed by CI: the .npz files are committed).
Run from the repository root:  python tests/testdata/make_goldens.py
"""

import json
import os

import numpy as np
import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))

CONFIGS = {
    # Released layout: one block shared by every layer, factorized embeddings (E != H).
    "single_group": dict(
        vocab_size=97,
        embedding_size=5,
        hidden_size=14,
        num_hidden_layers=3,
        num_hidden_groups=1,
        inner_group_num=1,
        num_attention_heads=2,
        intermediate_size=19,
        max_position_embeddings=16,
    ),
    # Two groups of two inner blocks: layer i runs group int(i / 4 * 2), blocks k = 0, 1.
    "two_groups_two_inner": dict(
        vocab_size=97,
        embedding_size=5,
        hidden_size=14,
        num_hidden_layers=4,
        num_hidden_groups=2,
        inner_group_num=2,
        num_attention_heads=2,
        intermediate_size=19,
        max_position_embeddings=16,
    ),
    # BERT-like: E = H (no projection in the original), nothing shared.
    "unfactorized": dict(
        vocab_size=97,
        embedding_size=14,
        hidden_size=14,
        num_hidden_layers=2,
        num_hidden_groups=2,
        inner_group_num=1,
        num_attention_heads=2,
        intermediate_size=19,
        max_position_embeddings=16,
    ),
}
COMMON = dict(
    hidden_act="gelu",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    type_vocab_size=2,
    initializer_range=0.02,
)


def tf1_shapes(c):
    """Original variable names and shapes for config `c` (kernels [in, out])."""
    v, e, h, i, p, t = (
        c[k]
        for k in (
            "vocab_size",
            "embedding_size",
            "hidden_size",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        )
    )
    shapes = {
        "bert/embeddings/word_embeddings": (v, e),
        "bert/embeddings/position_embeddings": (p, e),
        "bert/embeddings/token_type_embeddings": (t, e),
        "bert/embeddings/LayerNorm/gamma": (e,),
        "bert/embeddings/LayerNorm/beta": (e,),
        "bert/pooler/dense/kernel": (h, h),
        "bert/pooler/dense/bias": (h,),
        "cls/predictions/transform/dense/kernel": (h, e),
        "cls/predictions/transform/dense/bias": (e,),
        "cls/predictions/transform/LayerNorm/gamma": (e,),
        "cls/predictions/transform/LayerNorm/beta": (e,),
        "cls/predictions/output_bias": (v,),
        "cls/seq_relationship/output_weights": (2, h),
        "cls/seq_relationship/output_bias": (2,),
    }
    if e != h:
        shapes["bert/encoder/embedding_hidden_mapping_in/kernel"] = (e, h)
        shapes["bert/encoder/embedding_hidden_mapping_in/bias"] = (h,)
    for g in range(c["num_hidden_groups"]):
        for k in range(c["inner_group_num"]):
            prefix = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
            for name in ("query", "key", "value"):
                shapes[f"{prefix}/attention_1/self/{name}/kernel"] = (h, h)
                shapes[f"{prefix}/attention_1/self/{name}/bias"] = (h,)
            shapes[f"{prefix}/attention_1/output/dense/kernel"] = (h, h)
            shapes[f"{prefix}/attention_1/output/dense/bias"] = (h,)
            shapes[f"{prefix}/ffn_1/intermediate/dense/kernel"] = (h, i)
            shapes[f"{prefix}/ffn_1/intermediate/dense/bias"] = (i,)
            shapes[f"{prefix}/ffn_1/intermediate/output/dense/kernel"] = (i, h)
            shapes[f"{prefix}/ffn_1/intermediate/output/dense/bias"] = (h,)
            for norm in ("LayerNorm", "LayerNorm_1"):
                shapes[f"{prefix}/{norm}/gamma"] = (h,)
                shapes[f"{prefix}/{norm}/beta"] = (h,)
    return shapes


def draw_weights(c, seed):
    """Deterministic weights large enough that every nonlinearity is exercised."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in sorted(tf1_shapes(c).items()):
        if name.endswith("gamma"):
            value = 1.0 + 0.2 * rng.standard_normal(shape)
        elif name.endswith(("beta", "bias")):
            value = 0.2 * rng.standard_normal(shape)
        elif name.startswith("bert/embeddings/"):
            value = rng.standard_normal(shape)  # tables: unit scale, so token identity survives the layers
        else:
            value = rng.standard_normal(shape) / np.sqrt(shape[0])  # kernels [in, out]: fan-in scaling
        weights[name] = value.astype(np.float32)
    return weights


def torch_state(c, w):
    """The same tensors under Hugging Face names (torch Linear weights are [out, in])."""

    def linear(prefix, tf1):
        return {f"{prefix}.weight": w[f"{tf1}/kernel"].T, f"{prefix}.bias": w[f"{tf1}/bias"]}

    def norm(prefix, tf1):
        return {f"{prefix}.weight": w[f"{tf1}/gamma"], f"{prefix}.bias": w[f"{tf1}/beta"]}

    state = {
        "albert.embeddings.word_embeddings.weight": w["bert/embeddings/word_embeddings"],
        "albert.embeddings.position_embeddings.weight": w["bert/embeddings/position_embeddings"],
        "albert.embeddings.token_type_embeddings.weight": w["bert/embeddings/token_type_embeddings"],
        **norm("albert.embeddings.LayerNorm", "bert/embeddings/LayerNorm"),
        **linear("albert.pooler", "bert/pooler/dense"),
        **linear("predictions.dense", "cls/predictions/transform/dense"),
        **norm("predictions.LayerNorm", "cls/predictions/transform/LayerNorm"),
        "predictions.bias": w["cls/predictions/output_bias"],
        "predictions.decoder.weight": w["bert/embeddings/word_embeddings"],
        "predictions.decoder.bias": w["cls/predictions/output_bias"],
        "sop_classifier.classifier.weight": w["cls/seq_relationship/output_weights"],
        "sop_classifier.classifier.bias": w["cls/seq_relationship/output_bias"],
    }
    if c["embedding_size"] != c["hidden_size"]:
        state.update(
            linear("albert.encoder.embedding_hidden_mapping_in", "bert/encoder/embedding_hidden_mapping_in")
        )
    else:
        # Hugging Face always applies this projection; the identity makes it the original's no-op.
        state["albert.encoder.embedding_hidden_mapping_in.weight"] = np.eye(
            c["hidden_size"], dtype=np.float32
        )
        state["albert.encoder.embedding_hidden_mapping_in.bias"] = np.zeros(c["hidden_size"], np.float32)
    for g in range(c["num_hidden_groups"]):
        for k in range(c["inner_group_num"]):
            tf1 = f"bert/encoder/transformer/group_{g}/inner_group_{k}"
            hf = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{k}"
            for name in ("query", "key", "value"):
                state.update(linear(f"{hf}.attention.{name}", f"{tf1}/attention_1/self/{name}"))
            state.update(linear(f"{hf}.attention.dense", f"{tf1}/attention_1/output/dense"))
            state.update(norm(f"{hf}.attention.LayerNorm", f"{tf1}/LayerNorm"))
            state.update(linear(f"{hf}.ffn", f"{tf1}/ffn_1/intermediate/dense"))
            state.update(linear(f"{hf}.ffn_output", f"{tf1}/ffn_1/intermediate/output/dense"))
            state.update(norm(f"{hf}.full_layer_layer_norm", f"{tf1}/LayerNorm_1"))
    return {
        name: torch.tensor(np.ascontiguousarray(value), dtype=torch.float64) for name, value in state.items()
    }


def layer_outputs(c, hidden_states):
    """Each layer's output, [L, batch, seq, H]. transformers 5 records the embeddings, then every inner
    block (L * inner_group_num of them); a layer ends with its last inner block."""
    blocks = hidden_states[1:]
    inner = c["inner_group_num"]
    assert len(blocks) == c["num_hidden_layers"] * inner, len(blocks)
    return np.stack([h.numpy() for h in blocks[inner - 1 :: inner]])


def inputs(c, seed):
    rng = np.random.default_rng(seed)
    word_ids = rng.integers(5, c["vocab_size"], size=(2, 7)).astype(np.int32)
    mask = np.ones((2, 7), np.int32)
    mask[1, 5:] = 0  # the second sequence is padded
    word_ids[1, 5:] = 0
    type_ids = np.array([[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 1, 0, 0]], np.int32)
    positions = np.array([[1, 3, 6], [2, 4, 0]], np.int32)
    return dict(
        input_word_ids=word_ids, input_mask=mask, input_type_ids=type_ids, masked_lm_positions=positions
    )


def main():
    for index, (name, values) in enumerate(CONFIGS.items()):
        c = {**values, **COMMON}
        weights = draw_weights(c, seed=100 + index)
        # "gelu" in ALBERT configs is the tanh form, which Hugging Face calls "gelu_new".
        hf_config = transformers.AlbertConfig(
            **{**c, "hidden_act": "gelu_new"},
            layer_norm_eps=1e-12,
            classifier_dropout_prob=0.0,
            attn_implementation="eager",
        )
        model = transformers.AlbertForPreTraining(hf_config).double().eval()
        missing, unexpected = model.load_state_dict(torch_state(c, weights), strict=False)
        assert not unexpected, unexpected
        assert all(m.endswith(("position_ids", "token_type_ids")) for m in missing), missing
        feed = inputs(c, seed=200 + index)
        with torch.no_grad():
            out = model(
                input_ids=torch.tensor(feed["input_word_ids"], dtype=torch.long),
                attention_mask=torch.tensor(feed["input_mask"], dtype=torch.long),
                token_type_ids=torch.tensor(feed["input_type_ids"], dtype=torch.long),
                output_hidden_states=True,
            )
            base = model.albert(
                input_ids=torch.tensor(feed["input_word_ids"], dtype=torch.long),
                attention_mask=torch.tensor(feed["input_mask"], dtype=torch.long),
                token_type_ids=torch.tensor(feed["input_type_ids"], dtype=torch.long),
            )
        positions = torch.tensor(feed["masked_lm_positions"], dtype=torch.long)
        mlm = torch.gather(out.prediction_logits, 1, positions[:, :, None].expand(-1, -1, c["vocab_size"]))
        arrays = {
            "config": np.array(json.dumps(c)),
            **{f"input/{k}": v for k, v in feed.items()},
            **{f"weights/{k}": v for k, v in weights.items()},
            "output/sequence_output": base.last_hidden_state.numpy(),
            "output/pooled_output": base.pooler_output.numpy(),
            "output/encoder_outputs": layer_outputs(c, out.hidden_states),
            "output/mlm_logits": mlm.numpy(),
            "output/sop_logits": out.sop_logits.numpy(),
        }
        path = os.path.join(HERE, f"goldens_{name}.npz")
        np.savez_compressed(path, **arrays)
        model.float().save_pretrained(os.path.join(HERE, f"hf_{name}"))
        print(f"wrote {path} (transformers {transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
