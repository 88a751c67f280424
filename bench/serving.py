r"""Raw-text inference through exported models: albert_tf's SavedModel against keras-hub's
`AlbertTextClassifier` exported with its preprocessor, and Hugging Face's tokenizer + PyTorch
`AlbertForSequenceClassification`, in one run.

    pip install -e ".[bench]" && pip install torch transformers
    python bench/serving.py                 # ALBERT-base shapes, seq 128, 2 classes
    python bench/serving.py --iterations=3  # a quick look

All three get the same ALBERT-base architecture (random weights: speed does not depend on them), the sample
SentencePiece model (data/sample/spm_8k.model), sentence pairs from the sample corpus, sequence length 128,
float32 on the CPU. Measured: batch-32 throughput (texts/s) and batch-1 latency (p50, p99), text in,
probabilities out, tokenization included. Ours and keras-hub's run as SavedModels, each loaded two ways in
this process: by TensorFlow's C++ loader through the C API (albert_tf.serving.servable: restore op, init op,
Session::Run by tensor names; what TF Serving runs, and what the targets are measured on) and by
tf.saved_model.load.
Texts are truncated to 128 tokens by all; keras-hub's preprocessor pads every batch to 128, our export runs a
batch sorted by length in sub-batches of 8 (the export's default), each padded to its own longest text
(`--sub_batch_size`; 0: the whole batch padded to its longest), and PyTorch runs both ways (`pytorch`: padded
to 128, as Hugging Face's examples do; `pytorch_longest`: padding="longest").
"""

import argparse
import concurrent.futures
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

import albert_tf  # noqa: F401  (first: albert_tf's CPU defaults apply before TensorFlow is imported)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPM = os.path.join(ROOT, "data", "sample", "spm_8k.model")
SEQ = 128


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

    return AlbertConfig.from_json_file(os.path.join(ROOT, "configs", "albert_base.json"))


def ours(folder, sub_batch_size):
    """albert_tf's export: (its path, the serving signature's name and inputs for a batch of pairs)."""
    from albert_tf.models import AlbertClassifier, AlbertEncoder
    from albert_tf.serving.export import export_saved_model

    model = AlbertClassifier(AlbertEncoder(base_config()), num_classes=2)
    sizing = {} if sub_batch_size is None else {"sub_batch_size": sub_batch_size}
    path = os.path.join(folder, "ours", "1")
    path = export_saved_model(model, SPM, path, "classifier", SEQ, pair=True, **sizing)
    return path, "serving_default", lambda a, b: {"text": a, "text_b": b}, "probabilities"


def through_cpp_loader(path, signature, inputs, output):
    """The export run as TF Serving runs it: TensorFlow's C++ loader, Session::Run by tensor names."""
    from albert_tf.serving.servable import Servable

    servable = Servable(path)
    return lambda a, b: servable.run(signature, inputs(a, b))[output]


def through_python_loader(path, signature, inputs, output):
    """The export as tf.saved_model.load rebuilds it in Python (not what the model server runs)."""
    import tensorflow as tf

    function = tf.saved_model.load(path).signatures[signature]
    return lambda a, b: function(**{k: tf.constant(v) for k, v in inputs(a, b).items()})[output].numpy()


def keras_hub_parts():
    """keras-hub's ALBERT-base backbone and its text-classifier preprocessor (seq 128, the sample model)."""
    import keras_hub

    c = base_config()
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=c.vocab_size, num_layers=c.num_hidden_layers, num_heads=c.num_attention_heads,
        embedding_dim=c.embedding_size, hidden_dim=c.hidden_size, intermediate_dim=c.intermediate_size,
        max_sequence_length=c.max_position_embeddings,
    )  # fmt: skip
    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=SPM), sequence_length=SEQ
    )
    return backbone, preprocessor


def keras_hub_peer(folder):
    """keras-hub's classifier and preprocessor in one ExportArchive: (path, signature, inputs, output)."""
    import keras
    import keras_hub
    import tensorflow as tf

    backbone, preprocessor = keras_hub_parts()
    classifier = keras_hub.models.AlbertTextClassifier(backbone, num_classes=2, preprocessor=None)
    classifier(preprocessor(x=(tf.constant(["a"]), tf.constant(["b"]))))  # builds both before export
    archive = keras.export.ExportArchive()
    archive.track(classifier)
    archive.track(preprocessor)

    def serve(text, text_b):
        logits = classifier(preprocessor(x=(text, text_b)), training=False)
        return keras.ops.softmax(logits)

    archive.add_endpoint(
        "serve", serve, input_signature=[tf.TensorSpec([None], tf.string, name=n) for n in ("text", "text_b")]
    )
    path = os.path.join(folder, "keras_hub", "1")
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


def measure(run, pairs, iterations):
    """(texts/s at batch 32, p50 ms at batch 1, p99 ms at batch 1)."""
    a, b = pairs
    run(a[:32], b[:32])
    run(a[:1], b[:1])  # warm-up: tracing, first-call allocations
    started = time.perf_counter()
    for i in range(iterations):
        run(a[32 * i : 32 * (i + 1)], b[32 * i : 32 * (i + 1)])
    throughput = 32 * iterations / (time.perf_counter() - started)
    latencies = []
    for i in range(max(20, 4 * iterations)):
        started = time.perf_counter()
        run(a[i : i + 1], b[i : i + 1])
        latencies.append(1000 * (time.perf_counter() - started))
    latencies.sort()
    return (
        throughput,
        statistics.median(latencies),
        latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=8, help="Batches of 32 timed.")
    parser.add_argument("--peers", default="keras_hub,pytorch", help="Comma-separated: keras_hub, pytorch.")
    parser.add_argument(
        "--sub_batch_size", type=int, help="Our export's rows per sub-batch (default: the export's; 0: none)."
    )
    args = parser.parse_args()
    peers = [peer for peer in args.peers.split(",") if peer]
    pairs = sample_pairs(32 * args.iterations + 40)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        exports = {"albert_tf": ours(folder, args.sub_batch_size)}
        if "keras_hub" in peers:
            exports["keras_hub"] = keras_hub_peer(folder)
        loaders = {"C++ loader": through_cpp_loader, "tf.saved_model": through_python_loader}
        for name, export in exports.items():
            for loader, load in loaders.items():
                results[f"{name} {loader}"] = measure(load(*export), pairs, args.iterations)
    if "pytorch" in peers:
        results["pytorch"] = measure_pytorch("max_length", pairs, args.iterations)
        results["pytorch_longest"] = measure_pytorch("longest", pairs, args.iterations)
    print(f"ALBERT-base classifier, raw text pairs, seq {SEQ}, float32, CPU ({os.cpu_count()} cores)")
    print(f"{'model':<26}{'batch-32 texts/s':>18}{'batch-1 p50 ms':>16}{'p99 ms':>10}")
    for name, (rate, p50, p99) in results.items():
        print(f"{name:<26}{rate:>18.1f}{p50:>16.1f}{p99:>10.1f}")
    ours_rate, ours_p50, _ = results["albert_tf C++ loader"]
    if "keras_hub C++ loader" in results:
        theirs_rate, theirs_p50, _ = results["keras_hub C++ loader"]
        print("Through the C++ loader (what TF Serving runs):")
        print(f"throughput vs keras_hub: {ours_rate / theirs_rate:.2f}x (target 1.3x)")
        print(f"p50 latency vs keras_hub: {ours_p50 / theirs_p50:.2f}x (target 0.8x or less)")
    if "pytorch" in results:
        print(f"throughput vs pytorch: {ours_rate / results['pytorch'][0]:.2f}x (target 1.2x)")
        best = max(results["pytorch"][0], results["pytorch_longest"][0])
        print(f"throughput vs pytorch's best padding: {ours_rate / best:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
