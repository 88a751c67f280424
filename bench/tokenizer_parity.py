r"""Python tokenizer vs in-graph tokenizer: the same ids on every line of some text files?

    python bench/tokenizer_parity.py --spm_model_file=albert_tf/sample/spm_8k.model \
        --input=data/sample/sample_corpus.txt

`albert_tf.text.tokenizer.AlbertTokenizer` segments with the `sentencepiece` package, `InGraphTokenizer`
with the SentencePiece compiled into tensorflow-text's ops; the two are separate builds, so this compares
them line by line on real text. Prints the versions, the lines compared, the lines whose ids differ and the
first few of those. Blank lines are skipped; invalid UTF-8 is compared as both tokenizers read it (replaced).
Exits 1 when any line differs.
"""

import argparse
import sys

BATCH = 2000


def lines_of(paths, max_lines):
    count = 0
    for path in paths:
        with open(path, "rb") as file:
            for raw in file:
                line = raw.rstrip(b"\r\n")
                if line.strip():
                    yield path, line
                    count += 1
                    if count == max_lines:
                        return


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--spm_model_file", required=True)
    parser.add_argument("--input", required=True, help="comma-separated text files")
    parser.add_argument("--max_lines", type=int, default=0, help="stop after this many lines (0: all)")
    args = parser.parse_args()

    import sentencepiece
    import tensorflow as tf
    import tensorflow_text

    from albert_tf.text.tf_tokenizer import InGraphTokenizer
    from albert_tf.text.tokenizer import AlbertTokenizer

    python, graph = AlbertTokenizer(args.spm_model_file), InGraphTokenizer(args.spm_model_file)
    print(
        f"sentencepiece {sentencepiece.__version__}, tensorflow-text {tensorflow_text.__version__}, "
        f"{args.spm_model_file} ({python.vocab_size} pieces)"
    )
    compared, differing = 0, []
    batch = []

    def compare(batch):
        ids = graph.tokenize(tf.constant([line for _, line in batch])).to_list()
        for (path, line), got in zip(batch, ids, strict=True):
            text = line.decode("utf-8", errors="replace")
            expected = python.encode(text)
            if got != expected:
                differing.append((path, text, python.tokenize(text), got, expected))

    for item in lines_of(args.input.split(","), args.max_lines):
        batch.append(item)
        if len(batch) == BATCH:
            compare(batch)
            compared += len(batch)
            batch = []
    if batch:
        compare(batch)
        compared += len(batch)
    print(f"{compared} lines compared, {len(differing)} with different ids")
    for path, text, pieces, got, expected in differing[:5]:
        print(f"  {path}: {text[:100]!r}\n    python pieces {pieces[:30]}\n    in-graph {got[:30]}\n"
              f"    python   {expected[:30]}")  # fmt: skip
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
