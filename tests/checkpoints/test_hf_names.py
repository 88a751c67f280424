"""Hugging Face tensor names ↔ the original TF1 names, against the directories transformers saved for the
goldens (tests/testdata/hf_*: the same weights as the goldens' TF1-named ones)."""

import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from albert_tf.checkpoints import hf_names
from tests.models.test_goldens import GOLDENS, TESTDATA, load_golden


@pytest.mark.parametrize("name", GOLDENS)
def test_every_tensor_transformers_saves_has_its_tf1_name_and_layout(name):
    config, _, weights, _ = load_golden(name)
    saved = load_file(os.path.join(TESTDATA, f"hf_{name}", "model.safetensors"))
    names = hf_names.hf_to_tf1_names(config)
    assert set(names) == set(saved)  # the encoder, its groups and inner blocks, both heads: one name each
    assert len({tf1 for tf1, _ in names.values()}) == len(names)
    projection = {hf for hf in names if hf.startswith("albert.encoder.embedding_hidden_mapping_in.")}
    assert len(projection) == 2
    assert set(hf_names.hf_to_tf1_names(config, with_projection=False)) == set(names) - projection
    # The goldens' TF1 weights are the saved tensors, Linear weights transposed ([out, in] → [in, out]); an
    # unfactorized golden (E = H) has no projection, which transformers always saves.
    expected = set(names) if config.uses_embedding_projection else set(names) - projection
    assert {names[hf][0] for hf in expected} == set(weights)
    for hf in expected:
        tf1, transposed = names[hf]
        np.testing.assert_array_equal(saved[hf].T if transposed else saved[hf], weights[tf1], err_msg=hf)


def test_the_names_of_a_layout_by_hand():
    config, *_ = load_golden("two_groups_two_inner")
    assert (config.num_hidden_groups, config.inner_group_num) == (2, 2)
    names = hf_names.hf_to_tf1_names(config)
    layer = "albert.encoder.albert_layer_groups.1.albert_layers.0"
    block = "bert/encoder/transformer/group_1/inner_group_0"
    assert names[f"{layer}.attention.query.weight"] == (f"{block}/attention_1/self/query/kernel", True)
    assert names[f"{layer}.attention.dense.bias"] == (f"{block}/attention_1/output/dense/bias", False)
    assert names[f"{layer}.attention.LayerNorm.weight"] == (f"{block}/LayerNorm/gamma", False)
    assert names[f"{layer}.ffn_output.weight"] == (f"{block}/ffn_1/intermediate/output/dense/kernel", True)
    assert names[f"{layer}.full_layer_layer_norm.bias"] == (f"{block}/LayerNorm_1/beta", False)
    assert names["albert.embeddings.word_embeddings.weight"] == ("bert/embeddings/word_embeddings", False)
    assert names["predictions.bias"] == ("cls/predictions/output_bias", False)
    assert names["sop_classifier.classifier.weight"] == ("cls/seq_relationship/output_weights", False)


def test_an_encoder_saved_alone_gains_the_prefix_of_the_pretraining_model():
    """AlbertModel saves `embeddings.…`, `encoder.…`, `pooler.…`; AlbertForPreTraining `albert.…`: both read
    the same. Heads keep their names; names that already have the prefix are kept as they are."""
    alone = {
        "embeddings.word_embeddings.weight": 1,
        "encoder.x.bias": 2,
        "pooler.weight": 3,
        "qa_outputs.bias": 4,
    }
    assert hf_names.normalize_hf_names(alone) == {
        "albert.embeddings.word_embeddings.weight": 1,
        "albert.encoder.x.bias": 2,
        "albert.pooler.weight": 3,
        "qa_outputs.bias": 4,
    }
    prefixed = {"albert.pooler.weight": 3, "encoder.x.bias": 2}
    kept = hf_names.normalize_hf_names(prefixed)
    assert kept == prefixed and kept is not prefixed
