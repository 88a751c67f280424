"""Builds the quick start's pretraining records from sample_corpus.txt.

    python data/sample/make_sample_records.py
    python data/sample/make_sample_records.py --max_seq_length=128 --max_predictions_per_seq=20 \
        --output_dir=/tmp/records_128   # 128-token records, the shape the benchmarks use

Every 20th document goes to held-out evaluation records, the rest to training records; both are built by
`create_pretraining_data` with albert_tf/sample/spm_8k.model at seq 64, 10 predictions (by default),
dupe_factor 2 (eval: 1), GZIP, into albert_tf/sample/records/train-0000N-of-00004 and eval-00000-of-00001 (or
--output_dir; earlier builds' files there are replaced, nothing else is touched) with their manifests
(train.manifest.json, eval.manifest.json). The build runs in a scratch folder on relative paths, so the
manifests hold no path of this machine. The package ships these records: the quick start's recipe
(`--flagfile=tiny`) reads them as `--input_file=sample` and `--eval_input_file=sample`.

Why 64 tokens: the sample's documents are short (about 250 tokens), so records of 128 tokens are three
quarters full and give 6,317 training pairs; at 64 they are 87% full and give 10,325. In the quick start's
budget of tokens the tiny model learns more masked LM from them (bench/README.md, "Quick start
throughput").
"""

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
SHIPPED = HERE.parent.parent / "albert_tf" / "sample"  # what the package ships: the tokenizer, the records
EVAL_EVERY = 20
SHARDS = {"train": 4, "eval": 1}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output_dir", type=pathlib.Path, default=SHIPPED / "records")
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--max_predictions_per_seq", type=int, default=10)
    args = parser.parse_args()
    documents = HERE.joinpath("sample_corpus.txt").read_text(encoding="utf-8").split("\n\n")
    parts = {
        "train": [d for i, d in enumerate(documents) if i % EVAL_EVERY],
        "eval": [d for i, d in enumerate(documents) if not i % EVAL_EVERY],
    }
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copyfile(SHIPPED / "spm_8k.model", pathlib.Path(scratch, "spm_8k.model"))
        pathlib.Path(scratch, "records").mkdir()
        for name, docs in parts.items():
            text = pathlib.Path(scratch, f"{name}.txt")
            text.write_text("\n\n".join(d.strip("\n") for d in docs) + "\n", encoding="utf-8")
            subprocess.run(
                [
                    sys.executable, "-m", "albert_tf.create_pretraining_data",
                    f"--input_file={name}.txt",
                    f"--output_file=records/{name}@{SHARDS[name]}",
                    "--spm_model_file=spm_8k.model",
                    f"--max_seq_length={args.max_seq_length}",
                    f"--max_predictions_per_seq={args.max_predictions_per_seq}",
                    f"--dupe_factor={2 if name == 'train' else 1}", "--gzip",
                ],
                check=True, cwd=scratch,
            )  # fmt: skip
        target = args.output_dir
        target.mkdir(parents=True, exist_ok=True)
        for name in SHARDS:  # an earlier build's shards may be more or fewer: none of them stays
            for old in [*target.glob(f"{name}-*-of-*"), target / f"{name}.manifest.json"]:
                old.unlink(missing_ok=True)
        for built in pathlib.Path(scratch, "records").iterdir():
            shutil.copyfile(built, target / built.name)


if __name__ == "__main__":
    main()
