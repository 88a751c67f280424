"""Builds sample_corpus.txt from the reStructuredText sources of the Python 3.11 documentation.

Source: Debian's `python3.11-doc` package (3.11.2-6+deb12u8), directory
`usr/share/doc/python3.11/html/_sources`. The documentation is under the PSF licence (LICENSE.rst here).

    apt-get download python3.11-doc && dpkg-deb -x python3.11-doc_*.deb pkg
    python data/sample/make_sample_corpus.py pkg/usr/share/doc/python3.11/html/_sources

Output format (what create_pretraining_data reads): one sentence per line, a blank line between documents.
A document is one section of one page (text between two headings); code blocks, directives, tables and
markup are dropped, inline roles keep their text.
"""

import pathlib
import re
import sys

# Prose-heavy parts of the documentation, in this order, until TARGET_BYTES of text.
PARTS = ("tutorial", "howto", "faq", "reference", "using", "extending", "installing", "whatsnew", "library")
TARGET_BYTES = 1_500_000
MIN_SENTENCE_WORDS = 3

_HEADING_UNDERLINE = re.compile(r"^([=\-~^*#+\"'`.:_])\1{3,}\s*$")
_ROLE = re.compile(r":[\w:.-]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LITERAL = re.compile(r"``([^`]*)``")
_LINK = re.compile(r"`([^`<]+?)(?:\s*<[^>]*>)?`_{1,2}")
_EMPHASIS = re.compile(r"\*{1,2}([^*]+)\*{1,2}")
_FOOTNOTE = re.compile(r"\s*\[(?:#\w*|\d+|\*)\]_")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


def _paragraphs(lines):
    """Yields ("heading", None) or ("text", paragraph) from reST lines, skipping blocks that are not prose."""
    paragraph = []
    skip_indented = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        indented = line[:1] in (" ", "\t")
        if skip_indented:
            if not stripped or indented:
                continue
            skip_indented = False
        next_line = lines[index + 1] if index + 1 < len(lines) else ""
        if _HEADING_UNDERLINE.match(stripped) or (stripped and _HEADING_UNDERLINE.match(next_line.strip())):
            if paragraph:
                yield "text", " ".join(paragraph)
                paragraph = []
            if _HEADING_UNDERLINE.match(next_line.strip()) and not _HEADING_UNDERLINE.match(stripped):
                yield "heading", None
            continue
        if not stripped or stripped.startswith((".. ", "+-", "|", ">>>")) or indented and not paragraph:
            if paragraph:
                yield "text", " ".join(paragraph)
                paragraph = []
            if stripped.startswith(".. ") or indented:
                skip_indented = True
            continue
        if stripped.endswith("::"):
            stripped = stripped[:-1] if not stripped.endswith(" ::") else stripped[:-3]
            skip_indented = True
        paragraph.append(stripped.lstrip("*-# ").strip() if stripped[:2] in ("* ", "- ", "#.") else stripped)
        if skip_indented:
            yield "text", " ".join(paragraph)
            paragraph = []
    if paragraph:
        yield "text", " ".join(paragraph)


def _clean(text):
    text = _FOOTNOTE.sub("", text)
    text = _ROLE.sub(r"\1", text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\1", text)
    return " ".join(text.replace("\\", "").split())


def documents(path):
    """Yields documents (lists of sentences) of one .rst.txt file."""
    yield from documents_of_lines(path.read_text(encoding="utf-8").splitlines())


def documents_of_lines(lines):
    """Yields documents (lists of sentences) of reST lines."""
    sentences = []
    for kind, paragraph in _paragraphs(lines):
        if kind == "heading":
            if sentences:
                yield sentences
            sentences = []
            continue
        for sentence in _SENTENCE_END.split(_clean(paragraph)):
            if len(sentence.split()) >= MIN_SENTENCE_WORDS:
                sentences.append(sentence)
    if sentences:
        yield sentences


def main(sources):
    root = pathlib.Path(sources)
    out = []
    size = 0
    for part in PARTS:
        for path in sorted((root / part).rglob("*.rst.txt")):
            for document in documents(path):
                if len(document) < 2:
                    continue
                text = "\n".join(document) + "\n\n"
                out.append(text)
                size += len(text.encode("utf-8"))
            if size >= TARGET_BYTES:
                break
        if size >= TARGET_BYTES:
            break
    target = pathlib.Path(__file__).with_name("sample_corpus.txt")
    target.write_text("".join(out).rstrip("\n") + "\n", encoding="utf-8")
    print(f"{target.name}: {len(out)} documents, {size} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
