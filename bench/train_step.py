r"""MLM + SOP training-step throughput: albert_tf against keras-hub's AlbertBackbone, interleaved in one run.

    pip install -e ".[bench]"
    python bench/train_step.py                       # ALBERT-base shapes: seq 128, 20 predictions, batch 16
    python bench/train_step.py --rounds=2 --steps=1  # a quick look

Both models get the same shapes, float32, the same losses (masked-LM cross-entropy weighted by
`masked_lm_weights`, plus sentence-order cross-entropy) and the same optimizer (Adam), trained with
`train_on_batch` under `model.compile` settings. The peer is keras-hub's `AlbertBackbone` with its own
`MaskedLMHead` (as in `AlbertMaskedLM`) and a 2-way dense layer on the pooled output.

oneDNN is an import-time switch (TF_ENABLE_ONEDNN_OPTS), so every configuration runs in its own worker
process; the parent starts them all, then times one round of each in turn, so drift in the machine's speed
hits every configuration alike. A worker idles (blocked on its pipe) while another is timed.

Configurations:
    keras_hub default    TensorFlow's and Keras' defaults: oneDNN as TF leaves it, jit_compile="auto" (XLA)
    keras_hub <flags>    the peer under each setting we try; its best is the second target's denominator
    ours default         albert_tf's defaults (see albert_tf/__init__.py: oneDNN on)
    ours <flags>         the same settings for us

It also times a 2048^3 float32 tf.matmul under each oneDNN setting: the machine's matrix-multiply rate.
"""

import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = dict(batch_size=16, seq_length=128, predictions=20)


def albert_base():
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs", "albert_base.json"
    )
    with open(path) as file:
        return json.load(file)


def train_step_flops(config, batch_size, seq_length, predictions):
    """Matrix-multiply FLOPs of one training step: 3x the forward pass (backward costs twice the forward)."""
    tokens = batch_size * seq_length
    h, e, i, v = (
        config["hidden_size"],
        config["embedding_size"],
        config["intermediate_size"],
        config["vocab_size"],
    )
    per_layer = 2 * tokens * (4 * h * h + 2 * h * i) + 2 * 2 * batch_size * seq_length * seq_length * h
    forward = (
        2 * tokens * e * h
        + config["num_hidden_layers"] * config["inner_group_num"] * per_layer
        + 2 * batch_size * h * h
        + 2 * batch_size * predictions * (h * e + e * v)
    )
    return 3 * forward


# ----------------------------------------------------------------------------------------------- worker


def make_batch(vocab_size, batch_size, seq_length, predictions):
    import numpy as np

    rng = np.random.default_rng(0)
    word_ids = rng.integers(5, vocab_size, (batch_size, seq_length)).astype("int32")
    positions = np.sort(rng.choice(np.arange(1, seq_length), (batch_size, predictions)), axis=1).astype(
        "int32"
    )
    return dict(
        input_word_ids=word_ids,
        input_mask=np.ones((batch_size, seq_length), "int32"),
        input_type_ids=(np.arange(seq_length) >= seq_length // 2).astype("int32")[None].repeat(batch_size, 0),
        masked_lm_positions=positions,
        mlm_ids=rng.integers(5, vocab_size, (batch_size, predictions)).astype("int32"),
        mlm_weights=np.ones((batch_size, predictions), "float32"),
        sop=rng.integers(0, 2, (batch_size,)).astype("int32"),
    )


OUR_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")


def build_ours(config):
    """The model and the input names it takes, keyed by ours."""
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder, AlbertPretrainer

    return AlbertPretrainer(AlbertEncoder(AlbertConfig.from_dict(config))), {
        name: name for name in OUR_INPUTS
    }


def build_keras_hub(config):
    import keras
    import keras_hub
    from keras_hub.src.models.albert.albert_backbone import albert_kernel_initializer
    from keras_hub.src.utils.keras_utils import gelu_approximate

    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=config["vocab_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"],
        embedding_dim=config["embedding_size"],
        hidden_dim=config["hidden_size"],
        intermediate_dim=config["intermediate_size"],
        num_groups=config["num_hidden_groups"],
        num_inner_repetitions=config["inner_group_num"],
        dropout=0.0,
        max_sequence_length=config["max_position_embeddings"],
    )
    inputs = {**backbone.input, "mask_positions": keras.Input((None,), dtype="int32", name="mask_positions")}
    encoded = backbone(backbone.input)
    head = keras_hub.layers.MaskedLMHead(
        vocabulary_size=config["vocab_size"],
        token_embedding=backbone.token_embedding,
        intermediate_activation=gelu_approximate,
        kernel_initializer=albert_kernel_initializer(),
        name="mlm_head",
    )
    outputs = {
        "mlm_logits": head(encoded["sequence_output"], inputs["mask_positions"]),
        "sop_logits": keras.layers.Dense(2, name="sop_head")(encoded["pooled_output"]),
    }
    # keras-hub's names for the same inputs.
    names = ("token_ids", "padding_mask", "segment_ids", "mask_positions")
    return keras.Model(inputs, outputs), dict(zip(OUR_INPUTS, names, strict=True))


def compile_pretraining(model, jit_compile):
    """The same optimizer and losses for every model measured: Adam, MLM and SOP cross-entropy."""
    import keras

    model.compile(
        optimizer=keras.optimizers.Adam(1e-4),
        loss={
            "mlm_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "sop_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
        jit_compile=jit_compile,
    )


def worker(model_name, jit_compile):
    import tensorflow as tf

    config = albert_base()
    build = build_ours if model_name == "ours" else build_keras_hub
    model, input_names = build(config)
    compile_pretraining(model, jit_compile)
    batch = make_batch(config["vocab_size"], **SHAPES)
    x = {input_names[name]: tf.constant(batch[name]) for name in OUR_INPUTS}
    y = {"mlm_logits": tf.constant(batch["mlm_ids"]), "sop_logits": tf.constant(batch["sop"])}
    weights = {"mlm_logits": tf.constant(batch["mlm_weights"]), "sop_logits": tf.ones(SHAPES["batch_size"])}
    for _ in range(2):  # tracing, XLA compilation, allocator warm-up
        model.train_on_batch(x, y, sample_weight=weights)
    print(json.dumps({"ready": True, "jit": str(model.jit_compile)}), flush=True)
    for line in sys.stdin:
        steps = int(line)
        start = time.perf_counter()
        for _ in range(steps):
            loss = model.train_on_batch(x, y, sample_weight=weights)
        elapsed = time.perf_counter() - start
        print(
            json.dumps({"seconds": elapsed, "loss": float(loss if not isinstance(loss, list) else loss[0])}),
            flush=True,
        )


def matmul_rate():
    import tensorflow as tf

    n = 2048
    a, b = tf.random.normal((n, n)), tf.random.normal((n, n))
    (a @ b).numpy()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        (a @ b).numpy()
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"gflops": 2 * n**3 / best / 1e9}), flush=True)


# ----------------------------------------------------------------------------------------------- parent

CONFIGURATIONS = [
    # (label, model, jit_compile, TF_ENABLE_ONEDNN_OPTS or None for TensorFlow's own default)
    ("keras_hub default (XLA auto, oneDNN default)", "keras_hub", "auto", None),
    ("keras_hub XLA off, oneDNN off", "keras_hub", False, "0"),
    ("keras_hub XLA off, oneDNN on", "keras_hub", False, "1"),
    ("keras_hub XLA on, oneDNN on", "keras_hub", True, "1"),
    ("ours default", "ours", "auto", "default"),
    ("ours XLA off, oneDNN on", "ours", False, "1"),
    ("ours XLA on, oneDNN off", "ours", True, "0"),
]


def environment(onednn):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    if onednn not in (None, "default"):
        env["TF_ENABLE_ONEDNN_OPTS"] = onednn
    return env


def spawn(args, onednn):
    # "ours default" imports albert_tf first, as our entry points do, so albert_tf's defaults apply;
    # every other worker imports tensorflow first, so the environment decides.
    preamble = "import albert_tf; " if onednn == "default" else ""
    argv = [__file__, *args]
    code = (
        f"{preamble}import runpy, sys; sys.argv = {argv!r}; runpy.run_path({__file__!r}, run_name='__main__')"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment(onednn),
    )


def read_json(process):
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("a benchmark worker exited early; run it alone to see its error")
        if line.startswith("{"):
            return json.loads(line)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=4, help="timed rounds per configuration")
    parser.add_argument("--steps", type=int, default=3, help="training steps per round")
    parser.add_argument("--worker", choices=["ours", "keras_hub", "matmul"], help=argparse.SUPPRESS)
    parser.add_argument("--jit", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "matmul":
        return matmul_rate()
    if args.worker:
        return worker(args.worker, {"auto": "auto", "True": True, "False": False}[args.jit])

    config = albert_base()
    flops = train_step_flops(config, **SHAPES)
    print(
        f"ALBERT-base shapes {SHAPES}, float32; {flops / 1e12:.3f} TFLOP (matmul) per training step",
        flush=True,
    )
    rates = {}
    for onednn in ("0", "1"):
        process = spawn(["--worker=matmul"], onednn)
        rates[onednn] = read_json(process)["gflops"]
        process.wait()
        print(
            f"tf.matmul 2048^3 float32, oneDNN {('off', 'on')[onednn == '1']}: {rates[onednn]:.1f} GFLOP/s",
            flush=True,
        )
    peak = max(rates.values())

    workers = []
    for label, model, jit, onednn in CONFIGURATIONS:
        process = spawn([f"--worker={model}", f"--jit={jit}"], onednn)
        read_json(process)
        workers.append((label, process))
        print(f"ready: {label}", flush=True)
    times = {label: [] for label, _ in workers}
    for _ in range(args.rounds):
        for label, process in workers:
            process.stdin.write(f"{args.steps}\n")
            process.stdin.flush()
            times[label].append(read_json(process)["seconds"] / args.steps)
    for _, process in workers:
        process.stdin.close()
        process.wait()

    # The median round resists a stray slow round on a shared machine.
    rate = {label: SHAPES["batch_size"] / sorted(t)[len(t) // 2] for label, t in times.items()}
    print(f"\n{'configuration':<48}{'seq/s':>8}{'GFLOP/s':>10}{'of matmul':>11}")
    for label, value in rate.items():
        gflops = value / SHAPES["batch_size"] * flops / 1e9
        print(f"{label:<48}{value:>8.2f}{gflops:>10.1f}{gflops / peak:>10.0%}")
    peer_default = rate["keras_hub default (XLA auto, oneDNN default)"]
    peer_best = max(v for k, v in rate.items() if k.startswith("keras_hub"))
    ours = rate["ours default"]
    ours_best = max(v for k, v in rate.items() if k.startswith("ours"))
    print(f"\nours default / keras_hub default: {ours / peer_default:.2f}x (target >= 1.3x)")
    print(f"ours default / keras_hub best:    {ours / peer_best:.2f}x (target >= 1.0x)")
    print(f"ours best / keras_hub best:       {ours_best / peer_best:.2f}x")
    achieved = ours / SHAPES["batch_size"] * flops / 1e9 / peak
    print(f"ours default achieved rate:       {achieved:.0%} of tf.matmul (target >= 80%)")


if __name__ == "__main__":
    main()
