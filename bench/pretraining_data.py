"""Pretraining-data builder throughput and peak memory, against the original builder's measured rate.

    python bench/pretraining_data.py [--scale=4] [--dupe_factor=1]

Builds MLM + SOP records from the bundled sample corpus repeated --scale times, at seq 128 and 512, with 1 and
2 workers, each run in a fresh process. Prints instances/s (build time: reading, tokenizing, masking,
writing; imports excluded), the main process's and the largest worker's peak RSS, and the ratio to the
original google-research/albert builder, measured at 360 instances/s at seq 128 on 2 cores (dupe_factor 1,
30k vocabulary, Python-documentation text, TensorFlow import excluded). That builder cannot run beside us:
it needs TensorFlow 1 (tf.flags, tf.gfile), which does not install with Python 3.11.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
ORIGINAL_INSTANCES_PER_S = 360.0

_RUN = """
import json, resource, sys
from albert_tf.data.pretraining_builder import BuildSettings, build
from albert_tf.data.pretraining_instances import InstanceOptions
corpus, out, seq, workers, dupe = sys.argv[1:6]
settings = BuildSettings(spm_model_file=sys.argv[6], options=InstanceOptions(max_seq_length=int(seq)),
                         dupe_factor=int(dupe))
summary = build([corpus], [out + "-0", out + "-1"], settings, num_workers=int(workers))
# VmHWM, not RUSAGE_SELF: Linux carries the peak of the forked bench process over exec into ru_maxrss.
with open("/proc/self/status") as status:
    main_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"instances": summary.stats["instances"], "seconds": summary.seconds,
                  "main_mb": main_kb / 1024,
                  "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=4, help="Repeat the sample corpus this many times.")
    parser.add_argument("--dupe_factor", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        corpus = pathlib.Path(directory) / "corpus.txt"
        text = (SAMPLE / "sample_corpus.txt").read_text(encoding="utf-8").rstrip("\n") + "\n\n"
        with corpus.open("w", encoding="utf-8") as file:
            for _ in range(args.scale):
                file.write(text)
        del text
        print(
            f"corpus: sample x{args.scale} ({corpus.stat().st_size / 1e6:.1f} MB), "
            f"dupe_factor {args.dupe_factor}"
        )
        print(
            f"{'seq':>4} {'workers':>7} {'instances':>9} {'inst/s':>8} {'main MB':>8} {'worker MB':>9} "
            f"{'vs original':>11}"
        )
        for seq in (128, 512):
            for workers in (1, 2):
                result = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _RUN,
                        str(corpus),
                        f"{directory}/out",
                        str(seq),
                        str(workers),
                        str(args.dupe_factor),
                        str(SAMPLE / "spm_8k.model"),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                figures = json.loads(result.stdout.strip().splitlines()[-1])
                rate = figures["instances"] / figures["seconds"]
                worker_mb = figures["worker_mb"] if workers > 1 else 0.0
                ratio = f"{rate / ORIGINAL_INSTANCES_PER_S:.1f}x" if seq == 128 else "-"
                print(
                    f"{seq:>4} {workers:>7} {figures['instances']:>9,} {rate:>8,.0f} "
                    f"{figures['main_mb']:>8.0f} {worker_mb:>9.0f} {ratio:>11}"
                )


if __name__ == "__main__":
    main()
