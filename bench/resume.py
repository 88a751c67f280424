"""Resuming a pretraining run late: time from start to the first step, and what is read to get there.

    python bench/resume.py                              # builds 10^6 records once (about 2 min, 0.9 GB)
    python bench/resume.py --records=1000000 --shards=4 --work_dir=runs/bench_resume

A build of at least --records records (the sample corpus at the dupe factor that gives them, seq 128, 20
predictions, uncompressed) in --shards shards of realistic size (4: about 225 MB each), kept in --work_dir
and rebuilt only when missing. Global batch 32: 4 lanes of one shard each, 8 records of each lane a step.

For each offset (records consumed: steps × 32), a run's checkpoint is written as if the run had consumed
them, then a new run resumes from it and is timed from `albert_tf.pretraining.run.build` (restore, input
pipeline) through its first training step. The offsets: 0; inside the first block; half-way through each
lane's shard; just before each lane's shard ends (the most a resume reads: almost one shard per lane); and
10^7 records (a later epoch). Beside each, the records the run passes over unparsed (its own resume line).
Peer, in the same run: the same shards without their manifest, read as records of another builder are (the
consumed records are read again, at most through one epoch here).
"""

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

from machine import describe

from albert_tf import shipped  # first: albert_tf's CPU defaults apply before TensorFlow is imported

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "data", "sample", "sample_corpus.txt")
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")
BATCH = 32


def build_records(work_dir, records, shards):
    """The manifest path of a build of at least `records` records in `shards` shards (built when missing)."""
    from albert_tf.pretraining.data.instances import InstanceOptions
    from albert_tf.pretraining.data.local import build
    from albert_tf.pretraining.data.manifest import output_paths
    from albert_tf.pretraining.data.units import BuildSettings

    manifest = os.path.join(work_dir, "train.manifest.json")
    if os.path.exists(manifest):
        with open(manifest, encoding="utf-8") as handle:
            if json.load(handle)["statistics"]["instances"] >= records:
                return manifest
    options = InstanceOptions(max_seq_length=128, max_predictions_per_seq=20)
    # One pass of the corpus gives about 3,300 records at seq 128.
    dupe_factor = -(-records // 3300)
    started = time.perf_counter()
    while True:
        settings = BuildSettings(spm_model_file=SPM, options=options, dupe_factor=dupe_factor)
        summary = build([CORPUS], output_paths(f"{work_dir}/train@{shards}"), settings)
        if summary.manifest.records >= records:
            break
        dupe_factor = -(-dupe_factor * records // summary.manifest.records)
    print(f"built {summary.manifest.records:,} records in {time.perf_counter() - started:.0f} s", flush=True)
    return manifest


def settings(input_file, output_dir):
    from albert_tf.pretraining.settings import PretrainingSettings

    return PretrainingSettings(
        albert_config_file=shipped.config_file("albert_tiny"), input_file=input_file,
        output_dir=output_dir, max_seq_length=128, max_predictions_per_seq=20, train_batch_size=BATCH,
        num_train_steps=10**9, num_warmup_steps=10, save_checkpoints_steps=10**9, steps_per_loop=1,
        log_every_steps=10**9,
    )  # fmt: skip


def seconds_to_first_step(input_file, steps, folder):
    """Writes a checkpoint at `steps` global batches, then times a resumed run's first step.

    Returns:
      (seconds, the run's resume line or "").
    """

    from albert_tf.pretraining.run import build

    output = os.path.join(folder, f"run-{len(os.listdir(folder))}")
    run_ = build(settings(input_file, output))
    run_.engine.batches.assign(steps)
    run_.engine.optimizer.iterations.assign(steps)
    run_.engine.manager.save(checkpoint_number=steps)
    started = time.perf_counter()
    resumed = build(settings(input_file, output))
    assert resumed.engine.step == steps
    resumed.engine.run_steps(1)
    seconds = time.perf_counter() - started
    return seconds, resumed.inputs.resume_cost(steps) or ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="Records to build, at least.")
    parser.add_argument("--shards", type=int, default=4, help="Shards of the build.")
    parser.add_argument(
        "--work_dir", default=os.path.join(ROOT, "runs", "bench_resume"), help="Build kept here."
    )
    args = parser.parse_args()
    print(describe(), flush=True)
    manifest_path = build_records(args.work_dir, args.records, args.shards)
    from albert_tf.pretraining.dataset import load_manifest
    from albert_tf.pretraining.lanes import Lanes

    manifest = load_manifest(manifest_path)
    lanes = Lanes.of(manifest, BATCH, seed=12345)
    shortest = min(lanes.length(lane) for lane in range(lanes.count)) // lanes.per_step  # steps per epoch
    total = sum(shard["bytes"] for shard in manifest.shards)
    print(f"{manifest.records:,} records, {len(manifest.shards)} shards, {total / 1e9:.2f} GB "
          f"({total / len(manifest.shards) / 1e6:.0f} MB a shard); {lanes.count} lanes, "
          f"{lanes.per_step} records of each a step", flush=True)  # fmt: skip
    steps = {"0": 0, "inside the first block": 5, "half an epoch": shortest // 2,
             "end of an epoch": shortest - 1, "10^7 records": 10**7 // BATCH}  # fmt: skip
    per_record = total / manifest.records
    results = []
    with tempfile.TemporaryDirectory() as folder:
        bare = os.path.join(folder, "bare")  # the shards without their manifest
        os.makedirs(bare)
        for path in glob.glob(os.path.join(args.work_dir, "train-*")):
            os.symlink(path, os.path.join(bare, os.path.basename(path)))
        runs = os.path.join(folder, "runs")
        os.makedirs(runs)
        cases = [("manifest", manifest_path, label, step) for label, step in steps.items()]
        cases += [("no manifest", f"{bare}/train-*", label, steps[label]) for label in ("0", "half an epoch")]
        for kind, input_file, label, step in cases:
            seconds, line = seconds_to_first_step(input_file, step, runs)
            passed = lanes.resume_reads(range(lanes.count), step) if kind == "manifest" else step * BATCH
            results.append((kind, label, step, seconds, passed))
            megabytes = passed * per_record / 1e6
            print(f"{kind:<11} {label:<22} step {step:>8,}: {seconds:6.1f} s to the first step, "
                  f"{passed:>9,} records passed over ({megabytes:,.0f} MB)", flush=True)  # fmt: skip
            shutil.rmtree(runs)
            os.makedirs(runs)
    base = {kind: seconds for kind, label, _, seconds, _ in results if label == "0"}
    print(f"\nTiny ALBERT, seq 128, batch {BATCH}; {describe()}")
    for kind, label, _, seconds, passed in results:
        print(f"{kind:<11} {label:<22} {seconds:6.1f} s ({seconds - base[kind]:+.1f} s over offset 0), "
              f"{passed:,} records read again")  # fmt: skip
    bound = max(lanes.manifest.shards[s]["records"] for s in range(len(manifest.shards))) * lanes.count
    print(f"bound: one shard per lane, {bound:,} records ({bound * per_record / 1e9:.2f} GB) at most")
    return 0


if __name__ == "__main__":
    sys.exit(main())
