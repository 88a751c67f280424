"""Checkpoint conversion against Hugging Face transformers.

TF1 checkpoints are written here with the original variable names from the goldens' deterministic weights
(tf.raw_ops.SaveV2 writes name-based checkpoints, as TF1's Saver did); Hugging Face directories are the ones
transformers itself saved (tests/testdata/hf_*, made by make_goldens.py). Converted models must reproduce
the outputs transformers computed (the goldens) to 1e-5. As in test_goldens.py, outputs are computed in a
child process on TensorFlow's own kernels.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from albert_tf import model_files
from albert_tf.checkpoints import convert
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from tests import commands
from tests.helpers import SAMPLE_SPM, tiny_config
from tests.models.test_goldens import GOLDENS, load_golden, pretrainer_outputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(ROOT, "tests", "testdata")
OUTPUTS = ("sequence_output", "pooled_output", "mlm_logits", "sop_logits")


def write_tf1_release(folder, name, drop=(), extra=None):
    """A release directory: albert_config.json, model.ckpt-best.* with original names (+ optimizer state)."""
    config, _, weights, _ = load_golden(name)
    os.makedirs(folder, exist_ok=True)
    config.to_json_file(os.path.join(folder, "albert_config.json"))
    tensors = {k: v for k, v in weights.items() if not k.startswith(drop)} if drop else dict(weights)
    tensors["global_step"] = np.array(1000, np.int64)
    tensors["bert/pooler/dense/kernel/adam_m"] = np.zeros_like(weights["bert/pooler/dense/kernel"])
    tensors["bert/pooler/dense/kernel/adam_v"] = np.zeros_like(weights["bert/pooler/dense/kernel"])
    tensors.update(extra or {})
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(folder, "model.ckpt-best"),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(tensors[n]) for n in names],
    )
    return folder


def compute_outputs(directory, name):
    """Our outputs for golden `name`'s inputs, from a model directory."""
    _, inputs, _, _ = load_golden(name)
    return pretrainer_outputs(model_dir.load_pretrainer(directory), inputs)


def outputs_in_child(jobs, tmp_path):
    """{key: outputs} for jobs {key: (model directory, golden name)}, computed with oneDNN off."""
    path = tmp_path / "outputs.npz"
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"}
    command = [sys.executable, "-m", "tests.checkpoints.test_convert", str(path), json.dumps(jobs)]
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    with np.load(path) as data:
        arrays = dict(data)
    return {key: {out: arrays[f"{key}/{out}"] for out in OUTPUTS} for key in jobs}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Every golden converted from TF1 and from Hugging Face, then written back as Hugging Face."""
    base = tmp_path_factory.mktemp("converted")
    jobs, notes = {}, {}
    for name in GOLDENS:
        release = write_tf1_release(str(base / f"release_{name}"), name, extra={"bert/unknown": np.ones(3)})
        conversion = convert.from_tf1(release)
        convert.write_model_dir(conversion, base / f"tf1_{name}")
        notes[f"tf1_{name}"] = conversion.notes
        conversion = convert.from_hf(os.path.join(TESTDATA, f"hf_{name}"))
        convert.write_model_dir(conversion, base / f"hf_{name}")
        notes[f"hf_{name}"] = conversion.notes
        convert.to_hf(str(base / f"tf1_{name}"), base / f"to_hf_{name}")
        convert.write_model_dir(convert.from_hf(str(base / f"to_hf_{name}")), base / f"back_{name}")
        for kind in ("tf1", "hf", "back"):
            jobs[f"{kind}_{name}"] = (str(base / f"{kind}_{name}"), name)
    return base, outputs_in_child(jobs, base), notes


@pytest.mark.xdist_group("converted")  # one process converts the goldens once
@pytest.mark.parametrize("kind", ["tf1", "hf", "back"])
@pytest.mark.parametrize("name", GOLDENS)
def test_converted_models_reproduce_hugging_face(converted, kind, name):
    _, outputs, _ = converted
    _, _, _, expected = load_golden(name)
    for key in OUTPUTS:
        np.testing.assert_allclose(
            outputs[f"{kind}_{name}"][key], expected[key], rtol=0, atol=1e-5, err_msg=key
        )


@pytest.mark.xdist_group("converted")
def test_tf1_keeps_the_global_step_skips_optimizer_state_and_reports_unknown_variables(converted):
    base, _, notes = converted
    text = " ".join(notes["tf1_single_group"])
    assert "bert/unknown" in text and "adam" not in text and "global_step" not in text  # adam_m, adam_v
    assert notes["hf_single_group"] == []
    # The release's step is the model directory's; a Hugging Face directory has none.
    assert model_files.global_step(base / "tf1_single_group") == 1000
    assert model_files.global_step(base / "hf_single_group") is None
    assert not (base / "hf_single_group" / model_files.STEP_FILE).exists()


@pytest.mark.xdist_group("converted")
@pytest.mark.parametrize("name", GOLDENS)
def test_hugging_face_output_matches_what_transformers_saves(converted, name):
    base, _, _ = converted
    ours = load_file(str(base / f"to_hf_{name}" / "model.safetensors"))
    theirs = load_file(os.path.join(TESTDATA, f"hf_{name}", "model.safetensors"))
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in theirs.items()}
    for key in theirs:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
    with open(base / f"to_hf_{name}" / "config.json") as file:
        our_config = json.load(file)
    with open(os.path.join(TESTDATA, f"hf_{name}", "config.json")) as file:
        their_config = json.load(file)
    for key in ("transformers_version", "dtype", "classifier_dropout_prob"):
        their_config.pop(key)
        our_config.pop(key, None)
    assert our_config == their_config


def test_release_without_heads_converts_the_encoder(tmp_path):
    release = write_tf1_release(str(tmp_path / "release"), "single_group", drop=("cls/",))
    conversion = convert.from_tf1(release)
    assert any("no masked-LM head" in note for note in conversion.notes)
    assert any("no sentence-order head" in note for note in conversion.notes)
    _, inputs, weights, _ = load_golden("single_group")
    pooler = np.asarray(conversion.pretrainer.encoder.pooler.kernel)
    np.testing.assert_array_equal(pooler, weights["bert/pooler/dense/kernel"])


def test_fine_tuned_classifier_head_is_kept(tmp_path):
    head = {"output_weights": np.full((3, 14), 0.5, np.float32), "output_bias": np.zeros(3, np.float32)}
    release = write_tf1_release(str(tmp_path / "release"), "single_group", extra=head)
    convert.write_model_dir(convert.from_tf1(release), tmp_path / "out")
    with np.load(tmp_path / "out" / convert.TASK_HEADS_FILE) as kept:
        assert kept["output_weights"].shape == (3, 14)


def test_a_checkpoint_prefix_finds_the_sentencepiece_model_beside_it_or_says_it_has_none(tmp_path):
    release = write_tf1_release(str(tmp_path / "release"), "single_group")
    prefix = os.path.join(release, "model.ckpt-best")
    no_model = convert.from_tf1(prefix)
    assert no_model.spm_model is None
    assert any("no SentencePiece model" in note and "--spm_model_file" in note for note in no_model.notes)
    shutil.copyfile(SAMPLE_SPM, os.path.join(release, "30k-clean.model"))  # as in Google's releases
    for given in (prefix, release):
        conversion = convert.from_tf1(given)
        assert conversion.spm_model == os.path.join(release, "30k-clean.model"), given
        assert not any("SentencePiece" in note for note in conversion.notes)


def test_missing_variable_is_named_and_nothing_is_written(tmp_path):
    release = write_tf1_release(str(tmp_path / "release"), "single_group", drop=("bert/pooler/dense/bias",))
    with pytest.raises(convert.ConversionError, match="missing variables: bert/pooler/dense/bias"):
        convert.write_model_dir(convert.from_tf1(release), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_shape_mismatch_names_variable_and_both_shapes(tmp_path):
    bad = {"bert/pooler/dense/bias": np.zeros(15, np.float32)}
    release = write_tf1_release(
        str(tmp_path / "release"), "single_group", drop=("bert/pooler/dense/bias",), extra=bad
    )
    with pytest.raises(
        convert.ConversionError, match=r"bert/pooler/dense/bias: .* shape \[15\], .* expects \[14\]"
    ):
        convert.from_tf1(release)


def test_existing_output_is_refused(tmp_path):
    release = write_tf1_release(str(tmp_path / "release"), "single_group")
    (tmp_path / "out").mkdir()
    with pytest.raises(convert.ConversionError, match="already exists"):
        convert.write_model_dir(convert.from_tf1(release), tmp_path / "out")


def test_pytorch_bin_without_torch_says_so(tmp_path, monkeypatch):
    folder = tmp_path / "hf"
    folder.mkdir()
    shutil.copyfile(os.path.join(TESTDATA, "hf_single_group", "config.json"), folder / "config.json")
    (folder / "pytorch_model.bin").write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(convert.ConversionError, match=r"pytorch_model\.bin: .* needs torch"):
        convert.from_hf(str(folder))


@pytest.mark.parametrize("lowercased", [True, False])
def test_the_casing_survives_the_round_trip_through_hugging_face(tmp_path, lowercased):
    """A cased model (do_lower_case false) written as a Hugging Face directory says so in its
    tokenizer_config.json, as transformers' AlbertTokenizer reads it, and converts back cased."""
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config()))
    model_dir.save_model_dir(pretrainer, tmp_path / "ours", str(SAMPLE_SPM), do_lower_case=lowercased)
    convert.to_hf(str(tmp_path / "ours"), tmp_path / "hf")
    settings = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())
    assert settings["do_lower_case"] is lowercased and settings["keep_accents"] is False
    convert.write_model_dir(convert.from_hf(str(tmp_path / "hf")), tmp_path / "back")
    assert model_files.do_lower_case(tmp_path / "back") is lowercased
    (tmp_path / "hf" / "tokenizer_config.json").write_text('{"do_lower_case": "no"}')
    with pytest.raises(convert.ConversionError, match=r"tokenizer_config\.json: do_lower_case is 'no'"):
        convert.from_hf(str(tmp_path / "hf"))


def test_command_line_converts_a_release(tmp_path):
    release = write_tf1_release(str(tmp_path / "release"), "two_groups_two_inner")
    result = commands.run(
        "albert_tf.convert_checkpoint",
        ["--source=tf1", f"--input={release}", f"--output_dir={tmp_path / 'out'}"],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "wrote the model directory" in result.stderr
    assert model_files.load_config(str(tmp_path / "out")).num_hidden_groups == 2


if __name__ == "__main__":
    results = {}
    for key, (directory, name) in json.loads(sys.argv[2]).items():
        for output, value in compute_outputs(directory, name).items():
            results[f"{key}/{output}"] = value
    np.savez(sys.argv[1], **results)
