"""Numerics pinned against Hugging Face transformers' ALBERT (goldens: tests/testdata/make_goldens.py)."""

import json
import os
import subprocess
import sys

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


def compute_outputs(name):
    """Our pretrainer's outputs for golden `name`, with the golden's weights: name → float32 array."""
    config, inputs, weights, _ = load_golden(name)
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    assign_tf1_weights(pretrainer, weights)
    return pretrainer_outputs(pretrainer, inputs)


def pretrainer_outputs(pretrainer, inputs):
    """Encoder and head outputs of `pretrainer` for a golden's inputs, as arrays."""
    encoded = pretrainer.encoder({k: inputs[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    heads = pretrainer(inputs)
    return {
        "sequence_output": np.asarray(encoded["sequence_output"]),
        "pooled_output": np.asarray(encoded["pooled_output"]),
        "encoder_outputs": np.stack(encoded["encoder_outputs"]),
        "mlm_logits": np.asarray(heads["mlm_logits"]),
        "sop_logits": np.asarray(heads["sop_logits"]),
    }


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """Every golden's outputs, computed in a child process on TensorFlow's own kernels.

    The goldens pin the model's arithmetic, not a kernel library's: oneDNN's fused kernels (albert_tf turns
    them on) sum float32 in another order, and on AVX-512 CPUs that alone moves an MLM logit of 9.7 by
    1.1e-5. The child sets TF_ENABLE_ONEDNN_OPTS=0 before TensorFlow is imported.
    """
    path = tmp_path_factory.mktemp("goldens") / "outputs.npz"
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"}
    subprocess.run(
        [sys.executable, "-m", "tests.models.test_goldens", str(path)], cwd=root, env=env, check=True
    )
    with np.load(path) as data:
        return dict(data)


@pytest.mark.parametrize("name", GOLDENS)
def test_pretrainer_matches_hugging_face(name, outputs):
    _, _, _, expected = load_golden(name)
    for key in ("sequence_output", "pooled_output", "encoder_outputs", "mlm_logits", "sop_logits"):
        np.testing.assert_allclose(outputs[f"{name}/{key}"], expected[key], rtol=0, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", GOLDENS)
def test_goldens_exercise_the_model(name):
    """Guards the goldens: tokens, layers and vocabulary rows differ far beyond the 1e-5 tolerance."""
    _, _, _, expected = load_golden(name)
    layers, sequence = expected["encoder_outputs"], expected["sequence_output"]
    assert np.abs(np.diff(layers, axis=0)).max() > 0.5
    assert np.abs(sequence[:, 1:5] - sequence[:, :1]).max(axis=(1, 2)).min() > 0.1
    assert np.abs(expected["mlm_logits"]).max() > 1.0
    assert np.abs(np.diff(expected["sop_logits"], axis=-1)).max() > 0.01


if __name__ == "__main__":
    np.savez(
        sys.argv[1],
        **{f"{name}/{key}": value for name in GOLDENS for key, value in compute_outputs(name).items()},
    )
