"""LiteRT export, checked the way a device runs it.

Every file is loaded in a fresh Python process that imports only NumPy, LiteRT's interpreter (ai-edge-litert)
and tensorflow_text's TFLite registrars (which bring TensorFlow), no albert_tf, and its answers to raw text
are compared with the Keras model's on the ids the Python tokenizer packs. The op list is read from the
flatbuffer.
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import (
    AlbertClassifier,
    AlbertEncoder,
    AlbertMultipleChoice,
    AlbertPretrainer,
    model_dir,
)
from albert_tf.models.preprocessing import Preprocessing
from albert_tf.serving import litert
from albert_tf.text.tf_tokenizer import CHOICE_TOKENS, InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests import commands
from tests.helpers import SAMPLE_SPM, tiny_config

SPM = str(SAMPLE_SPM)
SEQ = 16
LABELS = ("contradiction", "entailment", "neutral")
# Short, digit-comma, non-ASCII and empty text, and one longer than SEQ tokens (truncated; a multiple-choice
# row of it, as passage and as choice, cuts the passage to the room the choice leaves).
TEXTS = ["The cat sat on the mat.", "ALBERT, 1,000 times", "a", "Ça va? ﬁne Ünïcödé", "",
         "A long passage. " * 9]  # fmt: skip
# The float32 exports; classifier_pair is exported by the command line, from a model directory.
EXPORTS = ("classifier", "classifier_pair", "regression", "encoder", "multiple_choice")
QUANTIZED = ("float16", "dynamic_int8")
# What a user's process runs: the interpreter and the registrars, nothing of albert_tf. Reads
# {name: [path, {input: nested lists of str}]} on stdin; writes {name: {output: nested lists}} (strings as
# str) and the modules it imported to the file named by argv[1].
FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow_text
from ai_edge_litert.interpreter import InterpreterWithCustomOps

answers = {}
for name, (path, inputs) in json.load(sys.stdin).items():
    interpreter = InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_path=path
    )
    run = interpreter.get_signature_runner("serving_default")
    feeds = {key: np.vectorize(str.encode, otypes=[object])(np.array(value, object))
             for key, value in inputs.items()}
    outputs = run(**feeds)
    answers[name] = {key: (value.astype(str) if value.dtype == object else value).tolist()
                     for key, value in outputs.items()}
with open(sys.argv[1], "w") as file:
    json.dump({"answers": answers, "modules": sorted(sys.modules)}, file)
"""
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("litert")]


def packed(texts, texts_b=None, seq=SEQ):
    """The Python tokenizer's packing as int32 arrays [batch, seq]."""
    python = AlbertTokenizer(SPM)
    rows = [python.pack(a, None if texts_b is None else texts_b[i], seq) for i, a in enumerate(texts)]
    names = ("input_word_ids", "input_mask", "input_type_ids")
    return {name: np.array([getattr(r, name) for r in rows], np.int32).reshape(-1, seq) for name in names}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """One pretrained encoder (8k vocabulary, the sample SentencePiece model's), its task models, and a LiteRT
    file of each (EXPORTS, float32) and of the single-text classifier quantized (QUANTIZED)."""
    base = tmp_path_factory.mktemp("litert")
    keras.utils.set_random_seed(7)  # module fixtures run before the per-test seeding
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000)))
    model_dir.save_model_dir(pretrainer, base / "pretrained", spm_model=SPM)
    encoder = pretrainer.encoder
    single, pair = Preprocessing(SEQ, False), Preprocessing(SEQ, True)
    models = {
        "classifier": AlbertClassifier(encoder, num_classes=3, labels=LABELS, preprocessing=single),
        "classifier_pair": AlbertClassifier(encoder, num_classes=2, preprocessing=pair),
        "regression": AlbertClassifier(encoder, num_classes=1, preprocessing=pair),
        "encoder": encoder,
        "multiple_choice": AlbertMultipleChoice(encoder, num_choices=2, preprocessing=pair),
    }
    # The heads' initial weights (stddev 0.02) give logits of about 1e-4, which a 1e-4 tolerance cannot tell
    # apart: weights of stddev 1 spread them.
    rng = np.random.default_rng(7)
    for name, head in (("classifier", "logits"), ("classifier_pair", "logits"), ("regression", "logits"),
                       ("multiple_choice", "choice_logits")):  # fmt: skip
        kernel = models[name].get_layer(head).kernel
        kernel.assign(rng.normal(size=kernel.shape).astype(np.float32))
    paths = {name: str(base / f"{name}.tflite") for name in (*EXPORTS, *QUANTIZED)}
    for name in ("classifier", "regression", "multiple_choice"):
        task = "multiple_choice" if name == "multiple_choice" else "classifier"
        litert.export_litert(models[name], SPM, paths[name], task)
    litert.export_litert(encoder, SPM, paths["encoder"], "encoder", max_seq_length=SEQ)
    for quantize in QUANTIZED:
        litert.export_litert(models["classifier"], SPM, paths[quantize], "classifier", quantize=quantize)
    # The pair classifier through the command line, from a fine-tuned model directory.
    model_dir.copy_config_and_spm(base / "pretrained", base / "fine_tuned")
    model_dir.save_task_model(models["classifier_pair"], base / "fine_tuned")
    result = commands.run(
        "albert_tf.export_litert",
        [f"--model_dir={base / 'fine_tuned'}", "--task=classifier", f"--output={paths['classifier_pair']}"],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"wrote {paths['classifier_pair']}" in result.stderr
    return base, models, paths


def requests():
    """What each file is asked in the fresh process: batches of several texts and of one."""
    asked = {}
    for size in (len(TEXTS), 1):
        texts = TEXTS[:size]
        for name in (*EXPORTS, *QUANTIZED):
            if name == "multiple_choice":
                inputs = {"text": texts, "choices": [[text, text[::-1]] for text in texts]}
            elif name in ("classifier_pair", "regression"):
                inputs = {"text": texts, "text_b": texts[::-1]}
            else:
                inputs = {"text": texts}
            asked[f"{name}/{size}"] = (name, inputs)
    return asked


@pytest.fixture(scope="module")
def fresh_answers(exports, tmp_path_factory):
    """Every file's answers to requests(), from one fresh process of FRESH_PROCESS; and its modules."""
    _, _, paths = exports
    asked = {key: [paths[name], inputs] for key, (name, inputs) in requests().items()}
    out = tmp_path_factory.mktemp("fresh") / "answers.json"
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, str(out)], input=json.dumps(asked), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(out.read_text())
    return found["answers"], found["modules"]


def expected_outputs(models, name, inputs):
    """The Keras model's outputs for inputs packed by the Python tokenizer, named as the file names them."""
    model = models[name]
    if name == "multiple_choice":  # packed as run_race packs (each choice kept, the passage cut)
        tokenizer = InGraphTokenizer(SPM)
        choices = [choice for row in inputs["choices"] for choice in row]
        features = tokenizer.pack(
            tokenizer.tokenize([text for text in inputs["text"] for _ in range(2)]),
            tokenizer.tokenize(choices), SEQ, keep_b_tail=CHOICE_TOKENS,
        )  # fmt: skip
        logits = np.asarray(model({k: tf.reshape(v, [-1, 2, SEQ]) for k, v in features.items()}))
        return {"logits": logits, "probabilities": np.asarray(tf.nn.softmax(logits))}
    features = packed(inputs["text"], inputs.get("text_b"))
    if name == "encoder":
        outputs = model(features)
        mask = features["input_mask"][:, :, None]
        return {
            "pooled_output": outputs["pooled_output"],
            "sequence_output": outputs["sequence_output"] * mask,
        }
    logits = np.asarray(model(features))
    if name == "regression":
        return {"logits": logits}
    names = np.array(LABELS if name == "classifier" else ["0", "1"])
    return {
        "logits": logits,
        "probabilities": np.asarray(tf.nn.softmax(logits)),
        "label": names[logits.argmax(1)],
    }


def test_a_fresh_process_with_only_the_tf_text_registrars_answers_as_keras(exports, fresh_answers):
    _, models, _ = exports
    answers, modules = fresh_answers
    assert not [module for module in modules if module.split(".")[0] == "albert_tf"]
    for key, (name, inputs) in requests().items():
        if name in QUANTIZED:
            continue
        got, expected = answers[key], expected_outputs(models, name, inputs)
        assert set(got) == set(expected), key
        for output, value in expected.items():
            if output == "label":
                assert got[output] == value.tolist(), key
            else:
                np.testing.assert_allclose(np.array(got[output]), value, atol=1e-4, err_msg=f"{key} {output}")


def test_quantized_files_load_and_label(exports, fresh_answers):
    """float16 and dynamic int8: a label of the classifier's for each text, probabilities near float32's (a
    tiny random model's classes lie close together, so labels may differ; data/doc_topics measures that)."""
    _, _, paths = exports
    answers, _ = fresh_answers
    for quantize in QUANTIZED:
        for size in (len(TEXTS), 1):
            got, float32 = answers[f"{quantize}/{size}"], answers[f"classifier/{size}"]
            assert len(got["label"]) == size and set(got["label"]) <= set(LABELS)
            np.testing.assert_allclose(got["probabilities"], float32["probabilities"], atol=0.02)
    # dynamic_int8 stores the word embeddings (the only weight past the converter's 1,024-element threshold
    # in a tiny model) in int8: a smaller file.
    assert (
        os.path.getsize(paths["dynamic_int8"])
        < os.path.getsize(paths["float16"])
        < os.path.getsize(paths["classifier"])
    )


@pytest.mark.parametrize("name", (*EXPORTS, *QUANTIZED))
def test_only_builtin_ops_and_named_tf_text_ops_and_the_weights_inside(exports, name):
    _, models, paths = exports
    with open(paths[name], "rb") as file:
        content = file.read()
    builtin, custom = litert.operators(content)
    assert custom == ["FastBertNormalize", "TFText>FastSentencepieceTokenize"], custom
    assert set(custom) <= litert.TF_TEXT_OPS
    assert not set(builtin) & litert.VARIABLE_OPS and "FULLY_CONNECTED" in builtin, builtin
    # The float32 weights are in the file (the word embeddings alone: 8000 x 5 floats).
    if name not in QUANTIZED:
        weights = models["classifier" if name == "classifier_pair" else name].weights
        assert len(content) > sum(np.prod(w.shape) * 4 for w in weights)


def test_the_loader_answers_as_the_fresh_process_and_checks_its_inputs(exports, fresh_answers):
    _, _, paths = exports
    answers, _ = fresh_answers
    classifier = litert.load(paths["classifier"])
    assert classifier.inputs == ("text",) and classifier.outputs == ("label", "logits", "probabilities")
    got = classifier(TEXTS)
    np.testing.assert_allclose(got["probabilities"], answers[f"classifier/{len(TEXTS)}"]["probabilities"],
                               atol=1e-6)  # fmt: skip
    assert [label.decode() for label in got["label"]] == answers[f"classifier/{len(TEXTS)}"]["label"]
    pair = litert.load(paths["classifier_pair"])
    got = pair(TEXTS, TEXTS[::-1])
    np.testing.assert_allclose(got["logits"], answers[f"classifier_pair/{len(TEXTS)}"]["logits"], atol=1e-6)
    with pytest.raises(ValueError, match=r"this model takes \['text', 'text_b'\]"):
        pair(TEXTS)
    with pytest.raises(ValueError, match="different batch sizes"):
        pair(TEXTS, TEXTS[:2])
    choices = litert.load(paths["multiple_choice"], num_threads=1)
    got = choices(TEXTS[:1], choices=[[TEXTS[0], TEXTS[0][::-1]]])
    np.testing.assert_allclose(got["logits"], answers["multiple_choice/1"]["logits"], atol=1e-6)
    with pytest.raises(ValueError, match=r"choices must be \[batch, 2\]"):
        choices(TEXTS[:1], choices=[["a", "b", "c"]])


def test_a_model_that_answers_nan_is_refused_and_no_file_is_left(exports, tmp_path):
    _, models, _ = exports
    broken = AlbertClassifier(models["encoder"], num_classes=2, preprocessing=Preprocessing(SEQ, False))
    kernel = broken.get_layer("logits").kernel
    kernel.assign(np.full(kernel.shape, np.nan, np.float32))
    # A file already there stays as it was, and nothing else is left beside it.
    output = tmp_path / "nan.tflite"
    output.write_bytes(b"an earlier export")
    with pytest.raises(litert.LiteRTError, match="non-finite logits"):
        litert.export_litert(broken, SPM, output, "classifier")
    assert os.listdir(tmp_path) == ["nan.tflite"] and output.read_bytes() == b"an earlier export"


def test_ops_a_device_lacks_are_refused(exports, tmp_path, monkeypatch):
    """A graph op without a TFLite kernel (StringLower here) becomes a custom op the registrars do not give:
    refused, no file."""
    _, models, _ = exports
    from albert_tf.serving import litert_text

    class Lowering(litert_text.DeviceTokenizer):
        def pack(self, text, text_b=None, seq_length=128, **options):
            return super().pack(tf.strings.lower(text), text_b, seq_length, **options)

    monkeypatch.setattr(litert_text, "DeviceTokenizer", Lowering)
    with pytest.raises(litert.LiteRTError, match=r"holds ops \['StringLower'\]"):
        litert.export_litert(models["classifier"], SPM, tmp_path / "lower.tflite", "classifier")
    assert os.listdir(tmp_path) == []


def test_weights_left_as_variables_are_refused(exports, tmp_path, monkeypatch):
    """Without freezing, the converter writes variable ops whose values the file does not hold."""
    _, models, _ = exports

    def traced(function, signature):
        return tf.function(function, input_signature=signature, autograph=False).get_concrete_function()

    monkeypatch.setattr(litert, "_frozen", traced)
    with pytest.raises(litert.LiteRTError, match="READ_VARIABLE"):
        litert.export_litert(models["classifier"], SPM, tmp_path / "variables.tflite", "classifier")
    assert os.listdir(tmp_path) == []


def test_span_and_pretraining_are_refused_saying_why(exports, tmp_path):
    base, models, _ = exports
    with pytest.raises(ValueError, match="'span' is not offered as a LiteRT model: a span answer needs a"):
        litert.export_litert(models["encoder"], SPM, tmp_path / "span.tflite", "span")
    with pytest.raises(ValueError, match="'pretraining' is not offered.*export the encoder"):
        litert.export_litert(models["encoder"], SPM, tmp_path / "pretraining.tflite", "pretraining")
    with pytest.raises(ValueError, match="quantize must be one of none, float16, dynamic_int8"):
        litert.export_litert(models["encoder"], SPM, tmp_path / "int4.tflite", "encoder", quantize="int4")
    result = commands.run(
        "albert_tf.export_litert",
        [f"--model_dir={base / 'fine_tuned'}", "--task=span", f"--output={tmp_path / 'span.tflite'}"],
    )
    assert result.returncode == 1
    assert "export_litert: error: --task=span is not offered: a span answer needs a loop" in result.stderr
    assert os.listdir(tmp_path) == []


def test_a_task_model_keeps_its_preprocessing(exports, tmp_path):
    """The file packs as the model was fine-tuned: a contradicting length or pairing is refused."""
    _, models, _ = exports
    with pytest.raises(ValueError, match="max_seq_length=16; max_seq_length=12 contradicts it"):
        litert.export_litert(models["classifier"], SPM, tmp_path / "a.tflite", "classifier", 12)
    with pytest.raises(ValueError, match="text_pair=False; text_pair=True contradicts it"):
        litert.export_litert(models["classifier"], SPM, tmp_path / "a.tflite", "classifier", pair=True)
    assert os.listdir(tmp_path) == []
