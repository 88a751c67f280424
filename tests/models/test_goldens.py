"""Numerics pinned against Hugging Face transformers' ALBERT (goldens: tests/testdata/make_goldens.py)."""

import json
import os

import numpy as np
import pytest

from albert_tf.checkpoints.tf1_variables import assign_tf1_weights
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertEncoder, AlbertPretrainer

TESTDATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "testdata")
GOLDENS = ("single_group", "two_groups_two_inner", "unfactorized")


def load_golden(name):
    with np.load(os.path.join(TESTDATA, f"goldens_{name}.npz")) as data:
        arrays = dict(data)
    config = AlbertConfig.from_dict(json.loads(str(arrays.pop("config"))))
    split = {"input": {}, "weights": {}, "output": {}}
    for key, value in arrays.items():
        kind, name = key.split("/", 1)
        split[kind][name] = value
    return config, split["input"], split["weights"], split["output"]


@pytest.mark.parametrize("name", GOLDENS)
def test_pretrainer_matches_hugging_face(name):
    config, inputs, weights, expected = load_golden(name)
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    assign_tf1_weights(pretrainer, weights)

    encoded = pretrainer.encoder({k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    heads = pretrainer(inputs)

    np.testing.assert_allclose(encoded["sequence_output"], expected["sequence_output"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(encoded["pooled_output"], expected["pooled_output"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(
        np.stack(encoded["encoder_outputs"]), expected["encoder_outputs"], rtol=0, atol=1e-5
    )
    np.testing.assert_allclose(heads["mlm_logits"], expected["mlm_logits"], rtol=0, atol=1e-5)
    np.testing.assert_allclose(heads["sop_logits"], expected["sop_logits"], rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", GOLDENS)
def test_goldens_exercise_the_model(name):
    """Guards the goldens: tokens, layers and vocabulary rows differ far beyond the 1e-5 tolerance."""
    _, _, _, expected = load_golden(name)
    layers, sequence = expected["encoder_outputs"], expected["sequence_output"]
    assert np.abs(np.diff(layers, axis=0)).max() > 0.5
    assert np.abs(sequence[:, 1:5] - sequence[:, :1]).max(axis=(1, 2)).min() > 0.1
    assert np.abs(expected["mlm_logits"]).max() > 1.0
    assert np.abs(np.diff(expected["sop_logits"], axis=-1)).max() > 0.01
