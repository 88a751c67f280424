"""Reading a text corpus: input patterns, lines with UTF-8 checks, documents.

Corpus format (the original's): one sentence per line, a blank line between documents. A file's end also ends
its document (the original ran the last document of one file into the first of the next). Files ending in
`.gz` are read through gzip.
"""

import glob
import gzip
import os


class CorpusError(ValueError):
    """Input that cannot be read as a corpus; the message names the pattern, file or line."""


def expand_patterns(spec, flag="input_file"):
    """Comma-separated globs → sorted file paths, each pattern's matches in name order.

    Args:
      spec: "a.txt,dir/*.txt" or a list of such strings.
      flag: the flag name to put in error messages.

    Raises:
      CorpusError: a pattern that matches nothing (named), or no pattern at all.
    """
    patterns = [p.strip() for item in ([spec] if isinstance(spec, str) else spec) for p in item.split(",")]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise CorpusError(f"--{flag} is empty: give files or glob patterns, separated by commas")
    paths = []
    for pattern in patterns:
        matches = sorted(path for path in glob.glob(os.path.expanduser(pattern)) if os.path.isfile(path))
        if not matches:
            raise CorpusError(f"--{flag}: {pattern!r} matches no file")
        paths.extend(matches)
    return paths


class LineReader:
    """Decoded lines of several files, in order, with a count of lines that held invalid UTF-8.

    Args:
      paths: files to read.
      errors: "strict" (invalid UTF-8 raises CorpusError naming file and line) or "replace" (U+FFFD, counted).
    """

    def __init__(self, paths, errors="strict"):
        if errors not in ("strict", "replace"):
            raise CorpusError(f"--errors must be 'strict' or 'replace', got {errors!r}")
        self.paths = list(paths)
        self.errors = errors
        self.replaced_lines = 0
        self.bytes_read = 0

    def _open(self, path):
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")

    def files(self):
        """Yields, per file, an iterator of its decoded lines (newline removed)."""
        for path in self.paths:
            yield self._lines(path)

    def _lines(self, path):
        with self._open(path) as handle:
            for number, raw in enumerate(handle, start=1):
                self.bytes_read += len(raw)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    if self.errors == "strict":
                        raise CorpusError(
                            f"{path}:{number}: invalid UTF-8 (byte {error.start} of the line); "
                            "fix the file or pass --errors=replace"
                        ) from None
                    self.replaced_lines += 1
                    text = raw.decode("utf-8", errors="replace")
                yield text.rstrip("\r\n")


def documents(reader):
    """Yields documents, each a list of its non-blank lines (str), from a LineReader."""
    for lines in reader.files():
        document = []
        for line in lines:
            if line.strip():
                document.append(line)
            elif document:
                yield document
                document = []
        if document:
            yield document
