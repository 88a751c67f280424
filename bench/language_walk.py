r"""The README's corpus walk on a corpus in another language: does the tiny ALBERT learn it?

    python data/multilingual/make_corpora.py --walk          # Japanese and Vietnamese from Debian packages
    python bench/language_walk.py --corpus=runs/multilingual/walk/ja.txt --language=ja
    python bench/language_walk.py --corpus=runs/multilingual/walk/vi.txt --language=vi --vocab_size=4339

Runs, as a user does, the README's commands ("Your corpus to a pretrained model") with --keep_accents on both
data commands: every 20th document of --corpus held out, `train_tokenizer`, `create_pretraining_data` for the
training and the held-out records, `run_pretraining --flagfile=tiny` (2,000 steps of 32 x 64 tokens). Reads
the final held-out evaluation and prints masked-LM accuracy against `masked_lm_baseline_accuracy` (always
the most frequent target token, counted on the same held-out records) and their ratio; target 2x. Also prints
what the tokenizer command said about the corpus's marks, and how many of the held-out text's marked letters
(combining marks, or letters NFKD decomposes) the tokenizer keeps as pieces of their own rather than <unk>.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import unicodedata

from machine import describe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL = re.compile(r"eval at step (\d+): (.*)")


def split_documents(corpus, work):
    """corpus (blank lines between documents) → work/corpus/text.txt and work/heldout/text.txt, every 20th
    document held out (the README's awk). Returns (documents, held-out documents, held-out lines)."""
    with open(corpus, encoding="utf-8") as file:
        documents = [d.strip("\n") for d in re.split(r"\n\s*\n", file.read()) if d.strip()]
    parts = {"corpus": [], "heldout": []}
    for number, document in enumerate(documents, 1):
        parts["corpus" if number % 20 else "heldout"].append(document)
    for name, kept in parts.items():
        os.makedirs(os.path.join(work, name), exist_ok=True)
        with open(os.path.join(work, name, "text.txt"), "w", encoding="utf-8") as file:
            file.write("\n\n".join(kept) + "\n")
    lines = [line for document in parts["heldout"] for line in document.splitlines() if line.strip()]
    return len(documents), len(parts["heldout"]), lines


def run(module, flags, work):
    """Runs python -m module flags in work; returns its stderr (where absl logs), stops on failure."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", module, *flags], cwd=work, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"language_walk: {module} failed:\n{done.stderr[-3000:]}")
    print(f"  {module}: {time.monotonic() - started:.0f} s", flush=True)
    return done.stdout + done.stderr


def marked_letters_kept(spm_model, lines):
    """(letters whose NFKD form differs or that are combining marks, those the tokenizer gives a piece
    other than <unk>) over lines, with --keep_accents."""
    from albert_tf.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(spm_model, keep_accents=True)
    marked = kept = 0
    for line in lines:
        pieces = tokenizer.tokenize(line)
        text = "".join(p for p in pieces if p != "<unk>")
        for character in set(tokenizer.normalize(line)):
            if unicodedata.combining(character) or unicodedata.normalize("NFKD", character) != character:
                count = line.lower().count(character)
                marked += count
                kept += min(count, text.count(character))
    return marked, kept


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--corpus", required=True, help="one sentence a line, blank lines between documents")
    parser.add_argument("--language", required=True, help="a name for the work folder and the printout")
    parser.add_argument("--work_dir", default=os.path.join(ROOT, "runs", "language_walk"))
    parser.add_argument("--vocab_size", type=int, default=8000, help="the README's")
    parser.add_argument(
        "--noadd_dummy_prefix", action="store_true",
        help="train_tokenizer's flag for corpora written without spaces (docs/data.md)",
    )  # fmt: skip
    parser.add_argument(
        "--steps", type=int, default=None,
        help="default: the tiny recipe's 2,000 (its 200 warm-up steps, or a tenth of fewer)",
    )  # fmt: skip
    args = parser.parse_args()
    work = os.path.join(os.path.abspath(args.work_dir), args.language)
    if os.path.exists(work):
        raise SystemExit(f"language_walk: {work} exists (a finished or earlier run): remove it first")
    os.makedirs(work)
    print(describe())
    size = os.path.getsize(args.corpus)
    documents, heldout, lines = split_documents(args.corpus, work)
    print(f"{args.language}: {args.corpus}, {size / 1e6:.2f} MB, {documents:,} documents ({heldout:,} out)")
    started = time.monotonic()
    said = run(
        "albert_tf.train_tokenizer",
        ["--input=corpus/*.txt", "--model_prefix=spm/albert", f"--vocab_size={args.vocab_size}",
         "--keep_accents", *(["--noadd_dummy_prefix"] if args.noadd_dummy_prefix else [])],
        work,
    )  # fmt: skip
    marks = [line.split("train_tokenizer: ", 1)[1] for line in said.splitlines() if "combining marks" in line]
    shape = ["--spm_model_file=spm/albert.model", "--max_seq_length=64", "--max_predictions_per_seq=10",
             "--keep_accents"]  # fmt: skip
    run(
        "albert_tf.create_pretraining_data",
        ["--input_file=corpus/*.txt", "--output_file=records/train@4", "--dupe_factor=2", *shape],
        work,
    )
    run(
        "albert_tf.create_pretraining_data",
        ["--input_file=heldout/*.txt", "--output_file=records/eval@1", "--dupe_factor=1", *shape],
        work,
    )
    # Fewer steps than the recipe's 200 warm-up steps (a quick look): warm up a tenth of them.
    steps = []
    if args.steps:
        steps = [f"--num_train_steps={args.steps}", f"--num_warmup_steps={min(200, args.steps // 10)}"]
    log = run(
        "albert_tf.run_pretraining",
        ["--flagfile=tiny", "--input_file=records/train.manifest.json",
         "--eval_input_file=records/eval.manifest.json", "--spm_model_file=spm/albert.model",
         "--output_dir=runs/model", *steps],
        work,
    )  # fmt: skip
    evaluations = EVAL.findall(log)
    if not evaluations:
        raise SystemExit(f"language_walk: no evaluation in run_pretraining's output:\n{log[-3000:]}")
    step, values = evaluations[-1]
    results = dict(item.split(" ") for item in values.split(", "))
    accuracy = float(results["masked_lm_accuracy"])
    baseline = float(results["masked_lm_baseline_accuracy"])
    marked, kept = marked_letters_kept(os.path.join(work, "spm", "albert.model"), lines)
    with open(os.path.join(work, "runs", "model", "tokenizer.json"), encoding="utf-8") as file:
        settings = json.load(file)
    print(f"marks: {marks[0] if marks else '(none reported)'}")
    print(f"model directory's tokenizer.json: {settings}")
    print(f"held-out marked letters kept as pieces: {kept:,} of {marked:,}")
    print(
        f"{args.language}: step {step}, masked_lm_accuracy {accuracy:.4f}, most frequent token "
        f"{baseline:.4f}: {accuracy / baseline:.2f}x (target 2x); sentence_order_accuracy "
        f"{float(results['sentence_order_accuracy']):.4f}; {time.monotonic() - started:.0f} s in all"
    )


if __name__ == "__main__":
    main()
