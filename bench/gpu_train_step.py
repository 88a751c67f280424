r"""Pretraining-step throughput and MFU of AlbertPretrainer on a GPU: float32 and mixed precision, with XLA.

    python bench/gpu_train_step.py --config=albert_tf/configs/albert_base.json --batch_size=64 \
        --seq_length=512
    KERAS_BACKEND=jax python bench/gpu_train_step.py ...   # where TensorFlow is not installed

The model code (albert_tf.layers, albert_tf.models) uses keras and keras.ops only, so the same layers run
under any Keras backend; on a machine without TensorFlow's GPU build this measures them under JAX, whose
compiler is XLA as well. MFU is the step's matrix-multiply FLOPs per second over the rate of a large
matrix product of the same dtype measured in the same run (and over the GPU's datasheet peak, if given).
"""

import argparse
import json
import os
import sys
import time

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.models import AlbertEncoder, AlbertPretrainer  # noqa: E402
from bench.train_step import compile_pretraining, train_step_flops  # noqa: E402


def matmul_rate(dtype, n=8192, repeats=10):
    """FLOP/s of a chain of n^3 matrix products, timed on its second run (the first compiles every op)."""
    a = keras.random.normal((n, n), dtype=dtype)
    b = keras.random.normal((n, n), dtype=dtype)

    def chain():
        total = keras.ops.zeros((), "float32")
        for _ in range(repeats):
            total = total + keras.ops.cast(keras.ops.sum(keras.ops.matmul(a, b)), "float32")
        return keras.ops.convert_to_numpy(total)  # waits for the device

    chain()
    start = time.perf_counter()
    chain()
    return 2 * n**3 * repeats / (time.perf_counter() - start)


def measure(config, policy, batch_size, seq_length, predictions, steps):
    keras.config.set_dtype_policy(policy)
    keras.utils.set_random_seed(0)
    model = AlbertPretrainer(AlbertEncoder(config))
    compile_pretraining(model, jit_compile=True)
    rng = np.random.default_rng(0)
    x = {
        "input_word_ids": rng.integers(5, config.vocab_size, (batch_size, seq_length)).astype("int32"),
        "input_mask": np.ones((batch_size, seq_length), "int32"),
        "input_type_ids": (np.arange(seq_length) >= seq_length // 2)
        .astype("int32")[None]
        .repeat(batch_size, 0),
        "masked_lm_positions": rng.integers(1, seq_length, (batch_size, predictions)).astype("int32"),
    }
    y = {
        "mlm_logits": rng.integers(5, config.vocab_size, (batch_size, predictions)).astype("int32"),
        "sop_logits": rng.integers(0, 2, (batch_size,)).astype("int32"),
    }
    losses = [float(np.ravel(model.train_on_batch(x, y))[0]) for _ in range(3)]  # compile + warm-up
    start = time.perf_counter()
    for _ in range(steps):
        loss = model.train_on_batch(x, y)
    elapsed = (time.perf_counter() - start) / steps  # train_on_batch returns host numbers: synchronized
    losses.append(float(np.ravel(loss)[0]))
    keras.config.set_dtype_policy("float32")
    return elapsed, losses


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="albert_tf/configs/albert_base.json")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--seq_length", type=int, default=512)
    parser.add_argument("--predictions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--policies", default="float32,mixed_bfloat16,mixed_float16")
    parser.add_argument("--peak_tflops", type=float, default=None, help="datasheet dense bf16 peak, if known")
    args = parser.parse_args()

    config = AlbertConfig.from_json_file(args.config)
    flops = train_step_flops(config.to_dict(), args.batch_size, args.seq_length, args.predictions)
    print(
        f"backend {keras.backend.backend()}, {args.config}, batch {args.batch_size}, seq {args.seq_length}: "
        f"{flops / 1e12:.2f} TFLOP (matmul) per step",
        flush=True,
    )
    rates = {dtype: matmul_rate(dtype) for dtype in ("float32", "bfloat16", "float16")}
    for dtype, rate in rates.items():
        print(f"matmul 8192^3 {dtype}: {rate / 1e12:.1f} TFLOP/s", flush=True)
    results = []
    for policy in args.policies.split(","):
        seconds, losses = measure(
            config, policy, args.batch_size, args.seq_length, args.predictions, args.steps
        )
        achieved = flops / seconds
        dtype = policy.removeprefix("mixed_")
        row = dict(
            policy=policy,
            step_ms=round(seconds * 1e3, 1),
            sequences_per_s=round(args.batch_size / seconds, 1),
            tflops=round(achieved / 1e12, 1),
            of_matmul=round(achieved / rates[dtype], 3),
            losses=[round(v, 3) for v in losses],
        )
        if args.peak_tflops:
            row["mfu"] = round(achieved / (args.peak_tflops * 1e12), 3)
        results.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
