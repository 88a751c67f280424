r"""Raw text → model inputs in TensorFlow ops: our in-graph tokenizer against keras-hub's preprocessor.

    pip install -e ".[bench]"
    python bench/preprocessing.py             # 5 rounds
    python bench/preprocessing.py --rounds=1  # a quick look

Both turn sentence pairs of the sample corpus into `[CLS] A [SEP] B [SEP]` rows of 128 ids with the sample
SentencePiece model (albert_tf/sample/spm_8k.model): ours is `InGraphTokenizer.tokenize` then
`pack(seq_length=128)` (the original's normalization and digit-comma rule first, as exported models and
fine-tuning run it), and the same with `keep_accents` (no NFKD, marks kept);
keras-hub's is `AlbertTextClassifierPreprocessor(sequence_length=128)` (SentencePiece and its
`MultiSegmentPacker`). Measured, alternating the two each round:

- graph ops: operations in the traced pair function, nested functions included. Tracing, tf.data's start
  and the optimizer a model server runs when it loads a SavedModel all grow with it.
- trace s: tracing the function (`get_concrete_function`).
- tf.data start s: `dataset.map(f)` and its first batch of 32, as `run_classifier` starts each dataset.
- batch 1 µs: median time of one pair through the traced function (after a warm-up call).
- batch 32 texts/s: pairs per second in batches of 32.

Every round builds new functions and datasets, so tracing and start are measured anew, but the first round
also pays for what a process does once (autograph's first conversions, keras-hub's imports): the table
shows the median of the rounds and, separately, the first round's trace and start.
"""

import argparse
import statistics
import time

# bench/ is on sys.path (scripts run as python bench/NAME.py). serving imports albert_tf before anything
# imports TensorFlow, so albert_tf's CPU defaults apply; it gives the serving benchmark's texts and model.
from machine import describe
from serving import SEQ, SPM, sample_pairs


def ours(keep_accents=False):
    """A fresh pair function of ours: (text, text_b) tf.string [batch] → dict of int32 [batch, 128]."""
    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    tokenizer = InGraphTokenizer(SPM, keep_accents=keep_accents)
    return lambda a, b: tokenizer.pack(tokenizer.tokenize(a), tokenizer.tokenize(b), seq_length=SEQ)


def ours_keeping_accents():
    """ours() with keep_accents: no NFKD, no removal of marks."""
    return ours(keep_accents=True)


def keras_hub():
    """A fresh keras-hub pair function: (text, text_b) → its preprocessor's dict of [batch, 128]."""
    import keras_hub

    preprocessor = keras_hub.models.AlbertTextClassifierPreprocessor(
        keras_hub.models.AlbertTokenizer(proto=SPM), sequence_length=SEQ
    )
    return lambda a, b: preprocessor(x=(a, b))


def count_ops(graph):
    """Operations of a graph and of every function in its library."""
    count = len(graph.get_operations())
    library = graph.as_graph_def().library
    return count + sum(len(function.node_def) for function in library.function)


def measure(make, texts_a, texts_b, batch1_calls):
    import tensorflow as tf

    spec = tf.TensorSpec([None], tf.string)
    start = time.perf_counter()
    function = tf.function(make()).get_concrete_function(spec, spec)
    trace = time.perf_counter() - start

    start = time.perf_counter()
    dataset = tf.data.Dataset.from_tensor_slices((texts_a, texts_b)).batch(32).map(make())
    next(iter(dataset))
    data_start = time.perf_counter() - start

    one_a, one_b = tf.constant(texts_a[:1]), tf.constant(texts_b[:1])
    function(one_a, one_b)  # the first call instantiates the kernels
    times = []
    for index in range(batch1_calls):
        a, b = tf.constant(texts_a[index : index + 1]), tf.constant(texts_b[index : index + 1])
        start = time.perf_counter()
        function(a, b)
        times.append(time.perf_counter() - start)
    batches = [
        (tf.constant(texts_a[i : i + 32]), tf.constant(texts_b[i : i + 32])) for i in range(0, 1024, 32)
    ]
    start = time.perf_counter()
    for a, b in batches:
        function(a, b)
    throughput = 32 * len(batches) / (time.perf_counter() - start)
    return {
        "graph ops": count_ops(function.graph),
        "trace s": trace,
        "tf.data start s": data_start,
        "batch 1 µs": 1e6 * statistics.median(times),
        "batch 32 texts/s": throughput,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch1_calls", type=int, default=200)
    args = parser.parse_args()

    import tensorflow as tf

    print(describe())
    print(f"TensorFlow {tf.__version__}")
    texts_a, texts_b = sample_pairs(1024)
    makers = {"albert_tf": ours, "albert_tf keep_accents": ours_keeping_accents, "keras_hub": keras_hub}
    rounds = {name: [] for name in makers}
    for index in range(args.rounds):
        for name, make in makers.items():
            rounds[name].append(measure(make, texts_a, texts_b, args.batch1_calls))
            print(
                f"round {index + 1} {name}: " + ", ".join(f"{k} {v:.4g}" for k, v in rounds[name][-1].items())
            )

    keys = list(rounds["albert_tf"][0])
    print(f"\n| | {' | '.join(keys)} | first round: trace s, tf.data start s |")
    print("|---" * (len(keys) + 2) + "|")
    medians = {}
    for name, results in rounds.items():
        medians[name] = {key: statistics.median(result[key] for result in results) for key in keys}
        first = results[0]
        cells = " | ".join(f"{medians[name][key]:.4g}" for key in keys)
        print(f"| {name} | {cells} | {first['trace s']:.3g}, {first['tf.data start s']:.3g} |")
    for name, peer in (("albert_tf", "keras_hub"), ("albert_tf keep_accents", "keras_hub"),
                       ("albert_tf keep_accents", "albert_tf")):  # fmt: skip
        ratio = {key: medians[name][key] / medians[peer][key] for key in keys}
        print(f"| {name} / {peer} | " + " | ".join(f"{ratio[key]:.2f}x" for key in keys) + " | |")


if __name__ == "__main__":
    main()
