"""Storage read per input pipeline: what each of P workers reads to train on its part of every global batch.

    python bench/input_read.py                  # 400 steps of 32 on the sample records, P = 1, 2, 4
    python bench/input_read.py --steps=1000 --pipelines=1,2,4

The quick start's records (albert_tf/sample/records: 10,325 training records of 64 tokens in 4 GZIP shards,
1.22 MB, with their manifest), global batch 32: 4
lanes of one shard each. For each pipeline count P, every pipeline i of P is iterated for `steps` steps and
the bytes it read are counted by the kernel (/proc/self/io `rchar`, before
and after). Ours: the run's training input (`PretrainingInput.train_dataset`), which reads the lanes of
pipeline i only. Peer, in the same run: tf.data's DATA auto-shard policy (what tf.distribute does with a
dataset it cannot shard by file, and what this package did before lanes): every pipeline reads the build's
whole order and keeps its 1/P of each global batch. Target: ours reads 1/P of the peer per pipeline.
"""

import argparse
import glob
import os
import sys
import tempfile

from machine import describe

from albert_tf import shipped  # first: albert_tf's CPU defaults apply before TensorFlow is imported

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "albert_tf", "sample", "records", "train.manifest.json")
BATCH = 32


def bytes_read():
    """Bytes this process has read through read system calls so far (page-cache hits included)."""
    with open("/proc/self/io", encoding="ascii") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def ours(pipelines, pipeline, output_dir):
    from albert_tf.pretraining.input import PretrainingInput
    from albert_tf.pretraining.settings import PretrainingSettings

    settings = PretrainingSettings(
        albert_config_file=shipped.config_file("albert_tiny"), input_file=MANIFEST,
        output_dir=output_dir, max_seq_length=64, max_predictions_per_seq=10, train_batch_size=BATCH,
    )  # fmt: skip
    import tensorflow as tf

    context = tf.distribute.InputContext(pipelines, pipeline, num_replicas_in_sync=pipelines)
    return PretrainingInput(settings, 30000, log=None).train_dataset(context, 0)


def peer(pipelines, pipeline):
    """The build's order read whole, each step's chunk i of P kept (tf.data's DATA auto-shard)."""
    import tensorflow as tf

    from albert_tf.pretraining.dataset import load_manifest

    manifest = load_manifest(MANIFEST)
    records = tf.data.TFRecordDataset(manifest.shard_paths(), "GZIP").repeat()
    return records.batch(BATCH // pipelines, drop_remainder=True).shard(pipelines, pipeline).unbatch()


def measure(dataset, elements):
    """(bytes read, elements taken) while taking `elements` elements of dataset."""
    iterator = iter(dataset)
    before = bytes_read()
    taken = sum(1 for _ in zip(range(elements), iterator, strict=False))
    return bytes_read() - before, taken


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="Global batches of 32 each pipeline reads.")
    parser.add_argument("--pipelines", default="1,2,4", help="Pipeline counts (each must divide 4).")
    args = parser.parse_args()
    corpus = sum(os.path.getsize(p) for p in glob.glob(MANIFEST.replace(".manifest.json", "-*")))
    print(describe())
    print(
        f"sample records: {corpus / 1e6:.2f} MB in 4 GZIP shards; {args.steps} steps of {BATCH} per pipeline"
    )
    print(f"{'P':>2} {'pipeline':>8} {'ours MB':>8} {'peer MB':>8} {'ours/peer':>9}")
    with tempfile.TemporaryDirectory() as output_dir:
        for pipelines in [int(p) for p in args.pipelines.split(",")]:
            totals = [0, 0]
            for pipeline in range(pipelines):
                ours_bytes, batches = measure(ours(pipelines, pipeline, output_dir), args.steps)
                peer_bytes, records = measure(peer(pipelines, pipeline), args.steps * BATCH // pipelines)
                assert batches == args.steps and records == args.steps * BATCH // pipelines
                totals = [totals[0] + ours_bytes, totals[1] + peer_bytes]
                print(f"{pipelines:>2} {pipeline:>8} {ours_bytes / 1e6:8.2f} {peer_bytes / 1e6:8.2f} "
                      f"{ours_bytes / peer_bytes:9.2f}")  # fmt: skip
            print(f"{pipelines:>2} {'all':>8} {totals[0] / 1e6:8.2f} {totals[1] / 1e6:8.2f} "
                  f"{totals[0] / totals[1]:9.2f}   (the corpus read {totals[0] / corpus:.1f}x by ours, "
                  f"{totals[1] / corpus:.1f}x by the peer)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
