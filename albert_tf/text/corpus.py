"""Reading a text corpus: input patterns, lines with UTF-8 checks, documents in blocks of bytes.

Corpus format (the original's): one sentence per line, a blank line between documents. A file's end also ends
its document (the original ran the last document of one file into the first of the next). Files ending in
`.gz` are read through gzip.
"""

import contextlib
import gzip
import os

from albert_tf.file_systems import LocalFiles


class CorpusError(ValueError):
    """Input that cannot be read as a corpus; the message names the pattern, file or line."""


def expand_patterns(spec, flag="input_file", files=LocalFiles):
    """Comma-separated globs → sorted file paths, each pattern's matches in name order.

    Args:
      spec: "a.txt,dir/*.txt" or a list of such strings.
      flag: the flag name to put in error messages.
      files: file_systems.LocalFiles, TensorFlowFiles or a BeamFiles().

    Raises:
      CorpusError: a pattern that matches nothing (named), or no pattern at all.
    """
    patterns = [p.strip() for item in ([spec] if isinstance(spec, str) else spec) for p in item.split(",")]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise CorpusError(f"--{flag} is empty: give files or glob patterns, separated by commas")
    paths = []
    for pattern in patterns:
        matches = files.glob(pattern)
        if not matches and os.path.isdir(pattern):  # a local folder: its files were meant
            raise CorpusError(
                f"--{flag}: {pattern!r} is a folder; give its files ({pattern.rstrip('/')}/*.txt)"
            )
        if not matches:
            raise CorpusError(f"--{flag}: {pattern!r} matches no file")
        paths.extend(matches)
    return paths


class LineReader:
    """Decoded lines of several files, in order, with a count of lines that held invalid UTF-8.

    Args:
      paths: files to read.
      errors: "strict" (invalid UTF-8 raises CorpusError naming file and line) or "replace" (U+FFFD, counted).
      files: the file system object that reads them (file_systems.LocalFiles, TensorFlowFiles, BeamFiles()).
    """

    def __init__(self, paths, errors="strict", files=LocalFiles):
        if errors not in ("strict", "replace"):
            raise CorpusError(f"--errors must be 'strict' or 'replace', got {errors!r}")
        self.paths = list(paths)
        self.errors = errors
        self.file_system = files
        self.replaced_lines = 0
        self.bytes_read = 0

    def files(self):
        """Yields, per file, an iterator of its decoded lines (newline removed)."""
        for path in self.paths:
            yield self._lines(path)

    def _lines(self, path):
        with _open(self.file_system, path) as handle:
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


def _is_blank(text):
    return not text.strip()


def _line_start(handle, position):
    """Offset of the first byte of the line that holds byte `position` of a seekable binary file."""
    end = position
    while end > 0:
        start = max(0, end - 65536)
        handle.seek(start)
        newline = handle.read(end - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


@contextlib.contextmanager
def _open(files, path):
    with files.open_read(path) as raw:
        if path.endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield unzipped
        else:
            yield raw


def _line_number(files, path, offset):
    """1-based number of the line that starts at byte `offset` (read again only to name a bad line)."""
    with _open(files, path) as handle:
        newlines, left = 0, offset
        while left:
            chunk = handle.read(min(left, 1 << 20))
            newlines, left = newlines + chunk.count(b"\n"), left - len(chunk)
    return newlines + 1


def read_blocks(path, block_bytes, *, first_block=0, end_block=None, errors="strict", files=LocalFiles):
    """Documents of one file, by block: block b holds the documents whose first line starts in bytes
    [b · block_bytes, (b + 1) · block_bytes) of the file (of its decompressed text for .gz files).

    A block is found from its number alone: reading seeks to the block's first byte, looks back at the line
    before it to know whether a document starts there, and reads on to the end of the block's last document.
    So blocks can be read in any order, by any number of workers, without a pass over what comes before.

    Args:
      path: the file.
      block_bytes: block size in bytes.
      first_block: first block to read; > 0 only for files that are not .gz (gzip cannot seek).
      end_block: stop before this block (None: read to the end of the file).
      errors: "strict" (invalid UTF-8 raises CorpusError naming file and line) or "replace" (U+FFFD, counted).
      files: file_systems.LocalFiles or a file_systems.BeamFiles().

    Yields:
      (block number, documents, lines with invalid UTF-8 replaced) for each block that holds a document;
      a document is a list of its non-blank lines (str, newline removed).
    """
    if errors not in ("strict", "replace"):
        raise CorpusError(f"--errors must be 'strict' or 'replace', got {errors!r}")
    if first_block and path.endswith(".gz"):
        raise ValueError(f"{path}: a .gz file is read from its first block, not from block {first_block}")
    with _open(files, path) as handle:
        offset, previous_blank = 0, True
        if first_block:
            line_start = _line_start(handle, first_block * block_bytes - 1)
            handle.seek(line_start)
            line = handle.readline()
            offset = line_start + len(line)
            previous_blank = _is_blank(line.decode("utf-8", errors="replace"))
        block, documents, document, replaced = None, [], None, 0
        for raw in handle:
            line_offset, offset = offset, offset + len(raw)
            try:
                text, invalid = raw.decode("utf-8").rstrip("\r\n"), None
            except UnicodeDecodeError as error:
                text, invalid = None, error  # never blank: U+FFFD is not whitespace
            if invalid is None and _is_blank(text):
                if document:
                    documents.append(document)
                document, previous_blank = None, True
                continue
            if document is None:
                if not previous_blank:  # the rest of a document that starts before first_block
                    if end_block is not None and line_offset >= end_block * block_bytes:
                        return
                    continue
                number = line_offset // block_bytes
                if end_block is not None and number >= end_block:
                    break
                if number != block and documents:
                    yield block, documents, replaced
                    documents, replaced = [], 0
                block, document = number, []
            previous_blank = False
            if invalid is not None:
                if errors == "strict":
                    raise CorpusError(
                        f"{path}:{_line_number(files, path, line_offset)}: invalid UTF-8 (byte "
                        f"{invalid.start} of the line); fix the file or pass --errors=replace"
                    )
                replaced += 1
                text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            document.append(text)
        if document:
            documents.append(document)
        if documents:
            yield block, documents, replaced
