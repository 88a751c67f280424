"""SavedModel export: signatures, op set, CPU pinning, a fresh process, warm-up requests, bad requests."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.data.tokenizer import AlbertTokenizer
from albert_tf.models import (
    AlbertClassifier,
    AlbertEncoder,
    AlbertMultipleChoice,
    AlbertPretrainer,
    model_dir,
)
from albert_tf.models.task_models import AlbertSpanLabeler
from albert_tf.serving import export
from tests.data.text_samples import varied_lines
from tests.helpers import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "data", "sample", "spm_8k.model")
SEQ = 16
# Ops tensorflow-text 2.21 registers that tensorflow-text 2.12.1 (inside stock TF Serving) lacks.
MISSING_IN_TF_TEXT_2_12 = {"TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim", "TFText>Utf8Binarize"}
PY_FUNCTIONS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}
BAD_TEXTS = ["", "\xff\xfe not UTF-8", "word " * 20_000, "Tabs\tand\nnewlines", "1,000 Ünïcödé ＡＢＣ"]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """A model directory (8k vocabulary to match the sample SentencePiece model) and one export per task."""
    base = tmp_path_factory.mktemp("export")
    config = tiny_config(vocab_size=8000)
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    model_dir.save_model_dir(pretrainer, base / "model", spm_model=SPM)
    models = {
        "encoder": (pretrainer.encoder, False),
        "pretraining": (pretrainer, True),
        "classifier": (AlbertClassifier(pretrainer.encoder, num_classes=3), True),
        "span": (AlbertSpanLabeler(pretrainer.encoder, answerability=True), True),
        "multiple_choice": (AlbertMultipleChoice(pretrainer.encoder, num_choices=2), False),
    }
    paths = {}
    for task, (model, pair) in models.items():
        paths[task] = export.export_saved_model(
            model, SPM, base / task / "1", task, max_seq_length=SEQ, pair=pair
        )
    return base, models, paths


def graph_of(path):
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        proto.ParseFromString(file.read())
    return proto.meta_graphs[0]


def all_nodes(graph):
    yield from graph.graph_def.node
    for function in graph.graph_def.library.function:
        yield from function.node_def


@pytest.mark.parametrize("task", export.TASKS)
def test_only_core_and_tf_text_2_12_ops_and_tokenizer_on_cpu(exports, task):
    _, _, paths = exports
    graph = graph_of(paths[task])
    core = set(dir(tf.raw_ops))
    ops = {node.op for node in all_nodes(graph)}
    assert not ops & PY_FUNCTIONS and not ops & MISSING_IN_TF_TEXT_2_12
    assert ops - core <= export.TOKENIZER_OPS, ops - core  # every non-core op is one we pinned and checked
    assert "SentencepieceOp" in ops
    for node in all_nodes(graph):
        if node.op in export.TOKENIZER_OPS:
            assert node.device == "/device:CPU:0", (node.name, node.device)
    resources = [n for n in graph.object_graph_def.nodes if n.WhichOneof("kind") == "resource"]
    assert resources and all(r.resource.device == "/device:CPU:0" for r in resources)


def test_signatures_and_method_names(exports):
    _, _, paths = exports
    signatures = {task: dict(graph_of(path).signature_def) for task, path in paths.items()}
    assert set(signatures["classifier"]) >= {"serving_default", "preprocess", "serve_token_ids", "classify"}
    assert signatures["classifier"]["classify"].method_name == "tensorflow/serving/classify"
    assert set(signatures["classifier"]["classify"].inputs) == {"inputs"}
    assert set(signatures["classifier"]["classify"].outputs) == {"classes", "scores"}
    assert set(signatures["encoder"]["serving_default"].outputs) == {"pooled_output", "sequence_output"}
    assert set(signatures["pretraining"]["serve_token_ids"].inputs) >= {"masked_lm_positions"}
    assert set(signatures["pretraining"]["serve_token_ids"].outputs) == {"mlm_logits", "sop_logits"}
    assert set(signatures["span"]["serving_default"].inputs) == {"text", "text_b"}
    assert {"start_logits", "end_logits", "answer_text"} <= set(signatures["span"]["serving_default"].outputs)
    assert set(signatures["multiple_choice"]["serving_default"].inputs) == {"text", "choices"}
    listing = subprocess.run(
        ["saved_model_cli", "show", "--dir", paths["classifier"], "--all"], capture_output=True, text=True
    )
    assert listing.returncode == 0 and "signature_def['classify']" in listing.stdout


def test_in_graph_preprocessing_gives_the_python_tokenizer_ids(exports):
    _, _, paths = exports
    preprocess = tf.saved_model.load(paths["classifier"]).signatures["preprocess"]
    python = AlbertTokenizer(SPM)
    lines = varied_lines(2000, seed=5)
    pairs = lines[1:] + lines[:1]
    got = preprocess(text=tf.constant(lines), text_b=tf.constant(pairs))
    for index, (a, b) in enumerate(zip(lines, pairs, strict=True)):
        packed = python.pack(a, b, SEQ)
        width = got["input_word_ids"].shape[1]  # the longest packed pair: the rest of SEQ is padding
        assert packed.input_word_ids[width:] == [0] * (SEQ - width)
        assert list(got["input_word_ids"][index].numpy()) == packed.input_word_ids[:width], (a, b)
        assert list(got["input_type_ids"][index].numpy()) == packed.input_type_ids[:width], (a, b)


FRESH = """
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops, as TF Serving links them)
assert not any(name.startswith("albert_tf") for name in sys.modules)
texts = json.loads(sys.argv[2])
out = {}
for task in ("classifier", "encoder"):
    signature = tf.saved_model.load(f"{sys.argv[1]}/{task}/1").signatures["serving_default"]
    args = {"text": tf.constant(texts)}
    if task == "classifier":
        args["text_b"] = tf.constant(texts[::-1])
    for name, value in signature(**args).items():
        out[f"{task}/{name}"] = value.numpy()
    empty = signature(**{k: v[:0] for k, v in args.items()})
    out[f"{task}/empty"] = np.array([v.shape[0] for v in empty.values()])
np.savez(sys.argv[3], **out)
"""


def packed_features(packed):
    names = ("input_word_ids", "input_mask", "input_type_ids")
    return {name: np.array([getattr(p, name) for p in packed], np.int32) for name in names}


@pytest.mark.slow
def test_fresh_process_with_only_tensorflow_gives_the_keras_outputs(exports, tmp_path):
    base, models, _ = exports
    texts = ["The cat sat on the mat.", "ALBERT, 1,000 times", *BAD_TEXTS]
    result = subprocess.run(
        [sys.executable, "-c", FRESH, str(base), json.dumps(texts), str(tmp_path / "out.npz")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    got = dict(np.load(tmp_path / "out.npz"))
    python = AlbertTokenizer(SPM)
    features = packed_features([python.pack(a, b, SEQ) for a, b in zip(texts, texts[::-1], strict=True)])
    logits = np.asarray(models["classifier"][0](features, training=False))
    np.testing.assert_allclose(got["classifier/logits"], logits, atol=1e-5)
    np.testing.assert_allclose(got["classifier/probabilities"].sum(-1), 1.0, atol=1e-5)
    features = packed_features([python.pack(a, None, SEQ) for a in texts])
    pooled = np.asarray(models["encoder"][0](features)["pooled_output"])
    np.testing.assert_allclose(got["encoder/pooled_output"], pooled, atol=1e-5)
    assert got["encoder/sequence_output"].shape == (len(texts), SEQ, 14)  # the long text, truncated to SEQ
    assert not got["classifier/empty"].any() and not got["encoder/empty"].any()


def test_short_requests_are_padded_to_their_longest_text_only(exports):
    _, models, paths = exports
    texts = ["a short one", "shorter"]
    out = tf.saved_model.load(paths["encoder"]).signatures["serving_default"](text=tf.constant(texts))
    python = AlbertTokenizer(SPM)
    longest = max(len(python.encode(text)) for text in texts) + 2
    assert out["sequence_output"].shape == (2, longest, 14)
    features = packed_features([python.pack(text, None, SEQ) for text in texts])
    expected = models["encoder"][0](features)
    np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(out["sequence_output"], expected["sequence_output"][:, :longest], atol=1e-5)


def test_classify_api_and_warmup_requests(exports):
    from tensorflow_serving.apis import prediction_log_pb2

    _, _, paths = exports
    loaded = tf.saved_model.load(paths["classifier"])
    example = tf.train.Example()
    example.features.feature["text"].bytes_list.value.append(b"good movie")
    example.features.feature["text_b"].bytes_list.value.append(b"great film")
    classified = loaded.signatures["classify"](inputs=tf.constant([example.SerializeToString()]))
    assert classified["classes"].numpy().tolist() == [[b"0", b"1", b"2"]]
    direct = loaded.signatures["serving_default"](
        text=tf.constant(["good movie"]), text_b=tf.constant(["great film"])
    )
    np.testing.assert_allclose(classified["scores"], direct["probabilities"], atol=1e-6)
    warmup = os.path.join(paths["classifier"], "assets.extra", "tf_serving_warmup_requests")
    replayed = 0
    for record in tf.data.TFRecordDataset(warmup):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        args = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
        signature = loaded.signatures[request.model_spec.signature_name]
        assert signature(**{k: tf.constant(v) for k, v in args.items()})["logits"].shape[0] == len(
            args["text"]
        )
        replayed += 1
    assert replayed == 2


def test_span_answer_lies_in_the_context_and_choices_are_scored(exports):
    _, _, paths = exports
    span = tf.saved_model.load(paths["span"]).signatures["serving_default"]
    out = span(
        text=tf.constant(["who wrote it?"]), text_b=tf.constant(["The book was written by Ada Lovelace."])
    )
    start, end = int(out["answer_start"][0]), int(out["answer_end"][0])
    question_length = len(AlbertTokenizer(SPM).encode("who wrote it?"))
    assert question_length + 2 <= start <= end < start + export.MAX_ANSWER_TOKENS
    assert out["answer_text"].numpy()[0].decode() in "the book was written by ada lovelace."
    choices = tf.saved_model.load(paths["multiple_choice"]).signatures["serving_default"]
    scores = choices(text=tf.constant(["q1", "q2"]), choices=tf.constant([["a", "b"], ["c", "d"]]))
    assert scores["probabilities"].shape == (2, 2)


def test_existing_version_and_too_long_sequences_are_refused(exports, tmp_path):
    _, models, paths = exports
    with pytest.raises(ValueError, match="already exists"):
        export.export_saved_model(models["encoder"][0], SPM, paths["encoder"], "encoder", max_seq_length=SEQ)
    with pytest.raises(ValueError, match="max_seq_length=17 exceeds the model's max_position_embeddings=16"):
        export.export_saved_model(
            models["encoder"][0], SPM, tmp_path / "x" / "1", "encoder", max_seq_length=17
        )
    assert not (tmp_path / "x" / "1").exists()


@pytest.mark.slow
def test_command_line_exports_a_model_directory(exports, tmp_path):
    base, models, _ = exports
    model_dir.save_task_model(models["classifier"][0], base / "model")
    result = subprocess.run(
        [sys.executable, "-m", "albert_tf.export_saved_model", f"--model_dir={base / 'model'}",
         "--task=classifier", f"--export_dir={tmp_path / 'served' / '1'}", f"--max_seq_length={SEQ}",
         "--text_pair"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = tf.saved_model.load(str(tmp_path / "served" / "1"))
    assert set(loaded.signatures) >= {"serving_default", "classify"}


def test_client_requests_are_what_the_signatures_take(exports):
    """export/client.py's REST body and gRPC requests, executed against the export directly."""
    sys.path.insert(0, os.path.join(ROOT, "export"))
    import client

    _, _, paths = exports
    loaded = tf.saved_model.load(paths["classifier"])
    body = client.rest_body(["a fine film"], ["i liked it"])
    direct = loaded.signatures[body["signature_name"]](
        **{k: tf.constant(v) for k, v in body["inputs"].items()}
    )
    request = client.predict_request("albert", ["a fine film"], ["i liked it"])
    inputs = {name: tf.constant(tf.make_ndarray(proto)) for name, proto in request.inputs.items()}
    via_grpc = loaded.signatures[request.model_spec.signature_name](**inputs)
    np.testing.assert_allclose(via_grpc["logits"], direct["logits"])
    classification = client.classification_request("albert", ["a fine film"], ["i liked it"])
    examples = [e.SerializeToString() for e in classification.input.example_list.examples]
    scores = loaded.signatures["classify"](inputs=tf.constant(examples))["scores"]
    np.testing.assert_allclose(scores, direct["probabilities"], atol=1e-6)
