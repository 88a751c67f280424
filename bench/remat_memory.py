r"""What rematerialization (`--remat`) saves and costs in a pretraining step on the CPU: peak memory and step
time of ALBERT-base and ALBERT-large at 512 tokens, batch 8, with and without it.

    python bench/remat_memory.py                              # base and large, 2 timed steps each
    python bench/remat_memory.py --models=albert_base --steps=3
    python bench/remat_memory.py --mixed_precision=bfloat16   # float32 weights, bfloat16 compute

Each row is a fresh process: the pretrainer (masked-LM and sentence-order heads) of the config, LAMB, one
batch of random ids with 20 masked positions a sequence, and the training step (forward, backward, update)
as a tf.function, what run_pretraining's step does on one device. The step is traced, the process's peak
resident memory reset (/proc/self/clear_refs) and "held" read: weights, optimizer slots, the batch,
TensorFlow's runtime and the traced step. Then a first step (not timed: it also optimizes the graph) and
the timed steps run. "Activations" is the peak less what was held: what running the step adds, the
activations the backward pass keeps, the gradients and the temporaries. The goal: with remat, at most half
the activation memory, at most 1.35x the step time. Beside each row, `python -m albert_tf.model_summary
--memory`'s estimate of the process's peak (with TensorFlow's runtime on a CPU) and its ratio to the
measured peak (goal: within 15%).
"""

import json
import os
import subprocess
import sys

from absl import app, flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import describe  # noqa: E402  (bench/ is on sys.path: scripts run as python bench/NAME.py)

flags.DEFINE_list("models", ["albert_base", "albert_large"], "Configs (albert_tf/configs/NAME.json).")
flags.DEFINE_integer("batch", 8, "Sequences a step.")
flags.DEFINE_integer("length", 512, "Tokens a sequence.")
flags.DEFINE_integer("steps", 2, "Timed steps after the warm-up step.")
# Not --precision: model_summary, imported for the estimate, defines that flag.
flags.DEFINE_enum(
    "mixed_precision", "none", ["none", "bfloat16", "float16"],
    "Compute dtype with float32 weights, as run_pretraining's --precision (float16: without loss scaling).",
)  # fmt: skip
FLAGS = flags.FLAGS

STEP = """
import json, sys, time
import numpy as np
import albert_tf
import keras
import tensorflow as tf
from albert_tf import shipped
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.pretraining import losses
from albert_tf.training.distribution import PRECISIONS
from albert_tf.training.optimizers import create_optimizer

name, remat, batch, length, steps = sys.argv[1], sys.argv[2] == "1", *map(int, sys.argv[3:6])
keras.config.set_dtype_policy(PRECISIONS[sys.argv[6]])
def megabytes(field):
    lines = open("/proc/self/status").read().splitlines()
    return next(int(line.split()[1]) for line in lines if line.startswith(field + ":")) / 1024
config = AlbertConfig.from_json_file(shipped.resolve("albert_config_file", name))
model = AlbertPretrainer(AlbertEncoder(config, remat=remat))
optimizer = create_optimizer("lamb", 1e-4)
optimizer.build(model.trainable_variables)
rng = np.random.default_rng(0)
predictions = 20
batch_data = {
    "input_word_ids": rng.integers(5, config.vocab_size, (batch, length)).astype(np.int32),
    "input_mask": np.ones((batch, length), np.int32),
    "input_type_ids": (np.arange(length) >= length // 2).astype(np.int32)[None].repeat(batch, 0),
    "masked_lm_positions": np.sort(rng.choice(length, (batch, predictions)), axis=1).astype(np.int32),
    "masked_lm_ids": rng.integers(5, config.vocab_size, (batch, predictions)).astype(np.int32),
    "masked_lm_weights": np.ones((batch, predictions), np.float32),
    "sentence_order_label": rng.integers(0, 2, (batch,)).astype(np.int32),
}
batch_data = {key: tf.constant(value) for key, value in batch_data.items()}
inputs = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")

@tf.function
def step():
    with tf.GradientTape() as tape:
        outputs = model({key: batch_data[key] for key in inputs}, training=True)
        sums = losses.pretraining_sums(batch_data, outputs)
        loss = losses.pretraining_loss(sums, sums[1], batch)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss

step.get_concrete_function()  # traced, not run: the graph is held before the first step
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
held = megabytes("VmRSS")
step()  # the first run also optimizes the graph (grappler) and creates oneDNN primitives: not timed
started = time.perf_counter()
for _ in range(steps):
    loss = float(step())
seconds = (time.perf_counter() - started) / steps
print(json.dumps({"held_mb": held, "peak_mb": megabytes("VmHWM"), "step_s": seconds, "loss": loss}))
"""


def precision():
    """run_pretraining's --precision for --mixed_precision: float32, bfloat16 or float16."""
    return "float32" if FLAGS.mixed_precision == "none" else FLAGS.mixed_precision


def row(name, remat):
    result = subprocess.run(
        [sys.executable, "-c", STEP, name, "1" if remat else "0", str(FLAGS.batch), str(FLAGS.length),
         str(FLAGS.steps), precision()],
        capture_output=True, text=True,
    )  # fmt: skip
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def estimated_peak(name, remat):
    """MB of the process's peak by `model_summary --memory`'s estimate (with the CPU runtime)."""
    from albert_tf import shipped
    from albert_tf.config import AlbertConfig
    from albert_tf.model_summary import memory_summary, summarize
    from albert_tf.models.memory_estimate import MemorySettings

    config = AlbertConfig.from_json_file(shipped.resolve("albert_config_file", name))
    settings = MemorySettings(
        batch_size=FLAGS.batch, max_seq_length=FLAGS.length, precision=precision(), remat=remat
    )
    memory = memory_summary(config, summarize(config), settings)
    return (memory["training_peak"] + memory["runtime"]) / 2**20


def main(argv):
    del argv
    print(f"CPU: {describe()}", flush=True)
    settings = f"batch {FLAGS.batch} x {FLAGS.length} tokens, {precision()}, LAMB"
    print(f"{settings}; {FLAGS.steps} timed steps a row")
    print(
        "model | remat | held (MB) | peak (MB) | activations (MB) | step (s) | activations, step vs without "
        "| estimated peak (MB) | estimate / measured"
    )
    for name in FLAGS.models:
        without = None
        for remat in (False, True):
            r = row(name, remat)
            activations = r["peak_mb"] - r["held_mb"]
            ratios = "1, 1"
            if without:
                ratios = f"{activations / without[0]:.2f}x, {r['step_s'] / without[1]:.2f}x"
            else:
                without = (activations, r["step_s"])
            estimate = estimated_peak(name, remat)
            print(
                f"{name} | {'on' if remat else 'off'} | {r['held_mb']:.0f} | {r['peak_mb']:.0f} | "
                f"{activations:.0f} | {r['step_s']:.1f} | {ratios} | {estimate:.0f} | "
                f"{estimate / r['peak_mb']:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    app.run(main)
