"""What the original's normalization takes out of a corpus: the combining marks it drops, by script.

The original ALBERT normalization (normalization.preprocess_text) decomposes text (NFKD) and drops every
character with a non-zero canonical combining class. English loses the accents of a few loanwords ("café"
becomes "cafe"); a language written with marks loses words: Japanese kana their voicing ("ドイツ", Germany,
becomes "トイツ"), Vietnamese its tones ("Tiếng Việt" becomes "Tieng Viet"), Devanagari its virama and
nukta ("हिन्दी" becomes "हिनदी"), Thai its tone and vowel marks, Hebrew and Arabic their points, and Latin
languages such as German or French their umlauts and accents. Hugging Face's `keep_accents` (our
`--keep_accents`) skips that step.

`measure` counts, per script, the words (whitespace-separated) that would lose a mark. The rule: marks
carry meaning in a script when at least MEANINGFUL_SHARE of its words lose one, and at least MEANINGFUL_WORDS
of them do: a language written with marks, not a few names or loanwords in another language's text. Scripts
without spaces (Chinese, Japanese, Thai) count runs between spaces as words, which only makes a share larger.
A word's script is that of its first letter, as Unicode names it ("LATIN", "HIRAGANA", "DEVANAGARI").
"""

import collections
import dataclasses
import unicodedata

MEANINGFUL_SHARE = 0.01
MEANINGFUL_WORDS = 10
EXAMPLES = 3  # words shown per script
EXAMPLE_CHARACTERS = 24  # of a longer word (a run of a script without spaces): its start


@dataclasses.dataclass
class ScriptMarks:
    """One script's count: its words, those that lose a mark, and a few of them (word, as normalized)."""

    script: str
    words: int = 0
    changed: int = 0
    examples: list = dataclasses.field(default_factory=list)

    @property
    def share(self):
        return self.changed / self.words if self.words else 0.0

    @property
    def meaningful(self):
        """Whether marks carry meaning in this script's text (see the module docstring)."""
        return self.changed >= MEANINGFUL_WORDS and self.share >= MEANINGFUL_SHARE

    def describe(self):
        """One line: the script, its words that lose a mark (how many, what share) and examples."""
        shown = ", ".join(f"{word} → {normalized}" for word, normalized in self.examples)
        return f"{self.script}: {self.changed:,} of {self.words:,} words ({self.share:.1%}), e.g. {shown}"


def word_script(word):
    """The script of a word's first letter, as the first word of its Unicode name ("LATIN", "CJK"), or None
    for a word without letters."""
    for char in word:
        if unicodedata.category(char).startswith("L"):
            return unicodedata.name(char, "UNKNOWN").split(" ")[0]
    return None


def stripped(word):
    """The word as the original's normalization leaves it, case aside: NFKD without combining marks."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def loses_marks(word):
    """Whether the original's normalization drops a combining mark of the word."""
    return not word.isascii() and any(unicodedata.combining(c) for c in unicodedata.normalize("NFKD", word))


def measure(lines, max_words=None):
    """{script: ScriptMarks} of lines (str), over at most max_words words (None: all)."""
    scripts, seen = {}, 0
    examples = collections.defaultdict(set)
    for line in lines:
        for word in line.split():
            script = word_script(word)
            if script is None:
                continue
            counted = scripts.setdefault(script, ScriptMarks(script))
            counted.words += 1
            if loses_marks(word):
                counted.changed += 1
                if len(counted.examples) < EXAMPLES and word not in examples[script]:
                    examples[script].add(word)
                    counted.examples.append((_shortened(word), _shortened(stripped(word))))
            seen += 1
            if max_words is not None and seen >= max_words:
                return scripts
    return scripts


def _shortened(word):
    return word if len(word) <= EXAMPLE_CHARACTERS else word[:EXAMPLE_CHARACTERS] + "…"


def meaningful(scripts):
    """The ScriptMarks of measure's result whose marks carry meaning, most changed first."""
    return sorted((s for s in scripts.values() if s.meaningful), key=lambda s: -s.changed)


MEASURED_WORDS = 1_000_000  # the first words of a corpus a command measures before it writes anything


class MarksError(ValueError):
    """A corpus whose marks carry meaning, given neither --keep_accents nor --nokeep_accents."""


def decide(lines, keep_accents, corpus):
    """Whether a command keeps its corpus's marks, measured on its first MEASURED_WORDS words.

    Args:
      lines: the corpus's lines (str), in order (an iterator is read only as far as it measures).
      keep_accents: True, False, or None when neither the flag nor the SentencePiece model's settings say.
      corpus: what the messages call the corpus, e.g. "--input_file=corpus/*.txt".

    Returns:
      (keep_accents, a line saying what the original's normalization changes in the words measured, or None
      when it changes nothing).

    Raises:
      MarksError: keep_accents is None and marks carry meaning in a script of the corpus (meaningful): the
        message names the scripts, with examples, and the flags to pass.
    """
    scripts = measure(lines, MEASURED_WORDS)
    words = sum(counted.words for counted in scripts.values())
    changed = sorted((s for s in scripts.values() if s.changed), key=lambda s: -s.changed)
    where = f"in the {'first ' if words >= MEASURED_WORDS else ''}{words:,} words of {corpus}"
    found = "; ".join(counted.describe() for counted in changed) or None
    carrying = meaningful(scripts)
    if keep_accents is None and carrying:
        lost = "; ".join(counted.describe() for counted in carrying)
        raise MarksError(
            f"the original's normalization (NFKD, then combining marks dropped) would change words whose "
            f"marks carry meaning, {where}: {lost}. Pass --keep_accents to keep them (Hugging Face's "
            "keep_accents: the model directory, the records and every export then keep them too), or "
            "--nokeep_accents for the original's normalization"
        )
    if found is None:
        return bool(keep_accents), None
    kept = "kept" if keep_accents else "dropped (the original's normalization)"
    return bool(keep_accents), f"combining marks {kept}, {where}: {found}"
