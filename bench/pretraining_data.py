"""Pretraining-data builder: throughput and peak memory of the local and Beam runners, against the original's
builder (google-research/albert's create_pretraining_data.py) measured in the same run.

    python bench/pretraining_data.py --original=PATH [--scales=1,10] [--seq=128] [--workers=2] [--shards=4]

PATH is a checkout of the original (`git clone https://github.com/google-research/albert`). Builds records
from the bundled sample corpus repeated SCALE times, each build in a fresh process, with the same
SentencePiece model and the original's instance settings (its defaults, which are ours):
- original: its create_pretraining_data.py as its README runs it, under TensorFlow 2's tf.compat.v1, which it
  imports: one process, every instance in memory, shuffled, then written round-robin to the shards;
- local: `create_pretraining_data --runner=local` (albert_tf.pretraining.data.local), --workers processes;
- beam: `--runner=beam` with Beam's FnApiRunner in --workers processes (multi_processing mode).
Prints instances/s over the build (reading, tokenizing, masking, shuffling, writing; imports excluded; Beam's
pipeline start-up included), the peak RSS (VmHWM) of the main process and of the largest child, and the ratio
to the original. The local and Beam outputs are compared byte for byte.

The corpus has a space before each comma that follows a digit ("1,000" -> "1 ,000") for every builder: on
Python 3 the original's tokenizer fails on "<digit>," (it encodes the piece again as bytes, gets bytes pieces
back from sentencepiece and iterates their ints: AttributeError: 'int' object has no attribute 'lower').
"""

import argparse
import hashlib
import json
import pathlib
import re
import subprocess
import sys
import tempfile

from machine import describe  # bench/ is on sys.path: scripts run as python bench/NAME.py

REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
SPM = REPO / "albert_tf" / "sample" / "spm_8k.model"

_OURS = """
import json, resource, sys
runner, corpus, out, seq, workers, dupe, shards, spm = sys.argv[1:9]
from albert_tf.pretraining.data.instances import InstanceOptions
from albert_tf.pretraining.data.units import BuildSettings
if runner == "local":
    from albert_tf.pretraining.data.local import build
else:
    from albert_tf.pretraining.data.beam import build
outputs = [f"{out}-{i:05d}-of-{int(shards):05d}" for i in range(int(shards))]
if __name__ == "__main__":
    options = InstanceOptions(max_seq_length=int(seq))
    settings = BuildSettings(spm_model_file=spm, options=options, dupe_factor=int(dupe))
    summary = build([corpus], outputs, settings, num_workers=int(workers))
    # VmHWM, not RUSAGE_SELF: Linux carries the peak of the forked bench process over exec into ru_maxrss.
    with open("/proc/self/status") as status:
        main_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"instances": summary.stats["instances"], "seconds": summary.seconds,
                      "main_mb": main_kb / 1024,
                      "child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

_ORIGINAL = """
import json, runpy, sys, time, types
checkout, corpus, out, seq, workers, dupe, shards, spm = sys.argv[1:9]
import tensorflow as tf  # imported before the clock starts, as our builders' imports are
package = types.ModuleType("albert")  # its modules import each other as albert.<module>
package.__path__ = [checkout]
sys.modules["albert"] = package
# Its tokenization.py imports tensorflow_hub for TF-Hub modules only; the build gives --spm_model_file.
sys.modules.setdefault("tensorflow_hub", types.ModuleType("tensorflow_hub"))
outputs = [f"{out}-{i:05d}-of-{int(shards):05d}" for i in range(int(shards))]
sys.argv = ["create_pretraining_data.py", f"--input_file={corpus}", f"--output_file={','.join(outputs)}",
            f"--spm_model_file={spm}", f"--vocab_file={spm}", f"--max_seq_length={seq}",
            f"--dupe_factor={dupe}"]
start = time.perf_counter()
try:
    runpy.run_path(f"{checkout}/create_pretraining_data.py", run_name="__main__")
except SystemExit as end:  # tf.app.run exits
    if end.code:
        raise
seconds = time.perf_counter() - start
instances = sum(1 for path in outputs for _ in tf.data.TFRecordDataset(path))
with open("/proc/self/status") as status:
    main_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"instances": instances, "seconds": seconds, "main_mb": main_kb / 1024, "child_mb": 0}))
"""


def _digest(out, shards):
    digest = hashlib.sha256()
    for i in range(shards):
        digest.update(pathlib.Path(f"{out}-{i:05d}-of-{shards:05d}").read_bytes())
    return digest.hexdigest()[:12]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original", required=True, help="A checkout of google-research/albert.")
    parser.add_argument("--scales", default="1,10", help="Corpus sizes: the sample corpus repeated N times.")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--dupe_factor", type=int, default=1)
    args = parser.parse_args()
    original = pathlib.Path(args.original).resolve()
    if not (original / "create_pretraining_data.py").is_file():
        parser.error(f"--original={args.original}: no create_pretraining_data.py there")
    commit = subprocess.run(
        ["git", "-C", str(original), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"machine: {describe()}")
    print(
        f"seq {args.seq}, {args.workers} workers (the original: 1 process), {args.shards} shards, "
        f"dupe_factor {args.dupe_factor}; the original: {original} {commit or '(not a git checkout)'}"
    )
    print(
        f"{'corpus':>12} {'builder':>8} {'instances':>9} {'inst/s':>8} {'main MB':>8} {'child MB':>8} "
        f"{'vs original':>11}"
    )
    text = (SAMPLE / "sample_corpus.txt").read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    text = re.sub(r"([0-9]),", r"\1 ,", text)  # what the original's tokenizer can read (docstring)
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        for scale in (int(s) for s in args.scales.split(",")):
            corpus = directory / f"corpus-{scale}.txt"
            with corpus.open("w", encoding="utf-8") as file:
                for _ in range(scale):
                    file.write(text)
            label = f"x{scale} {corpus.stat().st_size / 1e6:.1f} MB"
            rates, digests = {}, {}
            for runner in ("original", "local", "beam"):
                out = directory / f"{runner}-{scale}"
                script = [_ORIGINAL, str(original)] if runner == "original" else [_OURS, runner]
                result = subprocess.run(
                    [sys.executable, "-c", *script, str(corpus), str(out), str(args.seq), str(args.workers),
                     str(args.dupe_factor), str(args.shards), str(SPM)],
                    check=True, capture_output=True, text=True, cwd=REPO,
                )  # fmt: skip
                figures = json.loads(result.stdout.strip().splitlines()[-1])
                rates[runner] = figures["instances"] / figures["seconds"]
                ratio = "-" if runner == "original" else f"{rates[runner] / rates['original']:.2f}x"
                print(
                    f"{label:>12} {runner:>8} {figures['instances']:>9,} {rates[runner]:>8,.0f} "
                    f"{figures['main_mb']:>8.0f} {figures['child_mb']:>8.0f} {ratio:>11}"
                )
                if runner != "original":
                    digests[runner] = _digest(out, args.shards)
            same = "the same bytes" if digests["local"] == digests["beam"] else "DIFFERENT BYTES"
            print(f"{label:>12} local and beam outputs: {same} ({digests['local']})")
            corpus.unlink()


if __name__ == "__main__":
    main()
