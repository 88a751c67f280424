"""Builds the quick start's pretraining records from sample_corpus.txt.

    python data/sample/make_sample_records.py

Every 20th document goes to held-out evaluation records, the rest to training records; both are built by
`create_pretraining_data` with spm_8k.model at seq 128, 20 predictions, dupe_factor 2 (eval: 1), GZIP, into
records/train-0000N-of-00004 and records/eval-00000-of-00001 with their manifests (train.manifest.json,
eval.manifest.json). The build runs in a scratch folder on relative paths, so the manifests hold no path of
this machine. configs/pretrain/tiny.flags reads them.
"""

import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
EVAL_EVERY = 20
SHARDS = {"train": 4, "eval": 1}


def main():
    documents = HERE.joinpath("sample_corpus.txt").read_text(encoding="utf-8").split("\n\n")
    parts = {
        "train": [d for i, d in enumerate(documents) if i % EVAL_EVERY],
        "eval": [d for i, d in enumerate(documents) if not i % EVAL_EVERY],
    }
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copyfile(HERE / "spm_8k.model", pathlib.Path(scratch, "spm_8k.model"))
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
                    "--max_seq_length=128", "--max_predictions_per_seq=20",
                    f"--dupe_factor={2 if name == 'train' else 1}", "--gzip",
                ],
                check=True, cwd=scratch,
            )  # fmt: skip
        target = HERE / "records"
        for old in target.iterdir():
            old.unlink()
        for built in pathlib.Path(scratch, "records").iterdir():
            shutil.copyfile(built, target / built.name)


if __name__ == "__main__":
    main()
