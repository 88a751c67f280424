r"""MLM + SOP training-step throughput: albert_tf against keras-hub's AlbertBackbone, interleaved in one run.

    pip install -e ".[bench]"
    python bench/train_step.py                       # ALBERT-base shapes: seq 128, 20 predictions, batch 16
    python bench/train_step.py --rounds=2 --steps=1  # a quick look
    python bench/train_step.py --mixed_precision=bfloat16  # bfloat16 configurations too

Both models get the same shapes, the same dtype policy, the same losses (masked-LM cross-entropy weighted by
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

--mixed_precision=bfloat16 then times bfloat16 configurations: the worker sets Keras' "mixed_bfloat16" dtype
policy before building the model (matrix products and activations in bfloat16, weights and optimizer state
in float32). albert_tf's models follow the global policy with float32 MLM and SOP logits; keras-hub's
backbone follows it too and its heads take the backbone's policy, as in its `AlbertMaskedLM`. A bfloat16
worker reports its layers' compute dtypes, so a model that silently stays in float32 shows. A worker holds
3-4.5 GB, too many for all at once, so each bfloat16 configuration is timed in turn with a fresh worker of
its float32 twin (same model, XLA and oneDNN settings), pair by pair, after the float32 table above:
    keras_hub bfloat16 ...  keras_hub default and keras_hub XLA off, oneDNN on, in bfloat16
    ours bfloat16           ours default in bfloat16: bfloat16 / its twin is the bfloat16 speed-up
    ours bfloat16 ...       ours XLA off, oneDNN on, in bfloat16
The matmul worker then also times a 2048^3 bfloat16 tf.matmul, and a bfloat16 configuration's "of matmul"
is its fraction of the best bfloat16 matmul rate. bfloat16 is native on CPUs with avx512_bf16 (about 2x
float32) or amx_bf16 (far more), emulated otherwise: the first line printed names the CPU and its flags.
"""

import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = dict(batch_size=16, seq_length=128, predictions=20)


def albert_base():
    # Imported here, not at the top: each worker runs this file again, and albert_tf imported before
    # TensorFlow would turn oneDNN on for the workers that measure TensorFlow's own default.
    from albert_tf import shipped

    with open(shipped.config_file("albert_base"), encoding="utf-8") as file:
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
        dtype=backbone.dtype_policy,  # as in keras-hub's AlbertMaskedLM: the global policy
        name="mlm_head",
    )
    sop_head = keras.layers.Dense(2, dtype=backbone.dtype_policy, name="sop_head")
    outputs = {
        "mlm_logits": head(encoded["sequence_output"], inputs["mask_positions"]),
        "sop_logits": sop_head(encoded["pooled_output"]),
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


def matmul_dtypes(model):
    """How many of the model's layers with a kernel (its matrix products) compute in each dtype."""
    counts = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if hasattr(layer, "kernel") or hasattr(layer, "_kernel"):
            counts[layer.compute_dtype] = counts.get(layer.compute_dtype, 0) + 1
    return counts


def worker(model_name, jit_compile, dtype):
    import keras
    import tensorflow as tf

    if dtype == "bfloat16":
        keras.config.set_dtype_policy("mixed_bfloat16")  # before any layer is built
    config = albert_base()
    build = build_ours if model_name == "ours" else build_keras_hub
    model, input_names = build(config)
    compile_pretraining(model, jit_compile)
    compute = matmul_dtypes(model)
    if dtype == "bfloat16" and "bfloat16" not in compute:
        raise RuntimeError(f"{model_name} built under mixed_bfloat16 computes in {compute}, not bfloat16")
    batch = make_batch(config["vocab_size"], **SHAPES)
    x = {input_names[name]: tf.constant(batch[name]) for name in OUR_INPUTS}
    y = {"mlm_logits": tf.constant(batch["mlm_ids"]), "sop_logits": tf.constant(batch["sop"])}
    weights = {"mlm_logits": tf.constant(batch["mlm_weights"]), "sop_logits": tf.ones(SHAPES["batch_size"])}
    for _ in range(2):  # tracing, XLA compilation, allocator warm-up
        model.train_on_batch(x, y, sample_weight=weights)
    print(json.dumps({"ready": True, "jit": str(model.jit_compile), "compute": compute}), flush=True)
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


def matmul_rate(dtypes):
    import tensorflow as tf

    n = 2048
    rates = {}
    for dtype in dtypes:
        a, b = (tf.cast(tf.random.normal((n, n)), dtype) for _ in range(2))
        (a @ b).numpy()
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            (a @ b).numpy()
            best = min(best, time.perf_counter() - start)
        rates[dtype] = 2 * n**3 / best / 1e9
    print(json.dumps({"gflops": rates}), flush=True)


# ----------------------------------------------------------------------------------------------- parent

CONFIGURATIONS = [
    # (label, model, jit_compile, TF_ENABLE_ONEDNN_OPTS or None for TensorFlow's own default, dtype)
    ("keras_hub default (XLA auto, oneDNN default)", "keras_hub", "auto", None, "float32"),
    ("keras_hub XLA off, oneDNN off", "keras_hub", False, "0", "float32"),
    ("keras_hub XLA off, oneDNN on", "keras_hub", False, "1", "float32"),
    ("keras_hub XLA on, oneDNN on", "keras_hub", True, "1", "float32"),
    ("ours default", "ours", "auto", "default", "float32"),
    ("ours XLA off, oneDNN on", "ours", False, "1", "float32"),
    ("ours XLA on, oneDNN off", "ours", True, "0", "float32"),
]
# --mixed_precision=bfloat16 adds these: the default and XLA off, oneDNN on settings of each model.
BFLOAT16_CONFIGURATIONS = [
    ("keras_hub bfloat16 (XLA auto, oneDNN default)", "keras_hub", "auto", None, "bfloat16"),
    ("keras_hub bfloat16 XLA off, oneDNN on", "keras_hub", False, "1", "bfloat16"),
    ("ours bfloat16", "ours", "auto", "default", "bfloat16"),
    ("ours bfloat16 XLA off, oneDNN on", "ours", False, "1", "bfloat16"),
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
    parser.add_argument(
        "--mixed_precision",
        choices=["float32", "bfloat16"],
        default="float32",
        help="bfloat16: also time bfloat16 (mixed_bfloat16) configurations beside the float32 ones",
    )
    parser.add_argument("--worker", choices=["ours", "keras_hub", "matmul"], help=argparse.SUPPRESS)
    parser.add_argument("--jit", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker == "matmul":
        return matmul_rate(args.dtype.split(","))
    if args.worker:
        return worker(args.worker, {"auto": "auto", "True": True, "False": False}[args.jit], args.dtype)

    from machine import describe  # bench/ (this script's folder) is on sys.path; workers don't need it

    bfloat16 = args.mixed_precision == "bfloat16"
    dtypes = ("float32", "bfloat16") if bfloat16 else ("float32",)
    config = albert_base()
    flops = train_step_flops(config, **SHAPES)
    print(describe(), flush=True)
    print(
        f"ALBERT-base shapes {SHAPES}, {' and '.join(dtypes)}; "
        f"{flops / 1e12:.3f} TFLOP (matmul) per training step",
        flush=True,
    )
    rates = {dtype: {} for dtype in dtypes}
    for onednn in ("0", "1"):
        process = spawn(["--worker=matmul", f"--dtype={','.join(dtypes)}"], onednn)
        for dtype, gflops in read_json(process)["gflops"].items():
            rates[dtype][onednn] = gflops
        process.wait()
    for dtype in dtypes:
        for onednn in ("0", "1"):
            print(
                f"tf.matmul 2048^3 {dtype}, oneDNN {('off', 'on')[onednn == '1']}: "
                f"{rates[dtype][onednn]:.1f} GFLOP/s",
                flush=True,
            )
    peak = {dtype: max(rate.values()) for dtype, rate in rates.items()}

    # The float32 configurations, as without --mixed_precision, all timed in turn.
    times = time_in_turn(CONFIGURATIONS, args.rounds, args.steps)
    # The median round resists a stray slow round on a shared machine.
    rate = {label: median_rate(t) for label, t in times.items()}
    print(f"\n{'configuration':<48}{'seq/s':>8}{'GFLOP/s':>10}{'of matmul':>11}")
    for label, value in rate.items():
        gflops = value / SHAPES["batch_size"] * flops / 1e9
        print(f"{label:<48}{value:>8.2f}{gflops:>10.1f}{gflops / peak['float32']:>10.0%}")
    peer_default = rate["keras_hub default (XLA auto, oneDNN default)"]
    peer_best = max(v for k, v in rate.items() if k.startswith("keras_hub"))
    ours = rate["ours default"]
    ours_best = max(v for k, v in rate.items() if k.startswith("ours"))
    print(f"\nours default / keras_hub default: {ours / peer_default:.2f}x (target >= 1.3x)")
    print(f"ours default / keras_hub best:    {ours / peer_best:.2f}x (target >= 1.0x)")
    print(f"ours best / keras_hub best:       {ours_best / peer_best:.2f}x")
    achieved = ours / SHAPES["batch_size"] * flops / 1e9 / peak["float32"]
    print(f"ours default achieved rate:       {achieved:.0%} of tf.matmul (target >= 80%)")
    if bfloat16:
        time_bfloat16(args.rounds, args.steps, flops, peak)


def median_rate(seconds):
    """Sequences per second of the median round."""
    return SHAPES["batch_size"] / sorted(seconds)[len(seconds) // 2]


def time_in_turn(configurations, rounds, steps):
    """Seconds per step of each round of each configuration: one worker each, timed one round in turn."""
    workers = []
    try:
        for label, model, jit, onednn, dtype in configurations:
            process = spawn([f"--worker={model}", f"--jit={jit}", f"--dtype={dtype}"], onednn)
            workers.append((label, process))
            compute = read_json(process)["compute"]
            if dtype == "float32":
                print(f"ready: {label}", flush=True)
            else:  # the proof that it computes in bfloat16: its kernel layers' compute dtypes
                layers = ", ".join(f"{count} {name}" for name, count in sorted(compute.items()))
                print(f"ready: {label} (layers with a kernel compute in: {layers})", flush=True)
        times = {label: [] for label, _ in workers}
        for _ in range(rounds):
            for label, process in workers:
                process.stdin.write(f"{steps}\n")
                process.stdin.flush()
                times[label].append(read_json(process)["seconds"] / steps)
    finally:
        for _, process in workers:
            process.stdin.close()
            process.wait()
    return times


def time_bfloat16(rounds, steps, flops, peak):
    """Each bfloat16 configuration timed in turn with its float32 twin (the same model, XLA and oneDNN
    settings), pair by pair: a worker holds 3-4.5 GB, and all of them at once outgrow a 24 GB machine."""
    rate, twin_rate = {}, {}
    for label, model, jit, onednn, dtype in BFLOAT16_CONFIGURATIONS:
        twin = next(c for c in CONFIGURATIONS if c[1:4] == (model, jit, onednn))
        times = time_in_turn([twin, (label, model, jit, onednn, dtype)], rounds, steps)
        rate[label], twin_rate[label] = median_rate(times[label]), median_rate(times[twin[0]])
    heading = "bfloat16 (timed beside its float32 twin)"
    print(f"\n{heading:<48}{'seq/s':>8}{'GFLOP/s':>10}{'of matmul':>11}{'float32 seq/s':>15}{'speed-up':>10}")
    for label, value in rate.items():
        gflops = value / SHAPES["batch_size"] * flops / 1e9
        print(
            f"{label:<48}{value:>8.2f}{gflops:>10.1f}{gflops / peak['bfloat16']:>10.0%}"
            f"{twin_rate[label]:>15.2f}{value / twin_rate[label]:>9.2f}x"
        )
    ours = rate["ours bfloat16"]
    achieved = ours / SHAPES["batch_size"] * flops / 1e9 / peak["bfloat16"]
    print(
        f"\nours bfloat16 / ours float32:     {ours / twin_rate['ours bfloat16']:.2f}x "
        "(goal >= 1.3x on AVX512_BF16, >= 1.6x on AMX)"
    )
    print(
        f"ours bfloat16 achieved rate:      {achieved:.0%} of bfloat16 tf.matmul "
        f"({peak['bfloat16']:.1f} GFLOP/s)"
    )
    print(f"ours bfloat16 / keras_hub bfloat16 (defaults): {ours / rate[BFLOAT16_CONFIGURATIONS[0][0]]:.2f}x")
    print(
        f"tf.matmul bfloat16 / float32:     {peak['bfloat16'] / peak['float32']:.2f}x "
        "(what a step made only of matrix products would gain)"
    )


if __name__ == "__main__":
    main()
