"""Pretraining-data builder: throughput and peak memory of the local and Beam runners, against the previous
builder (streaming, not globally shuffled) measured in the same run.

    python bench/pretraining_data.py [--scales=1,10] [--seq=128] [--workers=2] [--shards=4] [--dupe_factor=1]

Builds records from the bundled sample corpus repeated SCALE times, each build in a fresh process:
- previous: the builder this one replaced (git commit PREVIOUS: blocks in corpus order through a 10,000-record
  shuffle buffer, round-robin to the outputs), checked out of git into a temporary folder;
- local: `create_pretraining_data --runner=local` (albert_tf.pretraining.data.local), --workers processes;
- beam: `--runner=beam` with Beam's FnApiRunner in --workers processes (multi_processing mode).
Prints instances/s over the build (reading, tokenizing, masking, sorting, writing; imports excluded; Beam's
pipeline start-up included), the peak RSS (VmHWM) of the main process and of the largest child, and the ratio
to the previous builder. The local and Beam outputs are compared byte for byte.
"""

import argparse
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
SPM = REPO / "albert_tf" / "sample" / "spm_8k.model"
PREVIOUS = "6543acc9d224"  # the last commit with the streaming builder
MOVED = {
    "albert_tf.data.pretraining_instances": "albert_tf.pretraining.data.instances",
    "albert_tf.data.tfrecord_writer": "albert_tf.pretraining.data.records",
    "albert_tf.data.tokenizer": "albert_tf.text.tokenizer",
}

_RUN = """
import importlib, json, resource, sys
runner, corpus, out, seq, workers, dupe, shards, spm, previous = sys.argv[1:10]
from albert_tf.pretraining.data.instances import InstanceOptions
options = InstanceOptions(max_seq_length=int(seq))
outputs = [f"{out}-{i:05d}-of-{int(shards):05d}" for i in range(int(shards))]
if __name__ == "__main__":
    if runner == "previous":
        sys.path.insert(0, previous)
        builder = importlib.import_module("previous_builder")
        settings = builder.BuildSettings(spm_model_file=spm, options=options, dupe_factor=int(dupe))
        summary = builder.build([corpus], outputs, settings, num_workers=int(workers))
    else:
        from albert_tf.pretraining.data.units import BuildSettings
        settings = BuildSettings(spm_model_file=spm, options=options, dupe_factor=int(dupe))
        if runner == "local":
            from albert_tf.pretraining.data.local import build
            summary = build([corpus], outputs, settings, num_workers=int(workers))
        else:
            from albert_tf.pretraining.data.beam import build
            summary = build([corpus], outputs, settings, num_workers=int(workers))
    # VmHWM, not RUSAGE_SELF: Linux carries the peak of the forked bench process over exec into ru_maxrss.
    with open("/proc/self/status") as status:
        main_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"instances": summary.stats["instances"], "seconds": summary.seconds,
                      "main_mb": main_kb / 1024,
                      "child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _previous_builder(directory):
    """The previous builder and its corpus module, from git, importable as previous_builder."""
    for name in ("pretraining_builder", "corpus"):
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{PREVIOUS}:albert_tf/data/{name}.py"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        source = source.replace("from albert_tf.data import corpus\n", "import previous_corpus as corpus\n")
        for before, after in MOVED.items():  # the modules it imports from today's package, where they now are
            source = source.replace(f"from {before} import", f"from {after} import")
        (directory / f"previous_{name.replace('pretraining_', '')}.py").write_text(source)
    return directory


def _digest(out, shards):
    digest = hashlib.sha256()
    for i in range(shards):
        digest.update(pathlib.Path(f"{out}-{i:05d}-of-{shards:05d}").read_bytes())
    return digest.hexdigest()[:12]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="1,10", help="Corpus sizes: the sample corpus repeated N times.")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--dupe_factor", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        previous = _previous_builder(directory)
        text = (SAMPLE / "sample_corpus.txt").read_text(encoding="utf-8").rstrip("\n") + "\n\n"
        print(
            f"seq {args.seq}, {args.workers} workers, {args.shards} shards, dupe_factor {args.dupe_factor}; "
            f"previous builder: git {PREVIOUS}"
        )
        print(
            f"{'corpus':>12} {'builder':>8} {'instances':>9} {'inst/s':>8} {'main MB':>8} {'child MB':>8} "
            f"{'vs previous':>11}"
        )
        for scale in (int(s) for s in args.scales.split(",")):
            corpus = directory / f"corpus-{scale}.txt"
            with corpus.open("w", encoding="utf-8") as file:
                for _ in range(scale):
                    file.write(text)
            label = f"x{scale} {corpus.stat().st_size / 1e6:.1f} MB"
            rates, digests = {}, {}
            for runner in ("previous", "local", "beam"):
                out = directory / f"{runner}-{scale}"
                result = subprocess.run(
                    [sys.executable, "-c", _RUN, runner, str(corpus), str(out), str(args.seq),
                     str(args.workers), str(args.dupe_factor), str(args.shards), str(SPM),
                     str(previous)],
                    check=True, capture_output=True, text=True, cwd=REPO,
                )  # fmt: skip
                figures = json.loads(result.stdout.strip().splitlines()[-1])
                rates[runner] = figures["instances"] / figures["seconds"]
                ratio = "-" if runner == "previous" else f"{rates[runner] / rates['previous']:.2f}x"
                print(
                    f"{label:>12} {runner:>8} {figures['instances']:>9,} {rates[runner]:>8,.0f} "
                    f"{figures['main_mb']:>8.0f} {figures['child_mb']:>8.0f} {ratio:>11}"
                )
                if runner != "previous":
                    digests[runner] = _digest(out, args.shards)
            same = "the same bytes" if digests["local"] == digests["beam"] else "DIFFERENT BYTES"
            print(f"{label:>12} local and beam outputs: {same} ({digests['local']})")
            corpus.unlink()


if __name__ == "__main__":
    main()
