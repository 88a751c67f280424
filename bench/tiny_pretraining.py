"""Throughput of the quick start: the tiny ALBERT's steady-state tokens/s and the time spent outside it.

    python bench/tiny_pretraining.py --rounds=2 --steps=600

Runs `python -m albert_tf.run_pretraining --flagfile=tiny` whole, as a user does (with
--num_train_steps=--steps and a progress line every 100 steps), for
several settings in alternating rounds (so drift in the machine's speed hits each alike), and reads its
progress lines. Steady state: the median examples/s of the progress windows after the first two (the first
holds tracing and compilation) times the sequence length (tokens, padding included). Outside it: the
command's wall time minus steps × batch / steady rate, i.e. start-up (imports, graph building, compilation),
checkpoints, evaluation and the model directory. Settings:
  landed: the quick start's flags before this benchmark (LAMB 0.005, batch 32 x 128 tokens, no XLA, 25
          steps per loop, the tiny config at 4 layers);
  xla:    the same with --jit_compile;
  now:    albert_tf/configs/pretrain/tiny.flags as it is now;
  four_layers: the same with the tiny config at 4 layers (its shared block run 4 times a token instead of
          2: the same parameters, twice the encoder's arithmetic);
  seq128: the same on records of 128 tokens with 20 predictions (the recipe's are 64 and 10);
  bf16:   the same with --mixed_precision=bfloat16 (--settings=now,bf16; emulated, and slow, on CPUs
          without AVX512_BF16 or AMX);
  bf16_fusible: bfloat16 without --jit_compile, TensorFlow's auto-clustering giving XLA only the fusible
          ops (TF_XLA_FLAGS below), so that matrix products run in oneDNN's bfloat16 kernels (AMX), which
          XLA's CPU dots do not use.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import sample_records  # bench/ is on sys.path: scripts run as python bench/NAME.py
from machine import describe

from albert_tf import shipped

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# albert_tf/configs/albert_tiny.json at 4 layers, written into the benchmark's scratch folder ({work}, below).
FOUR_LAYERS = "--albert_config_file={work}/albert_tiny_4_layers.json"
# The sample's records at 128 tokens, built into {work}.
SEQ_128 = [
    "--input_file={work}/records_128/train.manifest.json",
    "--eval_input_file={work}/records_128/eval.manifest.json",
    "--max_seq_length=128", "--max_predictions_per_seq=20",
]  # fmt: skip
# The quick start's flags before this benchmark (what the landed albert_tf/configs/pretrain/tiny.flags said).
LANDED = [
    *SEQ_128, FOUR_LAYERS, "--optimizer=lamb", "--learning_rate=0.005", "--train_batch_size=32",
    "--num_warmup_steps=30", "--nojit_compile", "--noonline_masking", "--steps_per_loop=25",
    "--log_every_steps=25", "--eval_every_steps=0",
]  # fmt: skip
FUSIBLE_ONLY = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit --tf_xla_ops_to_cluster=FUSIBLE"}
# name: (flags after the flagfile, environment variables beside the caller's)
SETTINGS = {
    "landed": (LANDED, {}), "xla": ([*LANDED, "--jit_compile"], {}), "now": ([], {}),
    "four_layers": ([FOUR_LAYERS], {}), "seq128": (SEQ_128, {}),
    "bf16": (["--mixed_precision=bfloat16"], {}),
    "bf16_fusible": (["--mixed_precision=bfloat16", "--nojit_compile"], FUSIBLE_ONLY),
}  # fmt: skip


def flag(args, name, default):
    """The value of --name in args, else the flagfile's."""
    for arg in reversed(args):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    with open(shipped.recipe_file("run_pretraining", "tiny"), encoding="utf-8") as file:
        for line in file:
            if line.startswith(f"--{name}="):
                return line.strip().split("=", 1)[1]
    return default


def measure(args, environment, steps, work):
    """(steady tokens/s, seconds outside steady state, wall seconds, final eval results line)."""
    output = tempfile.mkdtemp(dir=work)
    args = [arg.replace("{work}", work) for arg in args]
    command = [
        sys.executable,
        "-m",
        "albert_tf.run_pretraining",
        "--flagfile=tiny",
        f"--output_dir={output}",
        f"--num_train_steps={steps}",
        f"--save_checkpoints_steps={steps}",
        "--log_every_steps=100",  # enough progress windows for a steady state (a setting may say otherwise)
        *args,
    ]
    started = time.perf_counter()
    result = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **environment}
    )
    wall = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(result.stderr[-3000:])
    rates = [float(rate) for rate in re.findall(r"\| ([\d.]+) examples/s", result.stderr)]
    if len(rates) < 4:
        raise SystemExit(f"too few progress lines ({len(rates)}): raise --steps")
    steady = statistics.median(rates[2:])
    batch, seq = int(flag(args, "train_batch_size", 32)), int(flag(args, "max_seq_length", 128))
    evaluation = re.findall(r"eval at step \d+: (.*)", result.stderr)
    return steady * seq, wall - steps * batch / steady, wall, evaluation[-1] if evaluation else ""


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=600, help="Steps per run (a multiple of 100, >= 400).")
    parser.add_argument("--settings", default="landed,xla,now", help=f"Of: {', '.join(SETTINGS)}.")
    args = parser.parse_args()
    names = args.settings.split(",")
    print(f"machine: {describe()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}")
    found = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as work:
        with open(shipped.config_file("albert_tiny"), encoding="utf-8") as file:
            four_layers = {**json.load(file), "num_hidden_layers": 4}
        with open(os.path.join(work, "albert_tiny_4_layers.json"), "w", encoding="utf-8") as file:
            json.dump(four_layers, file)
        if any("{work}/records_128" in arg for name in names for arg in SETTINGS[name][0]):
            sample_records.build(os.path.join(work, "records_128"), 128, 20)
        for round_ in range(args.rounds):
            for name in names:
                tokens, outside, wall, _ = measure(*SETTINGS[name], args.steps, work)
                found[name].append((tokens, outside, wall))
                line = f"{tokens:>9,.0f} tokens/s  {outside:5.1f} s outside  {wall:6.1f} s wall"
                print(f"round {round_ + 1} {name:<12} {line}")
    print(f"\n{'setting':<14}{'tokens/s (best)':>18}{'outside (best)':>16}{'vs landed':>12}")
    best = {name: max(t for t, _, _ in runs) for name, runs in found.items()}
    for name, runs in found.items():
        ratio = f"{best[name] / best['landed']:.2f}x" if "landed" in best else "-"
        print(f"{name:<14}{best[name]:>18,.0f}{min(o for _, o, _ in runs):>14.1f} s{ratio:>12}")


if __name__ == "__main__":
    main()
