"""Builds the quick start's pretraining records from sample_corpus.txt.

    python data/sample/make_sample_records.py

Every 20th document goes to held-out evaluation records, the rest to training records; both are built by
`create_pretraining_data` with spm_8k.model at seq 128, 20 predictions, dupe_factor 2 (eval: 1), GZIP.
configs/pretrain/tiny.flags reads them.
"""

import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
EVAL_EVERY = 20


def main():
    documents = HERE.joinpath("sample_corpus.txt").read_text(encoding="utf-8").split("\n\n")
    parts = {
        "train": [d for i, d in enumerate(documents) if i % EVAL_EVERY],
        "eval": [d for i, d in enumerate(documents) if not i % EVAL_EVERY],
    }
    with tempfile.TemporaryDirectory() as scratch:
        for name, docs in parts.items():
            text = pathlib.Path(scratch, f"{name}.txt")
            text.write_text("\n\n".join(d.strip("\n") for d in docs) + "\n", encoding="utf-8")
            subprocess.run(
                [
                    sys.executable, "-m", "albert_tf.create_pretraining_data",
                    f"--input_file={text}",
                    f"--output_file={HERE / 'records' / f'{name}.tfrecord.gz'}",
                    f"--spm_model_file={HERE / 'spm_8k.model'}",
                    "--max_seq_length=128", "--max_predictions_per_seq=20",
                    f"--dupe_factor={2 if name == 'train' else 1}", "--gzip",
                ],
                check=True,
            )  # fmt: skip


if __name__ == "__main__":
    main()
