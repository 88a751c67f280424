"""Compiled exports (export_saved_model(..., jit_compile=True)): the encoder's blocks under XLA at shape
buckets, loaded by TensorFlow's C++ loader through the C API (albert_tf.serving.servable, what TF Serving
runs) and compared with the plain export of the same model, signature by signature.

The model server's switch is a process-wide one: `tensorflow_model_server` without
--xla_cpu_compilation_enabled calls tensorflow::DisableXlaCompilation() before it loads anything, and every
compilation then fails. The tests call that same function of the installed TensorFlow (in a child process)
to check that a compiled export answers every request after its warm-up without compiling again, and that a
server without the flag refuses it at the warm-up, not at a user's request.
"""

import os
import pickle
import subprocess
import sys

import keras
import numpy as np
import pytest
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.models import (
    AlbertClassifier,
    AlbertEncoder,
    AlbertMultipleChoice,
    AlbertPretrainer,
    model_dir,
)
from albert_tf.models.task_models import AlbertSpanLabeler
from albert_tf.serving import compiled_blocks, export
from albert_tf.serving.servable import Servable
from albert_tf.text import span_settings
from tests import commands
from tests.helpers import tiny_config
from tests.serving.test_export import (  # noqa: F401  (older_tensorflow: a fixture)
    LABELS,
    ROOT,
    SPM,
    example_inputs,
    older_tensorflow,
    packed,
    served_ids,
)

SEQ = 20  # width buckets 16, 20: the last one max_seq_length, not a multiple of 16
SUB = 3  # rows per sub-batch: row buckets 1, 2, 3
POSITIONS = 64  # the models' max_position_embeddings: serve_token_ids may send ids wider than the buckets
SPAN = span_settings.SpanSettings(max_seq_length=SEQ, doc_stride=7, max_query_length=6, n_best_size=5,
                                  max_answer_length=4)  # fmt: skip
TEXTS = [
    "The cat sat on the mat.",
    "word " * 60,  # truncated: a full-length row
    "a",
    "ALBERT, 1,000 times",
    "Ça va? ﬁne",
    "",
    "The quick brown fox jumps over the lazy dog.",
]
SHORT = ["a", "x y z", "Ça va? ﬁne"]  # texts (and pairs) of at most 16 tokens
# One row; sub-batches of every row bucket, at the widths 20 and 16; several sub-batches, the last short.
BATCHES = [TEXTS[:1], TEXTS[:2], TEXTS[:3], TEXTS[:4], TEXTS, SHORT[:1], SHORT[:2], SHORT]
EXPORTS = ("encoder", "pretraining", "classifier", "regression", "span", "multiple_choice")
pytestmark = pytest.mark.xdist_group("compiled_export")


def tiny_models():
    """name → (Keras model, task, pair)."""
    keras.utils.set_random_seed(11)
    encoder = AlbertEncoder(tiny_config(vocab_size=8000, max_position_embeddings=POSITIONS))
    models = {
        "encoder": (encoder, "encoder", False),
        "pretraining": (AlbertPretrainer(encoder), "pretraining", True),
        "classifier": (AlbertClassifier(encoder, num_classes=3, labels=LABELS), "classifier", True),
        "regression": (AlbertClassifier(encoder, num_classes=1), "classifier", False),
        "span": (AlbertSpanLabeler(encoder, answerability=True), "span", True),
        "multiple_choice": (AlbertMultipleChoice(encoder, num_choices=2), "multiple_choice", True),
    }
    return models


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """twins(name) → (plain Servable, compiled Servable, compiled export's path): one model exported both
    ways with the same settings, each built at its first use (a compiled export compiles every bucket once
    to check its warm-up, a few seconds)."""
    base = tmp_path_factory.mktemp("compiled")
    models = tiny_models()
    built = {}

    def get(name):
        if name not in built:
            model, task, pair = models[name]
            paths = [
                export.export_saved_model(
                    model,
                    SPM,
                    base / name / kind / "1",
                    task,
                    SEQ,
                    pair=pair,
                    span_settings=SPAN,
                    sub_batch_size=SUB,
                    jit_compile=kind == "compiled",
                )  # fmt: skip
                for kind in ("plain", "compiled")
            ]
            built[name] = (Servable(paths[0]), Servable(paths[1]), paths[1])
        return built[name]

    yield get
    for plain, compiled, _ in built.values():
        plain.close()
        compiled.close()


def requests(name, servable, wide=False):
    """(signature, inputs) for every signature of an export, on each of BATCHES; with wide, then one
    serve_token_ids request of 2 rows wider than max_seq_length (past the last width bucket)."""
    signatures = servable.signatures
    pair = "text_b" in signatures["serving_default"].inputs
    found = []
    for texts in BATCHES:
        size, texts_b = len(texts), texts[::-1]
        if name.startswith("span"):  # contexts of several windows: the window sub-batches vary too
            contexts = [" ".join(texts[i:] + texts) for i in range(size)]
            found.append(("serving_default", {"text": texts, "text_b": contexts}))
        elif name == "multiple_choice":
            choices = np.array([[a, b] for a, b in zip(texts, texts_b, strict=True)], object)
            found.append(("serving_default", {"text": texts, "choices": choices}))
            ids = packed([t for t in texts for _ in range(2)], list(choices.reshape(-1)), SEQ)
            found.append(("serve_token_ids", {k: v.reshape(size, 2, SEQ) for k, v in ids.items()}))
            continue
        else:
            inputs = {"text": texts, "text_b": texts_b} if pair else {"text": texts}
            found += [("serving_default", inputs), ("preprocess", inputs)]
        for signature in ("classify", "regress"):
            if signature in signatures:
                found.append((signature, {"inputs": example_inputs(texts, texts_b if pair else None)}))
        ids = packed(texts, texts_b if pair else None, SEQ)
        if name == "pretraining":
            ids["masked_lm_positions"] = np.tile(np.array([[1, 0, 3]], np.int32), (size, 1))
        found.append(("serve_token_ids", ids))
    if wide:
        texts = [TEXTS[1], TEXTS[0]]  # 62 tokens and fewer: ids POSITIONS wide, the model's every position
        ids = packed(texts, texts[::-1], POSITIONS)
        assert ids["input_mask"].sum(1).max() > SEQ
        if name == "multiple_choice":  # one question, the two rows its choices
            ids = {key: value.reshape(1, 2, POSITIONS) for key, value in ids.items()}
        if name == "pretraining":
            ids["masked_lm_positions"] = np.array([[1, 50], [2, 3]], np.int32)
        found.append(("serve_token_ids", ids))
    return found


def assert_same_answers(expected, got, where, atol=1e-6):
    """Strings and ids equal, numbers within atol (default: float32 rounding)."""
    assert set(expected) == set(got), where
    for key, value in expected.items():
        if value.dtype == object or value.dtype.kind == "i":
            assert got[key].tolist() == value.tolist(), f"{where}/{key}"
        else:
            np.testing.assert_allclose(got[key], value, atol=atol, err_msg=f"{where}/{key}")


def test_buckets_are_powers_of_two_rows_and_a_width_ladder():
    assert compiled_blocks.row_buckets(8) == [1, 2, 4, 8]
    assert compiled_blocks.row_buckets(6) == [1, 2, 4, 6]
    assert compiled_blocks.row_buckets(1) == [1]
    assert compiled_blocks.width_buckets(128) == [16, 32, 48, 64, 80, 96, 112, 128]
    assert compiled_blocks.width_buckets(384)[7:] == [128, 160, 192, 224, 256, 320, 384]
    assert compiled_blocks.width_buckets(512)[-2:] == [448, 512]
    assert compiled_blocks.width_buckets(SEQ) == [16, 20]
    assert compiled_blocks.width_buckets(10) == [10]


def test_a_compiled_classifier_answers_as_the_plain_export(twins):
    """Every signature, batches of 1 to 7 rows (sub-batches of each bucket, a full-length row), through
    the C++ loader: the plain export's answers within float32 rounding, labels equal."""
    plain, compiled, _ = twins("classifier")
    for signature, inputs in requests("classifier", plain):
        where = f"{signature}/{len(next(iter(inputs.values())))} rows"
        assert_same_answers(plain.run(signature, inputs), compiled.run(signature, inputs), where)


def test_the_warmup_requests_are_every_bucket_on_serve_token_ids(twins):
    """One serve_token_ids request per (row bucket, width bucket), each one sub-batch of exactly that shape
    (every position a real token, none a trailing [CLS]), then the text requests."""
    _, compiled, _ = twins("classifier")
    warmup = compiled.warmup_requests()
    shapes = [inputs["input_mask"].shape for name, inputs in warmup if name == "serve_token_ids"]
    rows, widths = compiled_blocks.row_buckets(SUB), compiled_blocks.width_buckets(SEQ)
    assert shapes == [(count, width) for count in rows for width in widths]
    for name, inputs in warmup:
        if name == "serve_token_ids":
            ids = inputs["input_word_ids"]
            assert (inputs["input_mask"] == 1).all() and (ids[:, -1] != ids[:, 0]).all()  # ids[:, 0]: [CLS]
    assert [name for name, _ in warmup[len(shapes) :]] == ["serving_default", "serving_default"]


SERVER = """
import ctypes, pickle, sys
from albert_tf.serving import servable as served
from albert_tf.serving.servable import Servable, ServingError
requests_file, out = sys.argv[1:]
with open(requests_file, "rb") as file:
    asked = pickle.load(file)  # name -> (path, requests)
sessions = {}
for name, (path, _) in asked.items():
    warm = Servable(path)
    warm.replay_warmup()
    sessions[name] = {"warm": warm, "cold": Servable(path)}  # cold: loaded, never run, nothing compiled
# What tensorflow_model_server does without --xla_cpu_compilation_enabled (at its start; here after the
# warm-up of one session of each export): every XLA compilation from now on fails.
getattr(served._lib(), "_ZN10tensorflow21DisableXlaCompilationEv")()
answers = {}
for name, (_, requests) in asked.items():
    answers[name] = {"warm": [], "cold": []}
    for key, session in sessions[name].items():
        for signature, inputs in requests:
            try:
                answers[name][key].append(session.run(signature, inputs))
            except ServingError as error:
                answers[name][key].append(str(error))
with open(out, "wb") as file:
    pickle.dump(answers, file)
"""


@pytest.fixture(scope="module")
def served_without_compiling(twins, tmp_path_factory):
    """name → (requests, answers) for every export of EXPORTS: requests(name, plain, wide=True), and
    answers["warm"] and answers["cold"] to each (an error message where one failed): the compiled exports
    loaded twice each in one child process, XLA compilation then turned off, as the model server runs
    without its XLA flag; "warm" from the session that replayed the warm-up, "cold" from one that did not."""
    folder = tmp_path_factory.mktemp("served")
    asked = {name: (twins(name)[2], requests(name, twins(name)[0], wide=True)) for name in EXPORTS}
    (folder / "requests.pkl").write_bytes(pickle.dumps(asked))
    result = subprocess.run(
        [sys.executable, "-c", SERVER, str(folder / "requests.pkl"), str(folder / "answers.pkl")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    answers = pickle.loads((folder / "answers.pkl").read_bytes())
    return {name: (asked[name][1], answers[name]) for name in EXPORTS}


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPORTS)
def test_the_warmup_compiles_every_shape_and_a_server_without_xla_refuses_the_rest(
    twins, served_without_compiling, name
):
    """Compilation turned off, as in a model server started without --xla_cpu_compilation_enabled:

    - after the warm-up, every signature of every task answers batches of 1 to 7 rows and every bucket as
      the plain export does (span answers from windows in sub-batches of every bucket, ids and labels
      equal, numbers within float32 rounding), so the warm-up compiled every shape a request can reach;
    - without it, every request that runs the encoder is refused ("XLA compilation disabled": what the model
      server answers its warm-up, failing the version's load), so none of them ran uncompiled: each lies in
      a bucket;
    - except serve_token_ids ids wider than max_seq_length (past the last width bucket), which run the
      blocks uncompiled, as the plain export does, and answer alike in both sessions."""
    plain = twins(name)[0]
    asked, answers = served_without_compiling[name]
    for (signature, inputs), warm, cold in zip(asked, answers["warm"], answers["cold"], strict=True):
        where = f"{name}/{signature}/{len(next(iter(inputs.values())))} rows"
        assert not isinstance(warm, str), f"{where}: {warm}"
        assert_same_answers(plain.run(signature, inputs), warm, where)
        if signature == "preprocess":  # the tokenizer alone: nothing to compile
            continue
        if inputs is asked[-1][1]:  # the wide request
            assert not isinstance(cold, str), f"{where}: {cold}"
            assert_same_answers(plain.run(signature, inputs), cold, where)
        else:
            assert isinstance(cold, str) and "XLA compilation disabled" in cold, where


def test_each_block_is_compiled_once_and_called_by_every_layer(twins):
    """The graph holds the shared block as one compiled function (_XlaMustCompile) and one uncompiled one
    (shapes past the buckets), each with the attention's two batched products, both called from one
    function that pads to the buckets, which each layer of each signature's sub-batch loop calls."""
    _, compiled, path = twins("classifier")
    with open(os.path.join(path, "saved_model.pb"), "rb") as file:
        library = saved_model_pb2.SavedModel.FromString(file.read()).meta_graphs[0].graph_def.library.function
    blocks = {f.signature.name: f for f in library if sum(n.op == "BatchMatMulV2" for n in f.node_def) == 2}
    assert len(blocks) == 2, sorted(blocks)
    assert sorted(f.attr["_XlaMustCompile"].b for f in blocks.values()) == [False, True]
    callers = [
        f
        for f in library
        if {n.attr["f"].func.name for n in f.node_def if n.attr["f"].func.name} & set(blocks)
    ]
    assert len(callers) == 2  # the two branches of the bucketed function's cond
    calls = sum(
        node.attr["f"].func.name.startswith("__inference_bucketed") for f in library for node in f.node_def
    )
    layers = tiny_config().num_hidden_layers
    assert calls == layers * 3  # serving_default, classify and serve_token_ids


def test_jit_compile_is_refused_with_bfloat16(tmp_path):
    model = AlbertClassifier(AlbertEncoder(tiny_config(vocab_size=8000)), num_classes=2)
    with pytest.raises(ValueError, match="jit_compile is float32 only"):
        export.export_saved_model(model, SPM, tmp_path / "1", "classifier", 16, pair=False,
                                  precision="bfloat16", jit_compile=True)  # fmt: skip
    assert not list(tmp_path.iterdir())


def test_jit_compile_needs_sub_batches(tmp_path):
    model = AlbertClassifier(AlbertEncoder(tiny_config(vocab_size=8000)), num_classes=2)
    with pytest.raises(ValueError, match=r"sub_batch_size=0 \(the whole batch at once\) would compile"):
        export.export_saved_model(model, SPM, tmp_path / "1", "classifier", 16, pair=False, sub_batch_size=0,
                                  jit_compile=True)  # fmt: skip
    assert not list(tmp_path.iterdir())


OLDER = """
import pickle, sys
import numpy as np
import tensorflow as tf
from albert_tf.serving.servable import Servable
path, requests_file, out = sys.argv[1:]
def portable(values):  # what NumPy 1 and 2 both unpickle: a dtype's name and lists
    arrays = {name: np.asarray(value) for name, value in values.items()}
    dtypes = {name: "object" if a.dtype.kind in "OSU" else a.dtype.name for name, a in arrays.items()}
    return {name: (dtypes[name], a.tolist()) for name, a in arrays.items()}
with open(requests_file, "rb") as file:
    requests = [(signature, {name: np.array(value, dtype) for name, (dtype, value) in inputs.items()})
                for signature, inputs in pickle.load(file)]
with Servable(path) as servable:
    answers = [portable(servable.run(signature, inputs)) for signature, inputs in requests]
with open(out, "wb") as file:
    pickle.dump((tf.__version__, answers), file, protocol=4)
"""


def portable(values):
    """name → (dtype name, nested lists): what NumPy 1 (TensorFlow 2.12's) and 2 both unpickle."""
    arrays = {name: np.asarray(value) for name, value in values.items()}
    dtypes = {name: "object" if a.dtype.kind in "OSU" else a.dtype.name for name, a in arrays.items()}
    return {name: (dtypes[name], a.tolist()) for name, a in arrays.items()}


@pytest.mark.slow
def test_tensorflow_2_12s_loader_serves_a_compiled_export(twins, older_tensorflow, tmp_path):  # noqa: F811
    """TensorFlow 2.12's C++ loader (TF Serving 2.12's) compiles the blocks and answers as this one."""
    plain, _, path = twins("classifier")
    asked = requests("classifier", plain)
    (tmp_path / "requests.pkl").write_bytes(pickle.dumps([(s, portable(inputs)) for s, inputs in asked], 4))
    result = subprocess.run(
        [older_tensorflow, "-c", OLDER, path, str(tmp_path / "requests.pkl"), str(tmp_path / "out.pkl")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    version, answers = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert version == "2.12.1"
    for (signature, inputs), got in zip(asked, answers, strict=True):
        got = {name: np.array(value, dtype) for name, (dtype, value) in got.items()}
        assert_same_answers(plain.run(signature, inputs), got, signature)


@pytest.mark.slow
def test_the_command_line_exports_a_compiled_model_directory(tmp_path):
    """--jit_compile: the warm-up holds every bucket of --sub_batch_size and --max_seq_length and the
    answers are the model's; with --sub_batch_size=0 it is refused in one line."""
    keras.utils.set_random_seed(5)
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config(vocab_size=8000, max_position_embeddings=SEQ)))
    model_dir.save_model_dir(pretrainer, tmp_path / "model", spm_model=SPM)
    classifier = AlbertClassifier(pretrainer.encoder, num_classes=3, labels=LABELS)
    model_dir.save_task_model(classifier, tmp_path / "model")
    arguments = [f"--model_dir={tmp_path / 'model'}", "--task=classifier", f"--max_seq_length={SEQ}",
                 "--text_pair", "--jit_compile"]  # fmt: skip
    result = commands.run(
        "albert_tf.export_saved_model",
        [*arguments, f"--export_dir={tmp_path / 'served' / '1'}", "--sub_batch_size=3"],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    texts = TEXTS[:5]
    with Servable(tmp_path / "served" / "1") as servable:
        shapes = [
            inputs["input_mask"].shape
            for name, inputs in servable.warmup_requests()
            if name == "serve_token_ids"
        ]
        got = servable.run("serving_default", {"text": texts, "text_b": texts[::-1]})
    assert shapes == [(rows, width) for rows in (1, 2, 3) for width in (16, 20)]
    np.testing.assert_allclose(got["logits"], classifier(served_ids(texts, texts[::-1], SEQ)), atol=1e-5)
    refused = commands.run(
        "albert_tf.export_saved_model",
        [*arguments, f"--export_dir={tmp_path / 'whole' / '1'}", "--sub_batch_size=0"],
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith("export_saved_model: error: jit_compile pads")
    assert not (tmp_path / "whole").exists()
