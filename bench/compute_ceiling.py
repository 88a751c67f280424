r"""How near the encoder's forward pass runs to this CPU's float32 limit: what equal padding leaves to win.

    pip install -e ".[bench]" && python bench/compute_ceiling.py     # ALBERT-base, 32 x 128, a few minutes

At equal padding our export and keras-hub's compute the same products, so the "like for like" ratios of
bench/serving.py are bounded by how far keras-hub's forward pass runs below what this CPU's float32 matrix
products reach. In one process, in alternating rounds, each forward at batch 32 x 128 tokens with random
weights:

    matmul           the blocks' float32 products alone, [4096, K] x [K, N] for the attention's (768 x 768)
                     and the feed-forward's two (768 x 3072, 3072 x 768), each as a plain graph and under
                     XLA: the fastest is the rate this CPU's cores reach in practice (the ceiling)
    keras_hub        keras-hub's ALBERT-base backbone (its export's graph: a plain tf.function)
    ours             our encoder, the whole batch as one plain graph (the plain export at 128)
    ours compiled    our encoder with its blocks XLA-compiled at 8 rows x 128 (compiled_blocks.py, what the
                     compiled export runs: sub-batches of 8)

Rates count the transformer blocks' flops only: per token and layer 2 (4 H^2 + 2 H F) for the dense
products and 4 T H for attention (H 768, F 3072, T 128: 14.5 MFLOP, 174.6 MFLOP per token over 12 layers);
embeddings, pooler and softmax add under 1%. The last line says what 1.25x keras-hub's rate (the compiled
export's goal at equal padding, bench/README.md) would need, against the ceiling.
"""

import argparse
import statistics
import time

from machine import describe  # bench/ is on sys.path: scripts run as python bench/NAME.py

from albert_tf import shipped  # before TensorFlow is imported: albert_tf's CPU defaults apply

BATCH, SEQ, SUB_BATCH = 32, 128, 8
GOAL = 1.25  # the compiled export's goal against keras-hub at equal padding


def block_flops(config):
    """Flops of one forward pass of the encoder's blocks over BATCH x SEQ tokens."""
    h, f = config.hidden_size, config.intermediate_size
    per_token = 2 * (4 * h * h + 2 * h * f) + 4 * SEQ * h
    return BATCH * SEQ * config.num_hidden_layers * per_token


def waited(function, *args):
    """A function of no arguments: function(*args), its result copied out (so the run has ended)."""
    return lambda: function(*args).numpy()


def runners():
    """name → (a function of no arguments that runs one forward pass and waits for it, its flops)."""
    import keras
    import keras_hub
    import numpy as np
    import tensorflow as tf

    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder
    from albert_tf.serving import compiled_blocks

    config = AlbertConfig.from_json_file(shipped.config_file("albert_base"))
    flops = block_flops(config)
    rng = np.random.default_rng(0)
    ids = tf.constant(rng.integers(5, config.vocab_size, (BATCH, SEQ)), tf.int32)
    ones, zeros = tf.ones_like(ids), tf.zeros_like(ids)

    h, f, tokens = config.hidden_size, config.intermediate_size, BATCH * SEQ
    products = {}  # the block's three product shapes, each as a plain graph and under XLA
    # Two Python functions, so that neither traces its three shapes often enough for TensorFlow's warning.
    plain_product = tf.function(lambda x, y: tf.matmul(x, y))
    xla_product = tf.function(lambda x, y: tf.matmul(x, y), jit_compile=True)
    for name, (k, n) in {"h": (h, h), "h->f": (h, f), "f->h": (f, h)}.items():
        a = tf.constant(rng.standard_normal((tokens, k)), tf.float32)
        b = tf.constant(rng.standard_normal((k, n)), tf.float32)
        for suffix, product in (("", plain_product), (" xla", xla_product)):
            products[f"matmul {name}{suffix}"] = (waited(product, a, b), 2 * tokens * k * n)

    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, embedding_dim=config.embedding_size,
        hidden_dim=config.hidden_size, intermediate_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
    )  # fmt: skip
    peer_inputs = {"token_ids": ids, "padding_mask": ones, "segment_ids": zeros}
    peer = tf.function(lambda: backbone(peer_inputs, training=False)["sequence_output"])

    inputs = {"input_word_ids": ids, "input_mask": ones, "input_type_ids": zeros}
    plain_encoder = AlbertEncoder(config)
    plain = tf.function(lambda: plain_encoder(inputs, training=False)["sequence_output"])
    compiled_encoder = AlbertEncoder(config)
    compiled_encoder(inputs)  # built, then its blocks compiled at the export's largest sub-batch bucket
    compiled_blocks.compile_blocks(compiled_encoder.blocks, config.hidden_size, [SUB_BATCH], [SEQ])

    @tf.function
    def compiled():
        parts = [
            compiled_encoder({k: v[i : i + SUB_BATCH] for k, v in inputs.items()}, training=False)[
                "sequence_output"
            ]
            for i in range(0, BATCH, SUB_BATCH)
        ]
        return tf.concat(parts, 0)

    return {
        **products,
        "keras_hub": (waited(peer), flops),
        "ours": (waited(plain), flops),
        "ours compiled": (waited(compiled), flops),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds; each row's median")
    args = parser.parse_args()
    print(f"CPU: {describe()}")
    runs = runners()
    for run, _ in runs.values():  # tracing, compiling, first allocations
        run()
    seconds = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (run, _) in runs.items():
            repeats = 10 if name.startswith("matmul") else 1  # a product alone is ~0.05 s
            started = time.perf_counter()
            for _ in range(repeats):
                run()
            seconds[name].append((time.perf_counter() - started) / repeats)
    rates = {name: runs[name][1] / statistics.median(times) / 1e9 for name, times in seconds.items()}
    ceiling = max(rate for name, rate in rates.items() if name.startswith("matmul"))
    print(f"\nALBERT-base forward, batch {BATCH} x {SEQ} tokens, float32, median of {args.rounds} rounds")
    print(f"{'row':<16}{'s':>9}{'GFLOP/s':>10}{'of ceiling':>12}")
    for name, times in seconds.items():
        share = rates[name] / ceiling
        print(f"{name:<16}{statistics.median(times):>9.4f}{rates[name]:>10.1f}{share:>11.0%}")
    needed = GOAL * rates["keras_hub"]
    print(f"\nours / keras_hub                  {rates['ours'] / rates['keras_hub']:.2f}x")
    print(f"ours compiled / keras_hub         {rates['ours compiled'] / rates['keras_hub']:.2f}x")
    print(f"ours compiled / ours              {rates['ours compiled'] / rates['ours']:.2f}x")
    print(f"{GOAL}x keras_hub needs             {needed:.1f} GFLOP/s, {needed / ceiling:.0%} of the ceiling")


if __name__ == "__main__":
    main()
