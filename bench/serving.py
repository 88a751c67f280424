r"""Raw-text inference through exported models: albert_tf's SavedModel (float32 and bfloat16) against
keras-hub's `AlbertTextClassifier` exported with its preprocessor (float32 and bfloat16), and Hugging Face's
tokenizer + PyTorch `AlbertForSequenceClassification`, in one run.

    pip install -e ".[bench]" && pip install torch transformers
    python bench/serving.py                 # ALBERT-base shapes, seq 128, 2 classes
    python bench/serving.py --iterations=3  # a quick look
    python bench/serving.py --peers=keras_hub --jit_compile   # compiled exports beside plain and keras-hub

All get the same ALBERT-base architecture (random weights: speed does not depend on them), the sample
SentencePiece model (albert_tf/sample/spm_8k.model), sentence pairs from the sample corpus, sequence length
128, on the CPU. Measured: batch-32 throughput (texts/s) and batch-1 latency (p50, and p99 of at least 100
requests), text in, probabilities out, tokenization included. bfloat16 rows: our export with
`precision="bfloat16"` (albert_tf/models/precision.py) and keras-hub's models built with dtype="bfloat16"; the
CPU line says whether the machine computes bfloat16 natively (avx512_bf16, amx_bf16) or emulates it.

Where our speed comes from: the headline rows pad less (sub-batches sorted by length), the "equal padding"
rows compute what keras-hub computes (every text at 128 positions: our export's in-graph `preprocess`, then
`serve_token_ids` on ids padded to 128 with every position attended, whole batches), so their ratio to
keras-hub is compute alone. The same rows run on "long" texts too (pairs of several corpus lines, nearly all
truncated at 128 tokens), where padding less has nothing to win.

Ours and keras-hub's run as SavedModels, loaded in this process by TensorFlow's C++ loader through the C API
(albert_tf.serving.servable: restore op, init op, Session::Run by tensor names; what TF Serving runs, and what
the targets are measured on), and the float32 ones also by tf.saved_model.load. Texts are truncated to 128
tokens by all; keras-hub's preprocessor pads every batch to 128, our export runs a batch sorted by length in
sub-batches of 8 (the export's default), each padded to its own longest text (`--sub_batch_size`; 0: the whole
batch padded to its longest), and PyTorch runs both ways (`pytorch`: padded to 128, as Hugging Face's examples
do; `pytorch_longest`: padding="longest").

`--jit_compile` adds our exports with `jit_compile=True` (the encoder's blocks compiled by XLA at shape
buckets: albert_tf/serving/compiled_blocks.py; float32 only): "compiled" (its sub-batches padded to
buckets) and "compiled at 128" (the same export fed ids padded to 128: its sub-batches of 128 tokens compute
what keras-hub computes). Every row says how long its version took to load: the C++ loader, then the
version's warm-up requests replayed as the model server does (a compiled export compiles its buckets there).
"""

import argparse
import concurrent.futures
import importlib.util
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

from albert_tf import shipped  # first: albert_tf's CPU defaults apply before TensorFlow is imported

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")
# Each peer's modules: keras-hub comes with the `bench` extra, PyTorch and transformers do not.
PEER_MODULES = {"keras_hub": ("keras_hub",), "pytorch": ("torch", "transformers")}
SEQ = 128
LATENCY_REQUESTS = 100  # batch-1 requests timed per row: p99 is the 99th of 100


def sample_pairs(count):
    lines = []
    with open(os.path.join(ROOT, "data", "sample", "sample_corpus.txt"), encoding="utf-8") as file:
        for line in file:
            if line.strip():
                lines.append(line.strip())
            if len(lines) >= 2 * count:
                break
    return lines[0::2], lines[1::2]


def base_config():
    from albert_tf.config import AlbertConfig

    return AlbertConfig.from_json_file(shipped.config_file("albert_base"))


def long_pairs(count):
    """Pairs of texts of 4 corpus lines each: nearly every pair is truncated at SEQ tokens."""
    a, b = sample_pairs(4 * count)
    return [" ".join(a[4 * i : 4 * i + 4]) for i in range(count)], [
        " ".join(b[4 * i : 4 * i + 4]) for i in range(count)
    ]


def ours(folder, sub_batch_size, precision="float32", name="ours", jit_compile=False):
    """albert_tf's export: (its path, the serving signature's name and inputs for a batch of pairs)."""
    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.serving.export import export_saved_model

    model = AlbertClassifier(AlbertEncoder(base_config()), num_classes=2)
    sizing = {} if sub_batch_size is None else {"sub_batch_size": sub_batch_size}
    path = os.path.join(folder, name, "1")
    path = export_saved_model(
        model, SPM, path, "classifier", SEQ, pair=True, precision=precision, jit_compile=jit_compile, **sizing
    )
    return path, "serving_default", lambda a, b: {"text": a, "text_b": b}, "probabilities"


def at_full_length(path, *_):
    """Our export computing what keras-hub's does: the in-graph `preprocess` (the same tokenization as
    serving_default), then `serve_token_ids` on ids padded to SEQ with every position attended (pad ids are
    not [CLS], so none is taken for server padding): the whole batch at once (sub_batch_size=0), or a
    compiled export's sub-batches of SEQ tokens each (the same tokens)."""
    import numpy as np

    servable = loaded(path)

    def run(a, b):
        ids = servable.run("preprocess", {"text": a, "text_b": b})
        ids = {k: np.pad(v, [(0, 0), (0, SEQ - v.shape[1])]) for k, v in ids.items()}
        ids["input_mask"] = np.ones_like(ids["input_mask"])
        return servable.run("serve_token_ids", ids)["probabilities"]

    return run


def loaded(path):
    """A version loaded as TF Serving loads it: TensorFlow's C++ loader, then its warm-up requests replayed
    (a compiled export's compile every bucket there); keras-hub's export has none."""
    from albert_tf.serving.servable import Servable

    servable = Servable(path)
    if os.path.exists(os.path.join(path, "assets.extra", "tf_serving_warmup_requests")):
        servable.replay_warmup()
    return servable


def through_cpp_loader(path, signature, inputs, output):
    """The export run as TF Serving runs it: TensorFlow's C++ loader, Session::Run by tensor names."""
    servable = loaded(path)
    return lambda a, b: servable.run(signature, inputs(a, b))[output]


def through_python_loader(path, signature, inputs, output):
    """The export as tf.saved_model.load rebuilds it in Python (not what the model server runs)."""
    import tensorflow as tf

    function = tf.saved_model.load(path).signatures[signature]
    return lambda a, b: function(**{k: tf.constant(v) for k, v in inputs(a, b).items()})[output].numpy()


def keras_hub_parts(dtype=None):
    """keras-hub's ALBERT-base backbone and its text-classifier preprocessor (seq 128, the sample model)."""
    import keras_hub

    c = base_config()
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=c.vocab_size, num_layers=c.num_hidden_layers, num_heads=c.num_attention_heads,
        embedding_dim=c.embedding_size, hidden_dim=c.hidden_size, intermediate_dim=c.intermediate_size,
        max_sequence_length=c.max_position_embeddings, dtype=dtype,
    )  # fmt: skip
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=SPM), sequence_length=SEQ
    )
    return backbone, preprocessor


def keras_hub_peer(folder, dtype=None, name="keras_hub"):
    """keras-hub's classifier and preprocessor in one ExportArchive: (path, signature, inputs, output)."""
    import keras
    import keras_hub
    import tensorflow as tf

    backbone, preprocessor = keras_hub_parts(dtype)
    classifier = keras_hub.models.AlbertTextClassifier(
        backbone, num_classes=2, preprocessor=None, dtype=dtype
    )
    classifier(preprocessor(x=(tf.constant(["a"]), tf.constant(["b"]))))  # builds both before export
    archive = keras.export.ExportArchive()
    archive.track(classifier)
    archive.track(preprocessor)

    def serve(text, text_b):
        logits = classifier(preprocessor(x=(text, text_b)), training=False)
        return keras.ops.cast(keras.ops.softmax(logits), "float32")  # float32 answers, as ours

    archive.add_endpoint(
        "serve", serve, input_signature=[tf.TensorSpec([None], tf.string, name=n) for n in ("text", "text_b")]
    )
    path = os.path.join(folder, name, "1")
    archive.write_out(path, verbose=False)
    return path, "serve", lambda a, b: {"text": a, "text_b": b}, "output_0"


def pytorch_peer(padding="max_length"):
    # transformers' SentencePiece conversion parses the model's protobuf with generated code that the
    # protobuf runtime TensorFlow brings rejects; the pure-Python protobuf runtime reads it.
    os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
    import torch
    import transformers

    torch.set_num_threads(os.cpu_count())
    c = base_config()
    config = transformers.AlbertConfig(
        **{k: getattr(c, k) for k in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                                      "num_attention_heads", "intermediate_size", "max_position_embeddings")},
        hidden_act="gelu_new", num_labels=2,
    )  # fmt: skip
    model = transformers.AlbertForSequenceClassification(config).eval()
    tokenizer = transformers.AlbertTokenizer(vocab_file=SPM)

    def run(a, b):
        inputs = tokenizer(a, b, padding=padding, truncation=True, max_length=SEQ, return_tensors="pt")
        with torch.inference_mode():
            return torch.softmax(model(**inputs).logits, -1).numpy()

    return run


def measure_pytorch(padding, pairs, iterations):
    """measure() of pytorch_peer(padding), run in a spawned process that never imports TensorFlow: torch 2.15
    and TensorFlow 2.21 each bring LLVM, and loading both in one process aborts ("Option
    'bitcode-mdindex-threshold' registered more than once")."""
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_measure_pytorch, padding, pairs, iterations).result()


def _measure_pytorch(padding, pairs, iterations):
    return measure(pytorch_peer(padding), pairs, iterations)


def measure(run, pairs, iterations, latency=True, latency_requests=LATENCY_REQUESTS):
    """(texts/s at batch 32, p50 ms and p99 ms at batch 1 over latency_requests requests); latency=False:
    throughput only (p50 and p99 None)."""
    a, b = pairs
    run(a[:32], b[:32])
    run(a[:1], b[:1])  # warm-up: tracing, first-call allocations
    started = time.perf_counter()
    for i in range(iterations):
        run(a[32 * i : 32 * (i + 1)], b[32 * i : 32 * (i + 1)])
    throughput = 32 * iterations / (time.perf_counter() - started)
    if not latency:
        return throughput, None, None
    latencies = []
    for i in range(latency_requests):
        started = time.perf_counter()
        run(a[i : i + 1], b[i : i + 1])
        latencies.append(1000 * (time.perf_counter() - started))
    latencies.sort()
    return (
        throughput,
        statistics.median(latencies),
        latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    )


def ratio_line(results, label, numerator, denominator, target=""):
    if numerator in results and denominator in results:
        index = 0 if "throughput" in label else 1
        value = results[numerator][index] / results[denominator][index]
        print(f"{label:<58}{value:>6.2f}x{target}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=8, help="Batches of 32 timed.")
    parser.add_argument("--peers", default="keras_hub,pytorch", help="Comma-separated: keras_hub, pytorch.")
    parser.add_argument(
        "--sub_batch_size", type=int, help="Our export's rows per sub-batch (default: the export's; 0: none)."
    )
    parser.add_argument(
        "--jit_compile", action="store_true",
        help="Also our compiled exports (export_saved_model(..., jit_compile=True)), as is and at 128.",
    )  # fmt: skip
    parser.add_argument(
        "--precisions", default="float32,bfloat16", help="Comma-separated: float32, bfloat16."
    )
    parser.add_argument(
        "--latency_requests", type=int, default=LATENCY_REQUESTS, help="Batch-1 requests timed per row."
    )
    args = parser.parse_args()
    peers = [peer for peer in args.peers.split(",") if peer]
    precisions = [precision for precision in args.precisions.split(",") if precision]
    for peer in peers:  # before minutes of measuring ours, not after
        if peer not in PEER_MODULES:
            parser.error(f"--peers={args.peers}: no peer {peer!r} (peers: {', '.join(PEER_MODULES)})")
        missing = [module for module in PEER_MODULES[peer] if importlib.util.find_spec(module) is None]
        if missing:
            others = ",".join(other for other in peers if other != peer) or '""'
            parser.error(
                f"--peers={args.peers}: {peer} needs {' and '.join(missing)} (pip install "
                f"{' '.join(missing).replace('_', '-')}), or measure without it: --peers={others}"
            )
    if not precisions or set(precisions) - {"float32", "bfloat16"}:
        parser.error(f"--precisions={args.precisions}: give float32, bfloat16 or both")
    if args.jit_compile and "float32" not in precisions:
        parser.error(
            "--jit_compile measures float32 exports (compiled exports are float32 only): add float32"
        )
    if args.jit_compile and args.sub_batch_size == 0:
        parser.error(
            "--jit_compile pads sub-batches to buckets: give --sub_batch_size >= 1 (or leave it out)"
        )
    pairs = sample_pairs(32 * args.iterations + args.latency_requests)
    long = long_pairs(32 * args.iterations + 32)
    print(f"CPU: {describe()}", flush=True)
    results, loads = {}, {}
    with tempfile.TemporaryDirectory() as folder:
        # name: (export, how it is run, whether latency is timed, whether the long texts run too)
        rows = {}
        for precision in precisions:
            tag = "" if precision == "float32" else "_bf16"
            rows[f"albert_tf {precision}"] = (
                ours(folder, args.sub_batch_size, precision, f"ours{tag}"), through_cpp_loader, True, True
            )  # fmt: skip
        if "float32" in precisions:
            rows["albert_tf float32 tf.saved_model"] = (
                ours(folder, args.sub_batch_size, name="ours_python"), through_python_loader, True, False
            )  # fmt: skip
        for precision in precisions:
            tag = "" if precision == "float32" else "_bf16"
            rows[f"albert_tf {precision} at 128"] = (
                ours(folder, 0, precision, f"ours{tag}_128"), at_full_length, True, True
            )  # fmt: skip
        if args.jit_compile:  # compiled exports are float32 only
            compiled = ours(folder, args.sub_batch_size, name="ours_compiled", jit_compile=True)
            rows["albert_tf float32 compiled"] = (compiled, through_cpp_loader, True, True)
            # The same export fed ids padded to 128: sub-batches of 128 tokens, as many as keras-hub computes.
            rows["albert_tf float32 compiled at 128"] = (compiled, at_full_length, True, True)
        if "keras_hub" in peers:
            if "float32" in precisions:
                rows["keras_hub float32"] = (keras_hub_peer(folder), through_cpp_loader, True, True)
            if "bfloat16" in precisions:
                rows["keras_hub bfloat16"] = (
                    keras_hub_peer(folder, "bfloat16", "keras_hub_bf16"), through_cpp_loader, True, True
                )  # fmt: skip
            if "float32" in precisions:
                rows["keras_hub float32 tf.saved_model"] = (
                    keras_hub_peer(folder, name="keras_hub_python"), through_python_loader, True, False
                )  # fmt: skip
        for name, (export, load, latency, with_long) in rows.items():
            started = time.perf_counter()
            run = load(*export)
            loads[name] = time.perf_counter() - started
            results[name] = measure(run, pairs, args.iterations, latency, args.latency_requests)
            if with_long:
                results[f"{name} long"] = measure(run, long, args.iterations, latency=False)
            print(f"measured {name}", flush=True)
    if "pytorch" in peers:
        results["pytorch"] = measure_pytorch("max_length", pairs, args.iterations)
        results["pytorch_longest"] = measure_pytorch("longest", pairs, args.iterations)
    print(f"\nALBERT-base classifier, raw text pairs, seq {SEQ}, CPU: {describe()}")
    print("C++ loader unless the row says tf.saved_model; 'at 128': ours padded as keras-hub pads (compute")
    print(
        "alone); 'long': pairs of 4 corpus lines, nearly all truncated at 128 (throughput only); 'compiled':"
    )
    print(
        "jit_compile=True; load s: loading the version and replaying its warm-up requests (compiling there)"
    )
    print(f"{'row':<40}{'batch-32 texts/s':>18}{'batch-1 p50 ms':>16}{'p99 ms':>10}{'load s':>9}")
    for name, (rate, p50, p99) in results.items():
        latency = f"{p50:>16.1f}{p99:>10.1f}" if p50 is not None else f"{'':>16}{'':>10}"
        load = f"{loads[name]:>9.1f}" if name in loads else ""
        print(f"{name:<40}{rate:>18.1f}{latency}{load}")
    print("\nRatios (through the C++ loader, what TF Serving runs):")
    tf32, bf16, hub32, hub16 = (
        "albert_tf float32",
        "albert_tf bfloat16",
        "keras_hub float32",
        "keras_hub bfloat16",
    )
    ratio_line(results, "bfloat16 / float32 throughput", bf16, tf32, " (target 1.4x AVX512_BF16, 1.8x AMX)")
    ratio_line(results, "bfloat16 / float32 p50 latency", bf16, tf32, " (target 1.0x or less)")
    ratio_line(results, "bfloat16 / float32 throughput, equal padding", f"{bf16} at 128", f"{tf32} at 128")
    ratio_line(results, "bfloat16 / float32 throughput, long texts", f"{bf16} long", f"{tf32} long")
    ratio_line(results, "float32 vs keras_hub float32 throughput", tf32, hub32, " (target 1.3x)")
    ratio_line(results, "float32 vs keras_hub float32 p50 latency", tf32, hub32, " (target 0.8x or less)")
    ratio_line(results, "  like for like: equal padding, throughput", f"{tf32} at 128", hub32)
    ratio_line(results, "  like for like: equal padding, p50 latency", f"{tf32} at 128", hub32)
    ratio_line(results, "  long texts, throughput", f"{tf32} long", f"{hub32} long")
    ratio_line(results, "bfloat16 vs keras_hub bfloat16 throughput", bf16, hub16, " (target 1.3x)")
    ratio_line(results, "bfloat16 vs keras_hub bfloat16 p50 latency", bf16, hub16)
    ratio_line(results, "  like for like: equal padding, throughput", f"{bf16} at 128", hub16)
    ratio_line(results, "  like for like: equal padding, p50 latency", f"{bf16} at 128", hub16)
    ratio_line(results, "  long texts, throughput", f"{bf16} long", f"{hub16} long")
    compiled = f"{tf32} compiled"
    ratio_line(results, "float32 compiled / plain throughput", compiled, tf32)
    ratio_line(results, "float32 compiled / plain p50 latency", compiled, tf32, " (target 1.0x or less)")
    ratio_line(results, "float32 compiled / plain throughput, long texts", f"{compiled} long", f"{tf32} long")
    ratio_line(results, "float32 compiled vs keras_hub float32 throughput", compiled, hub32)
    ratio_line(
        results, "  like for like: equal padding, throughput", f"{compiled} at 128", hub32, " (target 1.25x)"
    )
    ratio_line(results, "  like for like: equal padding, p50 latency", f"{compiled} at 128", hub32)
    ratio_line(results, "  long texts, throughput", f"{compiled} long", f"{hub32} long")
    ratio_line(results, "float32 vs pytorch (padded to 128) throughput", tf32, "pytorch", " (target 1.2x)")
    ratio_line(results, "float32 vs pytorch_longest throughput (like for like)", tf32, "pytorch_longest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
