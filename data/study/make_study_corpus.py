"""Builds the study corpus: English prose from Debian documentation packages, split by page.

    python data/study/make_study_corpus.py --output_dir=/tmp/study_corpus

Downloads each package with `apt-get download` and unpacks it with `dpkg-deb -x` into --scratch_dir (no
root needed, the system is left alone; both steps are skipped when the scratch already has them). Extracts
the prose of HTML pages and roff man pages, and writes into --output_dir:

- pretrain.txt, heldout.txt, downstream.txt: one sentence per line, a blank line between documents (what
  create_pretraining_data reads). A document is one section of one page (text between two headings) or one
  section of a man page.
- downstream_labels.tsv: one line per document of downstream.txt: index, package, path.
- sources.tsv: one line per source file: package, path, split, documents, sentences, bytes.
- manifest.json: packages (version, licence, totals per split) and the split rule.

Each source file goes wholly to one split, chosen by a hash of "package/path" (see split_of). The same
packages give the same bytes. Needs apt-get and dpkg-deb (Debian) and Python 3.11; nothing else.
"""

import argparse
import collections
import dataclasses
import fnmatch
import gzip
import hashlib
import html.parser
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

MIN_SENTENCE_WORDS = 3
MIN_DOCUMENT_SENTENCES = 2
# Longer "sentences" are lists or tables run together, not prose.
MAX_SENTENCE_CHARS = 1000
# A sentence seen this many times already (notes such as "New in version 3.3.", footers, stub pages) is
# boilerplate from then on: later copies are dropped.
MAX_SENTENCE_REPEATS = 10
# (split, first bucket of 100); a file's bucket is its hash modulo 100.
SPLITS = (("pretrain", 0), ("heldout", 90), ("downstream", 95))
COUNTS = ("files", "documents", "sentences", "bytes")


@dataclasses.dataclass(frozen=True)
class Package:
    """One Debian package and the files of it that hold prose."""

    name: str
    licence: str  # the `Files: *` licence of usr/share/doc/PKG/copyright
    include: tuple  # fnmatch patterns, relative to the unpacked package
    exclude: tuple = ()


# perl-doc (and any Perl documentation) is reserved for an independent evaluation: never add it here.
PACKAGES = (
    Package(
        "python3.11-doc",
        "PSF-2.0",
        ("usr/share/doc/python3.11/html/*.html",),
        # The library reference is left out: data/doc_topics (a downstream task of the study) is built from
        # its pages, so pretraining must not read them. Generated indexes; the changelog is a list of issue
        # titles; the licence page is legal text.
        (
            "usr/share/doc/python3.11/html/library/*",
            "usr/share/doc/python3.11/html/_*",
            "*/genindex*.html",
            "*/py-modindex.html",
            "*/search.html",
            "*/whatsnew/changelog.html",
            "*/license.html",
        ),
    ),
    Package(
        "developers-reference",
        "GPL-2",
        ("usr/share/developers-reference/*.html",),
        # developers-reference.html is all the other pages on one page.
        ("*/developers-reference.html", "*/search.html", "*/genindex.html"),
    ),
    Package(
        "postgresql-doc-15",
        "PostgreSQL",
        ("usr/share/doc/postgresql-doc-15/html/*.html",),
        ("*/bookindex.html",),
    ),
    Package(
        "python-django-doc",
        "BSD-3-Clause",
        ("usr/share/doc/python-django-doc/html/*.html",),
        ("*/_modules/*", "*/genindex.html", "*/py-modindex.html", "*/search.html"),
    ),
    Package("git-doc", "GPL-2", ("usr/share/doc/git-doc/*.html",)),
    Package(
        "debian-handbook",
        "GPL-2.0+ or CC-BY-SA-3.0",
        ("usr/share/doc/debian-handbook/html/en-US/*.html",),
    ),
    Package("debian-reference-en", "GPL-2+", ("usr/share/debian-reference/*.en.html",)),
    Package(
        "rust-doc",
        "MIT or Apache-2.0",
        tuple(
            f"usr/share/doc/rust-doc/html/{book}/*.html"
            for book in (
                "book",
                "reference",
                "nomicon",
                "rust-by-example",
                "edition-guide",
                "embedded-book",
                "rustc",
                "rustdoc",
                "unstable-book",
            )
        ),
        # print.html repeats the whole book on one page.
        ("*/print.html", "*/toc.html", "*/404.html"),
    ),
    Package(
        "sqlite3-doc",
        "public-domain",
        ("usr/share/doc/sqlite3/*.html",),
        # Syntax diagrams, not text.
        ("usr/share/doc/sqlite3/syntax/*",),
    ),
    Package("gnu-standards", "GFDL-1.3+", ("usr/share/doc/gnu-standards/*.html",)),
    # bash.html is the man page again; bashref.html is the manual.
    Package("bash-doc", "GPL-3+", ("usr/share/doc/bash/bashref.html",)),
    Package(
        "linux-doc-6.1",
        "GPL-2",
        ("usr/share/doc/linux-doc-6.1/html/*.html",),
        (
            "usr/share/doc/linux-doc-6.1/html/_*",
            "usr/share/doc/linux-doc-6.1/html/translations/*",
            "*/genindex.html",
            "*/search.html",
        ),
    ),
    Package(
        "installation-guide-amd64",
        "GPL-2",
        ("usr/share/doc/installation-guide-amd64/en/*.html",),
    ),
    Package(
        "debian-policy",
        "GPL-2+",
        ("usr/share/doc/debian-policy/*.html",),
        ("*/_*", "*/genindex.html", "*/search.html", "*/perl-policy*", "*/policy.html/index.html"),
    ),
    Package(
        "python-sqlalchemy-doc",
        "Expat",
        ("usr/share/doc/python-sqlalchemy-doc/html/*.html",),
        ("*/_*", "*/genindex.html", "*/search.html", "*/py-modindex.html"),
    ),
    Package("apache2-doc", "Apache-2.0", ("usr/share/doc/apache2-doc/manual/en/*.html",)),
    Package("octave-doc", "GPL-3+", ("usr/share/doc/octave/*.html",)),
    Package(
        "sphinx-doc",
        "BSD-2-clause",
        ("usr/share/doc/sphinx-doc/html/*.html",),
        ("*/_*", "*/genindex.html", "*/search.html", "*/py-modindex.html"),
    ),
    Package(
        "erlang-doc",
        "Apache-2.0",
        ("usr/share/doc/erlang-doc/*.html",),
        ("*/java/*",),
    ),
    Package("libssl-doc", "Apache-2.0", ("usr/share/man/man*/*.gz",)),
    Package("manpages", "GPL-2+", ("usr/share/man/man*/*.gz",)),
    Package("manpages-dev", "GPL-2+", ("usr/share/man/man*/*.gz",)),
)


# ------------------------------------------------------------------------------------------------------------
# Sentences


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'“])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|resp|Fig|No|Mr|Dr|Sec|Ch|Vol)|\b[A-Z])\.$")
_TERMINAL = re.compile(r"[.!?:;][\"')\]”’]*$")
_CODE_PATTERN = re.compile(
    r"^(?:\$|#|>>>|\.\.\.|//|/\*)\s"  # shell prompt, comment or interpreter prompt
    r"|^\w+\s*=[^=]"  # assignment
    r"|[{}]\s*$|\)\s*;$"  # block or statement end
    r"|\w\([^)]*\)\s*[;{]"  # call or definition followed by ; or {
    r"|\w\s*(?:==|!=|&&|\|\||=>|:=)\s*\w"  # an operator between two operands
)
# Characters frequent in code and rare in prose ("_", "/" and "." are common in prose about file names).
_CODE_CHARS = frozenset("{}[]<>=;$|\\*&#@~^`%")


def split_sentences(paragraph):
    """Splits a paragraph at sentence ends, keeping abbreviations such as "e.g." inside their sentence."""
    sentences = []
    for piece in _SENTENCE_END.split(paragraph):
        if sentences and _ABBREVIATION.search(sentences[-1]):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return sentences


def looks_like_code(sentence):
    """True for lines that are code, shell sessions or markup rather than prose."""
    if _CODE_PATTERN.search(sentence):
        return True
    visible = sentence.replace(" ", "")
    letters = sum(char.isalpha() for char in visible)
    symbols = sum(char in _CODE_CHARS for char in visible)
    return letters < 0.5 * len(visible) or symbols > 0.06 * len(visible)


def keep_sentence(sentence):
    """The sentence filter every source goes through: prose sentences of at least MIN_SENTENCE_WORDS words."""
    words = sentence.split()
    if len(words) < MIN_SENTENCE_WORDS or len(sentence) > MAX_SENTENCE_CHARS:
        return False
    # Menu entries, titles and list fragments have no sentence end.
    if not _TERMINAL.search(sentence):
        return False
    if sum(word.isalpha() for word in words) < 2:
        return False
    return not looks_like_code(sentence)


def sentences_of(paragraph):
    """The kept sentences of one paragraph of plain text."""
    text = " ".join(paragraph.replace("\u00b6", " ").replace("\u200b", "").split())
    return [sentence for sentence in split_sentences(text) if keep_sentence(sentence)]


def documents_of_events(events):
    """Groups ("heading", None) / ("text", paragraph) events into documents (lists of sentences)."""
    document = []
    for kind, paragraph in events:
        if kind == "heading":
            if document:
                yield document
            document = []
        else:
            document.extend(sentences_of(paragraph))
    if document:
        yield document


# ------------------------------------------------------------------------------------------------------------
# HTML (DocBook, Sphinx, mdBook, asciidoc, texinfo and sqlite pages)


_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Elements whose text is never prose: code, tables, navigation, forms, definition-list terms, headings.
_SKIP_TAGS = _HEADINGS | frozenset(
    {
        "head",
        "script",
        "style",
        "noscript",
        "template",
        "pre",
        "table",
        "nav",
        "header",
        "footer",
        "form",
        "button",
        "select",
        "textarea",
        "svg",
        "math",
        "dt",
        "figure",
        "iframe",
        "object",
    }
)
# Navigation, tables of contents and code by class (DocBook, Sphinx, mdBook, sqlite, Django themes).
_SKIP_CLASSES = frozenset(
    {
        "toc",
        "navheader",
        "navfooter",
        "docnav",
        "sphinxsidebar",
        "related",
        "footer",
        "refnamediv",
        "refsynopsisdiv",
        "cmdsynopsis",
        "funcsynopsis",
        "synopsis",
        "programlisting",
        "screen",
        "literallayout",
        "highlight",
        "menu",
        "searchmenu",
        "tagline",
        "nosearch",
        "toctree-wrapper",
        "contents",
        "headerlink",
        "indexdiv",
        "index",
        "nav",
        "breadcrumbs",
        "listingblock",
        "literalblock",
    }
)
_SKIP_IDS = frozenset(
    {
        "sidebar",
        "menu-bar",
        "search-wrapper",
        "searchresults-outer",
        "hd",
        "ft",
        "global-nav",
        "header",
        "footer",
    }
)
# Elements that end a paragraph.
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "dl",
        "dd",
        "blockquote",
        "section",
        "article",
        "main",
        "aside",
        "body",
        "hr",
        "br",
        "center",
        "address",
        "figcaption",
    }
)
_VOID = frozenset(
    {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}
)


class _ProseParser(html.parser.HTMLParser):
    """Collects ("heading", None) and ("text", paragraph) events from one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events = []
        self._open = []  # (tag, skipped) of the open elements
        self._skipped = 0  # how many of the open elements are skipped
        self._paragraph = []

    def _flush(self):
        text = "".join(self._paragraph).strip()
        if text:
            self.events.append(("text", text))
        self._paragraph = []

    def handle_starttag(self, tag, attrs):
        if tag in _HEADINGS:
            # A heading ends a document even inside skipped blocks (DocBook wraps titles in "titlepage").
            self._flush()
            self.events.append(("heading", None))
        elif tag in _BLOCKS and not self._skipped:
            self._flush()
        if tag in _VOID:
            if tag == "br":
                self._paragraph.append(" ")
            return
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        skipped = tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES) or attributes.get("id") in _SKIP_IDS
        self._open.append((tag, skipped))
        self._skipped += skipped

    def handle_startendtag(self, tag, attrs):
        # XHTML <div/>, <br/>: nothing stays open.
        if tag in _BLOCKS and not self._skipped:
            self._flush()

    def handle_endtag(self, tag):
        # HTML leaves some elements unclosed (<p>, <li>): closing an outer one closes them too.
        if not any(name == tag for name, _ in self._open):
            return
        while True:
            name, skipped = self._open.pop()
            self._skipped -= skipped
            if name == tag:
                break
        if (tag in _BLOCKS or tag in _SKIP_TAGS) and not self._skipped:
            self._flush()

    def handle_data(self, data):
        if not self._skipped:
            self._paragraph.append(data)

    def close(self):
        super().close()
        self._flush()


def html_documents(path):
    """Documents of one HTML page."""
    parser = _ProseParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    yield from documents_of_events(parser.events)


# ------------------------------------------------------------------------------------------------------------
# roff man pages (Linux man-pages)


# Sections that are lists of names, synopses or references, not prose.
_MAN_SKIP_SECTIONS = frozenset({"NAME", "SYNOPSIS", "SEE ALSO", "COLOPHON", "AUTHOR", "AUTHORS", "COPYRIGHT"})
_MAN_CHARS = {
    "em": "\u2014",
    "en": "\u2013",
    "hy": "-",
    "aq": "'",
    "dq": '"',
    "lq": "\u201c",
    "rq": "\u201d",
    "oq": "\u2018",
    "cq": "\u2019",
    "bu": "\u2022",
    "co": "\u00a9",
    "rg": "\u00ae",
    "tm": "\u2122",
    "ti": "~",
    "ha": "^",
    "ga": "`",
    "rs": "\\",
    "mu": "\u00d7",
    "di": "\u00f7",
    "->": "\u2192",
    "<-": "\u2190",
    "<=": "\u2264",
    ">=": "\u2265",
    "!=": "\u2260",
    "+-": "\u00b1",
    "de": "\u00b0",
    "R": "\u00ae",
    "Tm": "\u2122",
}
_MAN_ESCAPE = re.compile(
    r"\\(?:"
    r"f(?:\[[^\]]*\]|\(..|.)"  # font change
    r"|s(?:\[[^\]]*\]|[+-]?\d)"  # size change
    r"|\((?P<char2>..)|\[(?P<char>[^\]]*)\]"  # special character
    r"|\*(?:\((?P<string2>..)|\[(?P<string>[^\]]*)\]|(?P<string1>.))"  # string
    r"|[NnwhvXmkoblLxDZ]'[^']*'|[nmgk](?:\[[^\]]*\]|\(..|.)"  # registers, motions, drawing
    r"|(?P<other>.)"
    r")"
)
_MAN_SIMPLE = {"-": "-", "e": "\\", "~": " ", " ": " ", "0": " ", "`": "`", ".": ".", "'": "'"}
_MAN_ARGUMENT = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')


def _man_escape(match):
    """Replacement text of one roff escape."""
    name = match.group("char2") or match.group("char") or match.group("string2") or match.group("string")
    name = name or match.group("string1")
    if name:
        return _MAN_CHARS.get(name, "")
    other = match.group("other")
    if other is not None:
        return _MAN_SIMPLE.get(other, "")
    return ""


def man_text(text):
    """Plain text of a roff line: comments dropped, escapes replaced."""
    text = re.sub(r'\\".*', "", text)
    return _MAN_ESCAPE.sub(_man_escape, text)


def man_arguments(line):
    """The arguments of a roff request line, with roff quoting."""
    return [
        quoted.replace('""', '"') if quoted is not None and plain is None else plain
        for quoted, plain in (match.groups() for match in _MAN_ARGUMENT.finditer(line))
        if quoted is not None or plain
    ]


def man_events(lines):
    """("heading", None) / ("text", paragraph) events of a man page; one "heading" per .SH section."""
    paragraph = []
    skip_section = False
    skip_until = None  # end request of a no-fill, table or macro-definition block
    skip_lines = 0  # tag lines of .TP / .TQ
    events = []

    def flush():
        if paragraph and not skip_section:
            events.append(("text", " ".join(paragraph)))
        paragraph.clear()

    for index, line in enumerate(lines):
        request = line[1:].split(None, 1) if line[:1] in (".", "'") else None
        name = request[0] if request else ""
        if skip_until:
            if name in skip_until:
                skip_until = None
            continue
        if name.startswith('\\"'):
            continue  # a comment line
        arguments = man_arguments(request[1]) if request and len(request) > 1 else []
        if name == "so":
            return []  # an alias of another page
        if name == "SH":
            flush()
            events.append(("heading", None))
            title = " ".join(arguments) or (lines[index + 1] if index + 1 < len(lines) else "")
            skip_section = man_text(title).strip().upper() in _MAN_SKIP_SECTIONS
        elif name in ("nf", "EX"):
            flush()
            skip_until = ("fi", "EE")
        elif name == "TS":
            flush()
            skip_until = ("TE",)
        elif name in ("de", "ig"):
            skip_until = (".",)  # a definition or ignored block ends at a ".." line
        elif name in ("TP", "TQ"):
            flush()
            skip_lines = 1
        elif name in ("PP", "LP", "P", "IP", "sp", "br", "SS", "HP", "RS", "RE", "in", "ti", "SY", "YS"):
            flush()
        elif name in ("B", "I", "SM", "SB") and arguments:
            # Without arguments the font applies to the next line, which is read as text.
            if skip_lines:
                skip_lines -= 1
            else:
                paragraph.append(man_text(" ".join(arguments)))
        elif name in ("BR", "IR", "RB", "RI", "BI", "IB"):
            if skip_lines:
                skip_lines -= 1
            else:
                paragraph.append(man_text("".join(arguments)))
        elif name in ("UE", "ME") and arguments:
            paragraph[-1:] = ["".join(paragraph[-1:]) + man_text("".join(arguments))]
        elif request is not None:
            continue  # other requests change formatting only
        elif not line.strip():
            flush()
        elif skip_lines:
            skip_lines -= 1
        else:
            if line[:1] == " ":
                flush()  # a leading space breaks the line in roff: usually an indented literal
                continue
            paragraph.append(man_text(line))
    flush()
    return events


def man_documents(path):
    """Documents (one per .SH section) of a gzipped man page."""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as file:
        lines = file.read().splitlines()
    yield from documents_of_events(man_events(lines))


def file_documents(path):
    """Documents of one source file: an HTML page or a gzipped man page."""
    return html_documents(path) if path.suffix == ".html" else man_documents(path)


# ------------------------------------------------------------------------------------------------------------
# Packages


def fetch_package(package, scratch):
    """Downloads and unpacks `package` under scratch (skipped if already there); returns (root, version)."""
    debs = scratch / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package.name}_*.deb"))
    if not found:
        found = _apt_download(package.name, debs)
    deb = found[-1]
    version = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Version"], check=True, capture_output=True, text=True
    ).stdout.strip()
    root = scratch / "root" / package.name
    if not root.is_dir():
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(partial)], check=True)
        partial.rename(root)  # only a complete unpack gets the final name
    return root, version


def _apt_download(name, debs):
    """`apt-get download name` into debs, after `apt-get update` if the package lists do not know it."""
    for attempt in range(2):
        result = subprocess.run(["apt-get", "download", name], cwd=debs, capture_output=True, text=True)
        found = sorted(debs.glob(f"{name}_*.deb"))
        if result.returncode == 0 and found:
            return found
        if attempt == 0:
            print(f"apt-get download {name} failed; running apt-get update", flush=True)
            subprocess.run(["apt-get", "update"], check=True, capture_output=True)
    sys.exit(f"apt-get download {name} failed:\n{result.stderr}")


def copyright_file(scratch, name):
    """usr/share/doc/NAME/copyright of an unpacked package (or of the sibling its doc folder links to)."""
    doc = scratch / "root" / name / "usr/share/doc" / name
    if doc.is_symlink():
        # manpages-dev ships usr/share/doc/manpages-dev -> manpages, the package downloaded beside it.
        target = os.readlink(doc)
        doc = scratch / "root" / target / "usr/share/doc" / target
    if not (doc / "copyright").is_file():
        sys.exit(f"{name}: no copyright file at {doc}/copyright")
    return doc / "copyright"


def package_files(package, root):
    """The files of package under root that its include patterns match, sorted (for stable output)."""
    files = []
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if not path.is_file() or path.is_symlink():
            continue
        if any(fnmatch.fnmatchcase(relative, pattern) for pattern in package.include) and not any(
            fnmatch.fnmatchcase(relative, pattern) for pattern in package.exclude
        ):
            files.append(relative)
    return sorted(files)


def split_of(package_name, path):
    """pretrain, heldout or downstream: from blake2b of "package/path", so a file never changes split."""
    bucket = int.from_bytes(hashlib.blake2b(f"{package_name}/{path}".encode(), digest_size=8).digest(), "big")
    bucket %= 100
    return [name for name, first in SPLITS if bucket >= first][-1]


# ------------------------------------------------------------------------------------------------------------
# Corpus


def drop_repeats(sentences, repeats):
    """The sentences that have not yet been kept MAX_SENTENCE_REPEATS times (counting this document too)."""
    here = collections.Counter()
    kept = []
    for sentence in sentences:
        if repeats[sentence] + here[sentence] < MAX_SENTENCE_REPEATS:
            here[sentence] += 1
            kept.append(sentence)
    return kept


def build(packages, scratch):
    """Extracts every package: (per-split lists of (package, path, text), per-file rows, per-package info)."""
    texts = {name: [] for name, _ in SPLITS}
    rows = []
    info = []
    repeats = collections.Counter()  # sentence: times kept so far
    seen = set()  # hashes of documents kept so far: a copied page or section is kept once
    for package in packages:
        started = time.monotonic()
        root, version = fetch_package(package, scratch)
        files = package_files(package, root)
        totals = {name: collections.Counter() for name, _ in SPLITS}
        for path in files:
            split = split_of(package.name, path)
            counts = collections.Counter(files=1)
            for sentences in file_documents(root / path):
                document = drop_repeats(sentences, repeats)
                text = "\n".join(document)
                digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
                if len(document) < MIN_DOCUMENT_SENTENCES or digest in seen:
                    continue
                seen.add(digest)
                repeats.update(document)  # only kept documents count
                texts[split].append((package.name, path, text))
                counts.update(documents=1, sentences=len(document), bytes=len(text.encode()) + 2)
            rows.append(
                (package.name, path, split, counts["documents"], counts["sentences"], counts["bytes"])
            )
            totals[split].update(counts)
        splits = {name: {key: totals[name][key] for key in COUNTS} for name, _ in SPLITS}
        info.append({"name": package.name, "version": version, "licence": package.licence, "splits": splits})
        print(f"{package.name} {version}: {len(files)} files, {time.monotonic() - started:.1f} s", flush=True)
    return texts, rows, info


def write_atomic(path, text):
    """Writes text to path through a temporary name, so a reader never sees half a file."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write_outputs(output_dir, texts, rows, info, scratch):
    """Writes the splits, downstream_labels.tsv, sources.tsv, manifest.json and copyright/PACKAGE."""
    (output_dir / "copyright").mkdir(parents=True, exist_ok=True)
    for package in info:
        # The licences (GPL, CC-BY-SA, GFDL, Apache) ask for their notices to travel with the text.
        text = copyright_file(scratch, package["name"]).read_text(encoding="utf-8", errors="replace")
        write_atomic(output_dir / "copyright" / package["name"], text)
    for name, _ in SPLITS:
        write_atomic(output_dir / f"{name}.txt", "\n\n".join(text for _, _, text in texts[name]) + "\n")
    labels = ["index\tpackage\tpath"]
    labels += [f"{index}\t{package}\t{path}" for index, (package, path, _) in enumerate(texts["downstream"])]
    write_atomic(output_dir / "downstream_labels.tsv", "\n".join(labels) + "\n")
    sources = ["package\tpath\tsplit\tdocuments\tsentences\tbytes"]
    sources += ["\t".join(str(value) for value in row) for row in rows]
    write_atomic(output_dir / "sources.tsv", "\n".join(sources) + "\n")
    manifest = {
        "format": "one sentence per line, a blank line between documents",
        "split_rule": "blake2b('package/path', digest_size=8) as big-endian integer mod 100: "
        "0-89 pretrain, 90-94 heldout, 95-99 downstream",
        "packages": info,
    }
    write_atomic(output_dir / "manifest.json", json.dumps(manifest, indent=1) + "\n")


def print_summary(info, output_dir):
    """Prints package, version, licence, files, documents, sentences and MB per split."""
    header = f"{'package':<24} {'version':<26} {'licence':<25} {'split':<10} {'files':>6} {'docs':>7} "
    print(header + f"{'sentences':>9} {'MB':>7}")
    for package in info:
        for split, totals in package["splits"].items():
            print(
                f"{package['name']:<24} {package['version']:<26} {package['licence']:<25} {split:<10} "
                f"{totals['files']:>6} {totals['documents']:>7} {totals['sentences']:>9} "
                f"{totals['bytes'] / 1e6:>7.2f}"
            )
    for name, _ in SPLITS:
        path = output_dir / f"{name}.txt"
        print(f"{path}: {path.stat().st_size / 1e6:.2f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--output_dir", required=True, type=pathlib.Path)
    parser.add_argument(
        "--scratch_dir",
        type=pathlib.Path,
        default=pathlib.Path("/tmp/study_corpus_scratch"),
        help="downloaded .deb files and unpacked packages; reused when run again",
    )
    args = parser.parse_args()
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: this script needs a Debian system (apt-get, dpkg-deb)")
    started = time.monotonic()
    texts, rows, info = build(PACKAGES, args.scratch_dir)
    write_outputs(args.output_dir, texts, rows, info, args.scratch_dir)
    print_summary(info, args.output_dir)
    print(f"done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
