"""Resuming a pretraining run late: time from start to the first step, by input position.

    python bench/resume.py                                  # offsets 0, 10^6, 10^7 records
    python bench/resume.py --offsets=0,1000000 --peer_offsets=0,1000000

The quick start's model and records (data/sample/records: 6,317 training records in 4 GZIP shards with their
manifest; an offset past them is a later epoch). For each offset, a run's checkpoint is written as if the run
had consumed that many records, then a new run resumes from it and is timed from
`albert_tf.pretraining.run.build` (restore, input pipeline) through its first training step. Ours: the records
with their manifest (the right shard is opened at the right record). Peer, in the same run: the same records
without the manifest, read as records of another builder are (the consumed records are read again). Target:
ours flat, within 10 s of offset 0.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import albert_tf  # noqa: F401  (first: albert_tf's CPU defaults apply before TensorFlow is imported)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "data", "sample", "records")
BATCH = 32


def settings(input_file, output_dir):
    from albert_tf.pretraining.settings import PretrainingSettings

    return PretrainingSettings(
        albert_config_file=os.path.join(ROOT, "configs", "albert_tiny.json"), input_file=input_file,
        output_dir=output_dir, max_seq_length=128, max_predictions_per_seq=20, train_batch_size=BATCH,
        num_train_steps=10**9, num_warmup_steps=10, save_checkpoints_steps=10**9, steps_per_loop=1,
        log_every_steps=10**9,
    )  # fmt: skip


def seconds_to_first_step(input_file, offset, folder):
    """Writes a checkpoint at input position `offset` (records), then times a resumed run's first step."""
    import tensorflow as tf

    from albert_tf.pretraining.run import build

    output = os.path.join(folder, f"run-{offset}")
    run_ = build(settings(input_file, output))
    run_.trainer.batches.assign(offset // BATCH)
    run_.trainer.optimizer.iterations.assign(offset // BATCH)
    run_.controller.manager.save(checkpoint_number=offset // BATCH)
    started = time.perf_counter()
    resumed = build(settings(input_file, output))
    assert resumed.trainer.step == offset // BATCH
    resumed.trainer.loop(resumed.controller.iterator, tf.constant(1))
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offsets", default="0,1000000,10000000", help="Record offsets to resume at.")
    parser.add_argument("--peer_offsets", default="0,1000000", help="Offsets for records without a manifest.")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        bare = os.path.join(folder, "bare")  # the shards without their manifest
        os.makedirs(bare)
        for name in os.listdir(RECORDS):
            if name.startswith("train-"):
                shutil.copyfile(os.path.join(RECORDS, name), os.path.join(bare, name))
        inputs = {"manifest": os.path.join(RECORDS, "train.manifest.json"), "no manifest": f"{bare}/train-*"}
        for label, offsets in (("manifest", args.offsets), ("no manifest", args.peer_offsets)):
            for offset in [int(value) for value in offsets.split(",") if value]:
                seconds = seconds_to_first_step(inputs[label], offset, folder)
                results.append((label, offset, seconds))
                print(f"{label:<12} offset {offset:>12,}: {seconds:7.1f} s to the first step", flush=True)
    print(f"Tiny ALBERT, seq 128, batch {BATCH}, sample records, CPU ({os.cpu_count()} cores)")
    base = {label: seconds for label, offset, seconds in results if offset == 0}
    for label, offset, seconds in results:
        extra = seconds - base.get(label, seconds)
        print(f"{label:<12} {offset:>12,} records: {seconds:7.1f} s ({extra:+.1f} s over offset 0)")
    worst = max((s - base["manifest"] for label, _, s in results if label == "manifest"), default=0.0)
    print(f"ours: at most {worst:+.1f} s over offset 0 (target: within 10 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
