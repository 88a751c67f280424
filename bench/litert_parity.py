r"""The tokenizer inside a LiteRT model against the Python tokenizer: the same packed ids on every line?

    python data/multilingual/make_corpora.py    # once: the corpora of eight languages in runs/multilingual/
    python bench/litert_parity.py               # every language and setting, and random strings
    python bench/litert_parity.py --languages=ja,de --settings=strip_lower --random_strings=500

For each language's SentencePiece models (runs/multilingual/spm/, trained as bench/tokenizer_parity.py trains
them, which it reuses) and each setting (keep_accents and do_lower_case each way), a `DeviceTokenizer` is
converted to a TFLite flatbuffer (builtins and tensorflow_text's custom ops only) and run in ai-edge-litert's
`InterpreterWithCustomOps` with tensorflow_text's registrars, BATCH lines a call. Each held-out line
(runs/multilingual/LANG/heldout.txt) and each random Unicode string (bench/tokenizer_parity.py's
`random_strings`: any plane, combining marks, whitespace, controls and NUL, digits and commas, compatibility
forms, quote pairs) is packed alone at SEQ_LENGTH, and consecutive lines as pairs at PAIR_LENGTH (truncation
on both sides), and compared with `AlbertTokenizer.pack` of the same text.

Prints the versions, a row per language and setting (lines, differing single rows, differing pair rows), the
totals and a few differing texts with both ids. Exits 1 when any row differs.
"""

import argparse
import pathlib
import sys
import time

import numpy as np

# bench/ is on sys.path (scripts run as python bench/NAME.py).
from tokenizer_parity import CORPORA, LANGUAGES, random_strings, train_model

SEQ_LENGTH = 512
PAIR_LENGTH = 48
BATCH = 256
SETTINGS = {
    "strip_lower": (False, True),
    "strip_cased": (False, False),
    "keep_lower": (True, True),
    "keep_cased": (True, False),
}
EXAMPLES = 4


def interpreter_runners(model_file, do_lower_case, keep_accents):
    """(single, pair): functions of lists of str → dict of int32 [batch, length] arrays, each a converted
    DeviceTokenizer.pack in its own flatbuffer run by LiteRT."""
    import tensorflow as tf
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    from albert_tf.serving.litert_text import DeviceTokenizer

    tokenizer = DeviceTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
    text = tf.TensorSpec([None], tf.string)

    def runner(function):
        converter = tf.lite.TFLiteConverter.from_concrete_functions([function], tokenizer)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True
        interpreter = InterpreterWithCustomOps(
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
            model_content=converter.convert(),
        )
        signature = interpreter.get_signature_runner()
        return lambda **texts: signature(**{k: np.array(v, object) for k, v in texts.items()})

    @tf.function(input_signature=[text])
    def single(text):
        return tokenizer.pack(text, seq_length=SEQ_LENGTH)

    @tf.function(input_signature=[text, text])
    def pair(text, text_b):
        return tokenizer.pack(text, text_b, seq_length=PAIR_LENGTH)

    return runner(single.get_concrete_function()), runner(pair.get_concrete_function())


def compare(lines, model_file, do_lower_case, keep_accents):
    """{"lines", "single", "pair": differing rows, "examples": [(text, device ids, python ids)]}."""
    from albert_tf.text.tokenizer import AlbertTokenizer

    python = AlbertTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
    single, pair = interpreter_runners(model_file, do_lower_case, keep_accents)
    row = {"lines": len(lines), "single": 0, "pair": 0, "examples": []}
    for start in range(0, len(lines), BATCH):
        batch = lines[start : start + BATCH]
        partners = batch[1:] + batch[:1]
        got = single(text=batch)["input_word_ids"]
        got_pairs = pair(text=batch, text_b=partners)["input_word_ids"]
        for index, (text, text_b) in enumerate(zip(batch, partners, strict=True)):
            expected = python.pack(text, seq_length=SEQ_LENGTH).input_word_ids
            if got[index].tolist() != expected:
                row["single"] += 1
                row["examples"].append((text, got[index].tolist(), expected))
            if got_pairs[index].tolist() != python.pack(text, text_b, seq_length=PAIR_LENGTH).input_word_ids:
                row["pair"] += 1
                row["examples"].append(((text, text_b), got_pairs[index].tolist(), None))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--corpora", type=pathlib.Path, default=CORPORA, help="make_corpora.py's output")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"of {', '.join(SETTINGS)}")
    parser.add_argument("--random_strings", type=int, default=1000, help="per model and setting")
    parser.add_argument("--max_lines", type=int, default=0, help="held-out lines per language (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="of the random strings")
    args = parser.parse_args()

    import ai_edge_litert
    import sentencepiece
    import tensorflow as tf
    import tensorflow_text

    print(
        f"tensorflow {tf.__version__}, tensorflow-text {tensorflow_text.__version__}, ai-edge-litert "
        f"{getattr(ai_edge_litert, '__version__', '?')}, sentencepiece {sentencepiece.__version__}",
        flush=True,
    )
    randoms = random_strings(args.random_strings, seed=args.seed)
    rows, started = [], time.perf_counter()
    for language in args.languages.split(","):
        heldout = (args.corpora / language / "heldout.txt").read_text(encoding="utf-8").splitlines()
        heldout = heldout[: args.max_lines] if args.max_lines else heldout
        for setting in args.settings.split(","):
            keep_accents, do_lower_case = SETTINGS[setting]
            prefix = args.corpora / "spm" / f"{language}_{'keep' if keep_accents else 'strip'}_accents"
            model_file = f"{prefix}.model"
            if not pathlib.Path(model_file).exists():
                model_file, _, _ = train_model(args.corpora / language / "train.txt", prefix, keep_accents)
            for what, lines in (("held-out", heldout), ("random", randoms)):
                begun = time.perf_counter()
                row = compare(lines, model_file, do_lower_case, keep_accents)
                rows.append((language, setting, what, row))
                print(
                    f"{language} {setting:<12} {what:<9} {row['lines']:>6} lines: {row['single']} single, "
                    f"{row['pair']} pair rows differ ({time.perf_counter() - begun:.0f} s)",
                    flush=True,
                )
    totals = {key: sum(row[key] for *_, row in rows) for key in ("lines", "single", "pair")}
    for what in ("held-out", "random"):
        subset = [row for _, _, kind, row in rows if kind == what]
        print(
            f"{what}: {sum(r['lines'] for r in subset)} lines, {sum(r['single'] for r in subset)} single and "
            f"{sum(r['pair'] for r in subset)} pair rows differ"
        )
    print(
        f"total: {totals['lines']} lines, {totals['single']} single and {totals['pair']} pair rows differ "
        f"({time.perf_counter() - started:.0f} s)"
    )
    shown = 0
    for language, setting, what, row in rows:
        for text, got, expected in row["examples"]:
            if shown < EXAMPLES * 3:
                shown += 1
                print(f"  {language} {setting} {what}: {ascii(text)[:200]}\n    device {got[:24]}")
                if expected is not None:
                    print(f"    python {expected[:24]}")
    return 1 if totals["single"] or totals["pair"] else 0


if __name__ == "__main__":
    sys.exit(main())
