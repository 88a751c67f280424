r"""Our tokenizers against each other and against transformers': the same ids on every line?

    python data/multilingual/make_corpora.py    # once: the corpora of eight languages in runs/multilingual/
    python bench/tokenizer_parity.py            # every language and setting, and random strings
    python bench/tokenizer_parity.py --languages=ja,th --random_strings=500   # a quicker look

On the held-out lines of each language (Japanese, Chinese, Vietnamese, Hindi, Thai, Korean, Arabic, German:
runs/multilingual/LANG/heldout.txt) and on random Unicode strings, with keep_accents True/False and
do_lower_case True/False, four tokenizers give each line's ids (no [CLS]/[SEP]):

- python: `albert_tf.text.tokenizer.AlbertTokenizer.encode` (the `sentencepiece` package);
- graph: `InGraphTokenizer.tokenize` in eager TensorFlow (tensorflow-text's ops), BATCH lines a call;
- served: the same tokenizer inside an exported encoder (`export_saved_model(..., "encoder",
  max_seq_length=512)`) loaded by TensorFlow's C++ loader (`Servable`), its `preprocess` signature, the ids
  between [CLS] and [SEP]; rows longer than 512 are truncated there, so only lines whose ids fit are compared;
- hf: transformers' slow `AlbertTokenizer(vocab_file, do_lower_case, keep_accents, remove_space=True)`,
  `tokenizer(line, add_special_tokens=False)["input_ids"]`, which ports the original ALBERT's
  `preprocess_text` and digit-comma rule.

Each language gets two SentencePiece models (runs/multilingual/spm/), trained on its train.txt with
`spm_training.train` (VOCAB_SIZE pieces, or fewer if the text supports fewer; do_lower_case=True), one with
keep_accents True on text normalized so, one with the original's normalization; a setting uses the model
of its keep_accents with either do_lower_case. The random strings (seeded: code points of every plane,
combining marks, whitespace, controls and NUL, digits and commas, no surrogates) go through every
language's models the same way.

Prints the CPU, the versions, a table per language and setting (lines, lines compared through the served
model, lines whose ids differ for each pair of tokenizers, and lines where transformers' public API differs
from its `_tokenize`, the port of the original's algorithm: the API reads [CLS], [SEP], [MASK], <unk> and
<pad> in the text as those tokens, the original as text), the same for the random strings and for a few
edge cases (EDGE_CASES), a few differing lines with each tokenizer's ids, and the code points that, as
one-character lines, the in-graph tokenizer normalizes otherwise than Python (the served model runs the same
graph; transformers runs Python's normalization). Exits 1 when any pair differs anywhere.

The former check, the Python against the in-graph tokenizer on any text files with one model, stays:

    python bench/tokenizer_parity.py --spm_model_file=albert_tf/sample/spm_8k.model \
        --input=data/sample/sample_corpus.txt
"""

import argparse
import itertools
import os
import pathlib
import random
import re
import sys
import tempfile
import time
import unicodedata

# bench/ is on sys.path (scripts run as python bench/NAME.py).
from machine import describe

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPORA = ROOT / "runs" / "multilingual"
LANGUAGES = ("ja", "zh", "vi", "hi", "th", "ko", "ar", "de")
VOCAB_SIZE = 4000
MAX_SEQ_LENGTH = 512
BATCH = 256
TOKENIZERS = ("python", "graph", "served", "hf")
PAIRS = tuple(itertools.combinations(TOKENIZERS, 2))
# (keep_accents, do_lower_case) of each setting, as the table names them.
SETTINGS = ((False, True), (False, False), (True, True), (True, False))
EXAMPLES = 3  # differing lines kept per row and pair


def setting_name(keep_accents, do_lower_case):
    return f"{'keep' if keep_accents else 'strip'} accents, {'lower' if do_lower_case else 'cased'}"


# ------------------------------------------------------------------------------------------------------------
# Random strings


def _code_points(predicate, planes=range(17)):
    """The code points of planes (no surrogates) for whose character predicate holds."""
    return [
        code
        for plane in planes
        for code in range(plane << 16, (plane + 1) << 16)
        if not 0xD800 <= code <= 0xDFFF and predicate(chr(code))
    ]


def random_strings(count, seed=0):
    """count seeded strings of 0 to 40 characters, each drawn from a pool: any code point of any plane
    (unassigned, private use and noncharacters too), combining marks, whitespace, C0/C1 controls and NUL,
    digits of any script next to commas (the digit-comma rule), ASCII, compatibility forms (NFKD changes
    them), and the quote pairs `` and '' that normalization rewrites."""
    rng = random.Random(seed)
    pools = {
        "any": None,
        "combining": _code_points(unicodedata.combining, planes=(0, 1, 14)),
        "space": _code_points(str.isspace, planes=(0,)),
        "control": [*range(0x20), *range(0x7F, 0xA0)],
        "digit": _code_points(str.isdigit, planes=(0, 1)),
        "ascii": list(range(0x20, 0x7F)),
        "compatibility": _code_points(lambda c: unicodedata.decomposition(c).startswith("<"), planes=(0, 1)),
    }
    extras = (",", ",", "``", "''", "\x00", "\u2581", " ")

    def character():
        pool = rng.choice([*pools, "extra"])
        if pool == "any":
            code = rng.randrange(0x110000 - 0x800)
            return chr(code + 0x800 if code >= 0xD800 else code)  # past the surrogates
        if pool == "extra":
            return rng.choice(extras)
        return chr(rng.choice(pools[pool]))

    return ["".join(character() for _ in range(rng.randint(0, 40))) for _ in range(count)]


# ------------------------------------------------------------------------------------------------------------
# SentencePiece models


def train_model(train_file, prefix, keep_accents):
    """Trains prefix.model on train_file (lowercased; marks kept or not): VOCAB_SIZE pieces, or the most the
    text supports. Returns (model path, pieces, seconds)."""
    from albert_tf.text import spm_training

    started = time.perf_counter()
    vocab_size = VOCAB_SIZE
    while True:
        try:
            spm_training.train(
                [str(train_file)], str(prefix), vocab_size=vocab_size, do_lower_case=True,
                keep_accents=keep_accents, character_coverage=0.9995, num_threads=1,
            )  # fmt: skip
            break
        except spm_training.TrainingError as error:
            # "... support a vocabulary of at most N pieces": retry with N.
            found = re.search(r"at most ([\d,]+) pieces", str(error))
            if not found:
                raise
            vocab_size = int(found.group(1).replace(",", ""))
    return f"{prefix}.model", vocab_size, time.perf_counter() - started


# ------------------------------------------------------------------------------------------------------------
# The four tokenizers


def python_ids(model_file, do_lower_case, keep_accents, lines):
    from albert_tf.text.tokenizer import AlbertTokenizer

    tokenizer = AlbertTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
    return [tokenizer.encode(line) for line in lines]


def graph_ids(model_file, do_lower_case, keep_accents, lines):
    """InGraphTokenizer's ids, BATCH lines a call (made here: after any seeding, see its docstring)."""
    import tensorflow as tf

    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    tokenizer = InGraphTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
    ids = []
    for start in range(0, len(lines), BATCH):
        ids += tokenizer.tokenize(tf.constant(lines[start : start + BATCH])).to_list()
    return ids


def export_encoder(model_file, do_lower_case, keep_accents, export_dir):
    """An encoder SavedModel of a tiny ALBERT with the model's vocabulary: only its preprocessing matters."""
    from albert_tf.config import AlbertConfig
    from albert_tf.models import AlbertEncoder
    from albert_tf.serving.export import export_saved_model
    from albert_tf.text.tokenizer import load_sentencepiece

    config = AlbertConfig(
        vocab_size=load_sentencepiece(model_file).get_piece_size(), embedding_size=8, hidden_size=8,
        num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
        max_position_embeddings=MAX_SEQ_LENGTH,
    )  # fmt: skip
    return export_saved_model(
        AlbertEncoder(config), model_file, export_dir, "encoder", max_seq_length=MAX_SEQ_LENGTH,
        do_lower_case=do_lower_case, keep_accents=keep_accents,
    )  # fmt: skip


def served_ids(export_dir, lines):
    """The ids between [CLS] and [SEP] of the served preprocess signature's rows, BATCH lines a request."""
    from albert_tf.serving.servable import Servable

    ids = []
    with Servable(export_dir) as servable:
        for start in range(0, len(lines), BATCH):
            rows = servable.run("preprocess", {"text": lines[start : start + BATCH]})
            for row, mask in zip(rows["input_word_ids"], rows["input_mask"], strict=True):
                length = int(mask.sum())
                assert row[0] == 2 and row[length - 1] == 3, row[:length]  # [CLS] ... [SEP]
                ids.append(row[1 : length - 1].tolist())
    return ids


def hf_ids(model_file, do_lower_case, keep_accents, lines):
    """transformers' ids through its public API, and how many lines its port of the original's algorithm
    (`_tokenize`, what the API runs on the text between special tokens) gives other ids."""
    from transformers import AlbertTokenizer

    tokenizer = AlbertTokenizer(
        vocab_file=model_file, do_lower_case=do_lower_case, keep_accents=keep_accents, remove_space=True
    )
    ids = [tokenizer(line, add_special_tokens=False)["input_ids"] for line in lines]
    port = [tokenizer.convert_tokens_to_ids(tokenizer._tokenize(line)) for line in lines]
    return ids, sum(a != b for a, b in zip(ids, port, strict=True))


# ------------------------------------------------------------------------------------------------------------
# Comparison


def compare(lines, model_file, do_lower_case, keep_accents, export_dir):
    """One row of the table: {"lines", "compared", pair: differing lines, "hf_port", "examples", "seconds"};
    export_dir: export_encoder's SavedModel of the same model and setting."""
    started = time.perf_counter()
    ids = {"served": served_ids(export_dir, lines)}
    seconds = {"served": time.perf_counter() - started}
    for name, function in (("python", python_ids), ("graph", graph_ids), ("hf", hf_ids)):
        started = time.perf_counter()
        ids[name] = function(model_file, do_lower_case, keep_accents, lines)
        seconds[name] = time.perf_counter() - started
    ids["hf"], hf_port = ids["hf"]
    # A row the served model truncated is compared with the others only where the Python ids fit.
    fits = [len(python) <= MAX_SEQ_LENGTH - 2 for python in ids["python"]]
    row = {"lines": len(lines), "compared": sum(fits), "hf_port": hf_port, "examples": {}, "seconds": seconds}
    for first, second in PAIRS:
        served = "served" in (first, second)
        differing = [
            index
            for index in range(len(lines))
            if (fits[index] or not served) and ids[first][index] != ids[second][index]
        ]
        row[(first, second)] = len(differing)
        for index in differing[:EXAMPLES]:
            every = {name: ids[name][index] for name in TOKENIZERS}
            row["examples"].setdefault(lines[index], ([], every))[0].append(f"{first}≠{second}")
    return row


COUNTS = ("lines", "compared", *PAIRS, "hf_port")


def print_table(title, rows):
    """rows: (language, setting name, row) → a table with a column per pair of tokenizers, and one of the
    lines where transformers' API and its `_tokenize` disagree. Returns the totals."""
    names = ["lines", "served", *(f"{a[:2]}≠{b[:2]}" for a, b in PAIRS), "api≠port"]
    print(f"\n{title}\n{'language':<9} {'setting':<24} " + " ".join(f"{name:>6}" for name in names))
    totals = dict.fromkeys(COUNTS, 0)
    for language, setting, row in rows:
        print(f"{language:<9} {setting:<24} " + " ".join(f"{row[key]:>6}" for key in COUNTS))
        for key in COUNTS:
            totals[key] += row[key]
    print(f"{'total':<9} {'':<24} " + " ".join(f"{totals[key]:>6}" for key in COUNTS))
    return totals


def print_examples(title, rows, limit=6):
    """Up to limit distinct differing lines: the rows they differ in, and each tokenizer's ids (first 40)."""
    where, first_ids = {}, {}
    for language, setting, row in rows:
        for line, (pairs, ids) in row["examples"].items():
            where.setdefault(line, []).append(f"{language} {setting}: {', '.join(pairs)}")
            first_ids.setdefault(line, (language, setting, ids))
    if where:
        print(f"\n{title}: {len(where)} distinct differing lines (the first {EXAMPLES} of each row and pair)")
    for line in list(where)[:limit]:
        language, setting, ids = first_ids[line]
        print(f"  {line[:150]!r}\n    differs in {len(where[line])} rows: {'; '.join(where[line][:3])}")
        print(f"    ids with the {language} model, {setting}:")
        for name in TOKENIZERS:
            print(f"      {name:<7} {ids[name][:40]}")


# ------------------------------------------------------------------------------------------------------------
# Every code point: where the in-graph normalization differs from Python's


def runs_of(codes):
    """Sorted code points → [[first, last]] of consecutive runs."""
    runs = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return runs


def scan_code_points(model_file):
    """For each setting, the code points (no surrogates) that, as one-character lines, the in-graph tokenizer
    normalizes otherwise than Python's `preprocess_text`: {setting: [(code, python's, in-graph)]}.

    The served model runs the same graph; transformers' `preprocess_text` is Python's. Context (final sigma,
    runs of whitespace, quote pairs) is left to the lines, random strings and edge cases."""
    import tensorflow as tf

    from albert_tf.text.normalization import preprocess_text
    from albert_tf.text.tf_tokenizer import InGraphTokenizer

    characters = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    found = {}
    for keep_accents, do_lower_case in SETTINGS:
        graph = InGraphTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
        normalized = []
        for start in range(0, len(characters), 100_000):
            batch = graph.normalize(tf.constant(characters[start : start + 100_000])).numpy()
            normalized += [text.decode("utf-8") for text in batch]
        found[setting_name(keep_accents, do_lower_case)] = [
            (ord(char), python, ours)
            for char, ours in zip(characters, normalized, strict=True)
            if (python := preprocess_text(char, lower=do_lower_case, keep_accents=keep_accents)) != ours
        ]
    return found


def print_scan(found):
    """Per setting: how many code points differ, and each run of them with an example."""
    print(
        f"\nCode points normalized otherwise in-graph than in Python (of {0x110000 - 0x800:,}; Python's "
        f"unicodedata {unicodedata.unidata_version}; category as Python sees it)"
    )
    for setting, differing in found.items():
        categories = sorted({unicodedata.category(chr(code)) for code, _, _ in differing})
        print(f"  {setting}: {len(differing)} ({', '.join(categories) or '-'})")
        by_code = {code: (python, graph) for code, python, graph in differing}
        for first, last in runs_of(sorted(by_code)):
            python, graph = by_code[first]
            span = f"U+{first:04X}" + (f"-U+{last:04X}" if last > first else "")
            print(
                f"    {span:<15} {last - first + 1:>3} {unicodedata.category(chr(first))}, e.g. "
                f"python {ascii(python)}, graph {ascii(graph)}"
            )


EDGE_CASES = (
    # Special tokens written as text: the original reads them as text, transformers' API as the tokens.
    "Das [MASK] und [CLS] oder <unk>, <pad> und [SEP] als Text.",
    # Final sigma (a contextual lowercase), dotted I, a titlecase digraph, a ligature, circled, superscript,
    # fullwidth and Arabic-Indic digits before commas (the digit-comma rule, after NFKD or not).
    "ΟΔΟΣ ΑΣ Σ İstanbul ǅemal ﬁle ①,② ²,³ １,０００ ٣,٤ 1,000 1990, 12,",
    # Capitals that Unicode 14.0 added (Glagolitic, Latin, Vithkuqi): Python 3.11 lowercases them.
    "Ⱟ Ꟁ Ꟑ Ꟗ Ꟙ 𐕰𐕱𐕲 x",
    # Letters that Unicode 15.0 and 16.0 added with compatibility decompositions (Cyrillic modifier letters,
    # outlined Latin letters and digits): unassigned for Python 3.11.
    "\U0001e030\U0001e031 \U0001ccd6\U0001ccd7 \U0001ccf0",
    # Quote pairs, NUL, a lone combining mark between controls, the piece prefix as text.
    "``quoted'' a\x00B \x01\u0301\x7f \u2581 end",
)


def versions():
    import sentencepiece
    import tensorflow as tf
    import tensorflow_text
    import transformers

    if int(transformers.__version__.split(".")[0]) >= 5:
        # 5.x's AlbertTokenizer is a tokenizers pipeline, not the port of the original's algorithm.
        raise SystemExit(
            f"tokenizer_parity: transformers {transformers.__version__}: compares with the slow "
            "AlbertTokenizer of transformers 4 (pip install 'transformers>=4.57,<5')"
        )
    return (
        f"sentencepiece {sentencepiece.__version__}, tensorflow {tf.__version__}, tensorflow-text "
        f"{tensorflow_text.__version__}, transformers {transformers.__version__}"
    )


def multilingual(args):
    """The tables of every language and setting: held-out lines, random strings, edge cases; then the code
    point scan. Returns how many pairs of tokenizers differ anywhere."""
    import keras

    keras.utils.set_random_seed(0)  # the tiny encoders' weights; before any InGraphTokenizer is made
    print(versions(), flush=True)
    spm_dir = args.corpora / "spm"
    spm_dir.mkdir(parents=True, exist_ok=True)
    sets = {
        "held-out lines": (None, []),
        "random strings": (random_strings(args.random_strings, seed=args.seed), []),
        "edge cases": (list(EDGE_CASES), []),
    }
    models = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for language in args.languages.split(","):
            heldout = (args.corpora / language / "heldout.txt").read_text(encoding="utf-8").splitlines()
            for keep_accents in (False, True):
                prefix = spm_dir / f"{language}_{'keep' if keep_accents else 'strip'}_accents"
                model_file, pieces, seconds = train_model(
                    args.corpora / language / "train.txt", prefix, keep_accents
                )
                models.append(model_file)
                print(f"{language}: {model_file} ({pieces} pieces) trained in {seconds:.0f} s", flush=True)
                for do_lower_case in (True, False):
                    setting = setting_name(keep_accents, do_lower_case)
                    exported = time.perf_counter()
                    export_dir = os.path.join(scratch, f"{prefix.name}_{do_lower_case}")
                    export_encoder(model_file, do_lower_case, keep_accents, export_dir)
                    print(f"  {setting}: exported in {time.perf_counter() - exported:.1f} s", flush=True)
                    for what, (lines, rows) in sets.items():
                        lines = heldout if lines is None else lines
                        row = compare(lines, model_file, do_lower_case, keep_accents, export_dir)
                        rows.append((language, setting, row))
                        print(
                            f"    {len(lines)} {what}: "
                            + ", ".join(f"{name} {s:.1f} s" for name, s in row["seconds"].items())
                            + f"; {sum(row[pair] for pair in PAIRS)} differences",
                            flush=True,
                        )
    print(f"\nall compared in {time.perf_counter() - started:.0f} s")
    titles = {
        "held-out lines": "Held-out lines (served: lines compared through the served model)",
        "random strings": f"{args.random_strings} random strings (seed {args.seed}) through each model",
        "edge cases": f"{len(EDGE_CASES)} edge cases (EDGE_CASES) through each model",
    }
    totals = [print_table(titles[what], rows) for what, (_, rows) in sets.items()]
    for what, (_, rows) in sets.items():
        print_examples(what.capitalize(), rows)
    started = time.perf_counter()
    print_scan(scan_code_points(models[0]))
    print(f"  (scanned in {time.perf_counter() - started:.0f} s)")
    return sum(1 for total in totals for pair in PAIRS if total[pair])


# ------------------------------------------------------------------------------------------------------------
# The former check: Python against in-graph ids on text files


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


def files(args):
    """Python against in-graph ids on every non-blank line of args.input; returns the differing lines."""
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

    def compare_batch(batch):
        ids = graph.tokenize(tf.constant([line for _, line in batch])).to_list()
        for (path, line), got in zip(batch, ids, strict=True):
            text = line.decode("utf-8", errors="replace")
            expected = python.encode(text)
            if got != expected:
                differing.append((path, text, python.tokenize(text), got, expected))

    for item in lines_of(args.input.split(","), args.max_lines):
        batch.append(item)
        if len(batch) == 2000:
            compare_batch(batch)
            compared += len(batch)
            batch = []
    if batch:
        compare_batch(batch)
        compared += len(batch)
    print(f"{compared} lines compared, {len(differing)} with different ids")
    for path, text, pieces, got, expected in differing[:5]:
        print(f"  {path}: {text[:100]!r}\n    python pieces {pieces[:30]}\n    in-graph {got[:30]}\n"
              f"    python   {expected[:30]}")  # fmt: skip
    return len(differing)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--corpora", type=pathlib.Path, default=CORPORA, help="make_corpora.py's output")
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument(
        "--random_strings", type=int, default=3000, help="random strings per model and setting"
    )
    parser.add_argument("--seed", type=int, default=0, help="of the random strings")
    parser.add_argument(
        "--spm_model_file", help="with --input: the former check, Python against in-graph ids"
    )
    parser.add_argument("--input", help="comma-separated text files (with --spm_model_file)")
    parser.add_argument("--max_lines", type=int, default=0, help="with --input: stop after this many lines")
    args = parser.parse_args()
    if bool(args.input) != bool(args.spm_model_file):
        parser.error("--input and --spm_model_file go together")
    print(describe(), flush=True)
    if args.input:
        sys.exit(1 if files(args) else 0)
    if not (args.corpora / LANGUAGES[0] / "heldout.txt").is_file():
        sys.exit(f"{args.corpora}: no corpora; run python data/multilingual/make_corpora.py first")
    sys.exit(1 if multilingual(args) else 0)


if __name__ == "__main__":
    main()
