"""The original ALBERT text normalization, and the character classes the in-graph version needs.

The original (`preprocess_text` in google-research/albert `tokenization.py`) runs, in this order:
collapse whitespace with Python's `str.split()`, replace ``` `` ``` and `''` with `"`, NFKD, drop characters
whose canonical combining class is not 0, lowercase with `str.lower()`. With `keep_accents` (Hugging Face's
`AlbertTokenizer` name and meaning) the NFKD and mark-dropping steps are skipped: a corpus whose marks carry
meaning (Japanese, Vietnamese, Hindi, Thai: albert_tf.text.marks) keeps them. The in-graph tokenizer repeats
these steps with TensorFlow ops; the classes below are computed from this interpreter's `unicodedata` so both
sides use the same tables (RE2's `\\s`, `\\d` and `\\p{Mn}` are different sets).
"""

import functools
import sys
import unicodedata

PIECE_PREFIX = "\u2581"  # "▁": SentencePiece's word-start marker.


def preprocess_text(text, lower=True, keep_accents=False):
    """Normalizes one line of text the way the original ALBERT tokenizer does.

    Args:
      text: str (bytes are decoded as UTF-8, invalid bytes replaced by U+FFFD).
      lower: lowercase after removing accents (the released ALBERT models are uncased).
      keep_accents: skip NFKD and the removal of combining marks (the original removes them).

    Returns:
      The normalized str.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = " ".join(text.split())
    text = text.replace("``", '"').replace("''", '"')
    if not keep_accents and not text.isascii():  # ASCII has neither compatibility forms nor marks
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    if lower:
        text = text.lower()
    return text


def _re2_class(predicate):
    """An RE2 character class `[...]` of every code point for which predicate(chr) holds."""
    ranges = []
    start = previous = None
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:  # Surrogates never occur in valid UTF-8.
            continue
        if predicate(chr(code)):
            if start is not None and code == previous + 1:
                previous = code
                continue
            if start is not None:
                ranges.append((start, previous))
            start = previous = code
    if start is not None:
        ranges.append((start, previous))
    parts = [f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges]
    return "[" + "".join(parts) + "]"


@functools.cache
def whitespace_class():
    """Characters `str.split()` splits on."""
    return _re2_class(str.isspace)


@functools.cache
def combining_class():
    """Characters with a non-zero canonical combining class (`unicodedata.combining`)."""
    return _re2_class(unicodedata.combining)


@functools.cache
def digit_class():
    """Characters for which `str.isdigit()` holds (the digit-comma rule's test)."""
    return _re2_class(str.isdigit)
