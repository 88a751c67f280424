"""Builds small corpora of eight languages from Debian packages: training and held-out lines per language.

    python data/multilingual/make_corpora.py                  # writes runs/multilingual/
    python data/multilingual/make_corpora.py --output_dir=/tmp/multilingual
    python data/multilingual/make_corpora.py --walk           # runs/multilingual/walk/{ja,vi}.txt

Japanese, Chinese, Vietnamese, Hindi, Korean and German come from the translated help of LibreOffice
(`libreoffice-help-LANG`, HTML pages) and GNOME (`gnome-user-docs`, Mallard pages); Thai and Arabic, which
have neither, from translated user interfaces: the gettext catalogues (.mo) of LibreOffice
(`libreoffice-l10n-LANG`) and of GNOME and graphics programs. Each package is fetched with
`apt-get download` and unpacked with `dpkg-deb -x` into --scratch_dir (no root needed; both steps are skipped
when the scratch already has them), as data/study/make_study_corpus.py does.

Lines are paragraphs of the pages (markup and entities stripped) or messages of the catalogues, whitespace
collapsed, kept when written in the language (see keep_line: a line mostly ASCII is an untranslated one),
deduplicated. Per language the HELDOUT_LINES lines of smallest hash go to heldout.txt and the others to
train.txt, each in the order read. Writes into --output_dir:

- LANG/train.txt, LANG/heldout.txt: one line of text per line (no blank lines);
- manifest.json: packages (version, licence), per language its sources and line counts, the split rule;
- copyright/PACKAGE: each package's usr/share/doc/PACKAGE/copyright.

With --walk it writes instead the corpora of bench/language_walk.py: walk/ja.txt and walk/vi.txt, one document
per help or guide page, one sentence per line in reading order, a blank line between documents (see
language_documents), and walk/manifest.json.

Never reads perl-doc or Debian's translated man pages (manpages-*): they are reserved for an independent
evaluation. The same packages give the same bytes. Needs apt-get and dpkg-deb (Debian 12) and Python 3.11.
"""

import argparse
import collections
import dataclasses
import glob
import hashlib
import html
import html.parser
import json
import pathlib
import re
import shutil
import struct
import sys
import time
import unicodedata

# The download, unpacking and copyright look-up of the English study corpus' builder.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "study"))
from make_study_corpus import (  # noqa: E402
    MAX_SENTENCE_REPEATS,
    copyright_file,
    drop_repeats,
    fetch_package,
    write_atomic,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Lines per language held out (the tokenizer parity benchmark compares on them); the rest is for training.
HELDOUT_LINES = 6000
# Shorter lines are mostly menu entries and labels; they add few new characters.
MIN_CHARS = 8
# The share of a line's non-space characters that must be of the language's script (non-Latin languages):
# below it a line is mostly ASCII, an untranslated message or a code sample.
MIN_SCRIPT_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Package:
    """A Debian package and the licence of its `Files: *` stanza (usr/share/doc/PACKAGE/copyright)."""

    name: str
    licence: str


@dataclasses.dataclass(frozen=True)
class Source:
    """Files of a package: kind "html" (LibreOffice help), "mallard" (GNOME help) or "gettext" (.mo), and a
    glob pattern relative to the unpacked package, with {lang} for the language's folder name there."""

    package: str
    kind: str
    pattern: str


@dataclasses.dataclass(frozen=True)
class Language:
    """A language: its code, name, script (a name of SCRIPTS, or "latin"), folder names and sources."""

    code: str
    name: str
    script: str
    sources: tuple


PACKAGES = {
    package.name: package
    for package in (
        *(Package(f"libreoffice-help-{lang}", "MPL-2.0") for lang in ("ja", "zh-cn", "vi", "hi", "ko", "de")),
        Package("libreoffice-l10n-th", "MPL-2.0"),
        Package("libreoffice-l10n-ar", "MPL-2.0"),
        Package("gnome-user-docs", "CC-BY-SA-3.0"),
        Package("evolution-common", "LGPL-2 or LGPL-3"),
        Package(
            "gnome-control-center-data", "GPL-2+ and GPL-3+ and LGPL-2.1+ and LGPL-2+ and Expat and CC0-1.0"
        ),
        Package("libgtk-3-common", "LGPL-2+ and LGPL-2.1+ and Expat"),
        Package("libgtk2.0-common", "LGPL-2+ (some tests and examples GPL-2+)"),
        Package("libglib2.0-data", "LGPL-2+ and LGPL-2.1+ and others (permissive)"),
        Package("iso-codes", "LGPL-2.1+"),
        Package("nautilus-data", "GPL-3+"),
        Package("gimp-data", "GPL-3+ and GPL-2+ and LGPL-3+ and MIT and Expat and BSD-2-clause"),
        Package("inkscape", "GPL (some portions public domain)"),
        Package("gedit-common", "GPL-2"),
        Package("gnome-disk-utility", "GPL-2+"),
        # Vietnamese documents of the corpus walk (--walk): Debian's guides.
        Package("maint-guide-ja", "GPL-2.0+"),
        Package("maint-guide-vi", "GPL-2.0+"),
        Package("installation-guide-amd64", "GPL-2"),
    )
}
# perl-doc and manpages-* (ja, vi, zh, de, ...) are reserved for an independent evaluation: never add them.
FORBIDDEN = re.compile(r"^(perl-doc|manpages(-.*)?)$")


def help_sources(libreoffice, gnome):
    """A help language's sources: its LibreOffice help pages and its GNOME help pages."""
    return (
        Source(f"libreoffice-help-{libreoffice.lower()}", "html",
               f"usr/share/libreoffice/help/{libreoffice}/**/*.html"),
        Source("gnome-user-docs", "mallard", f"usr/share/help/{gnome}/**/*.page"),
    )  # fmt: skip


# Packages whose gettext catalogues hold many Thai and Arabic messages (bookworm's translations).
CATALOGUES = (
    "evolution-common", "gnome-control-center-data", "libgtk-3-common", "libgtk2.0-common",
    "libglib2.0-data", "iso-codes", "nautilus-data", "gimp-data", "inkscape", "gedit-common",
    "gnome-disk-utility",
)  # fmt: skip


def catalogue_sources(lang, libreoffice=True):
    """A language's gettext catalogues: LibreOffice's (libreoffice-l10n-LANG), then those of CATALOGUES."""
    sources = tuple(
        Source(name, "gettext", f"usr/share/locale/{lang}/LC_MESSAGES/*.mo") for name in CATALOGUES
    )
    if libreoffice:
        pattern = f"usr/lib/libreoffice/program/resource/{lang}/**/*.mo"
        sources = (Source(f"libreoffice-l10n-{lang}", "gettext", pattern), *sources)
    return sources


LANGUAGES = (
    Language("ja", "Japanese", "japanese", help_sources("ja", "ja")),
    Language("zh", "Chinese", "han", help_sources("zh-CN", "zh_CN")),
    Language("vi", "Vietnamese", "latin", help_sources("vi", "vi")),
    # Much of the Hindi help is untranslated (English): the catalogues add what it lacks.
    Language(
        "hi", "Hindi", "devanagari", (*help_sources("hi", "hi"), *catalogue_sources("hi", libreoffice=False))
    ),
    Language("th", "Thai", "thai", catalogue_sources("th")),
    Language("ko", "Korean", "hangul", help_sources("ko", "ko")),
    Language("ar", "Arabic", "arabic", catalogue_sources("ar")),
    Language("de", "German", "latin", help_sources("de", "de")),
)

# Code point ranges of each non-Latin script (the main blocks; CJK punctuation counts as the script's).
SCRIPTS = {
    "han": ((0x3000, 0x303F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)),
    "japanese": ((0x3000, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF)),
    "hangul": ((0x1100, 0x11FF), (0x3000, 0x303F), (0x3130, 0x318F), (0xAC00, 0xD7AF), (0xFF00, 0xFFEF)),
    "devanagari": ((0x0900, 0x097F), (0xA8E0, 0xA8FF)),
    "thai": ((0x0E00, 0x0E7F),),
    "arabic": ((0x0600, 0x06FF), (0x0750, 0x077F), (0x08A0, 0x08FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
}
# Function words that tell a German sentence from an untranslated English one (both are Latin script).
GERMAN_WORDS = frozenset({
    "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "und", "oder", "ist",
    "sind", "wird", "werden", "nicht", "mit", "von", "zu", "zum", "zur", "für", "auf", "im", "in", "aus",
    "bei", "wie", "sie", "es", "sich", "auch", "kann", "können", "diese", "dieser", "dieses", "wenn",
    "um", "als",
})  # fmt: skip
ENGLISH_WORDS = frozenset({
    "the", "a", "an", "and", "or", "is", "are", "be", "will", "not", "with", "of", "to", "for", "on", "in",
    "from", "at", "as", "it", "this", "that", "these", "you", "your", "can", "which", "when", "if", "by",
})  # fmt: skip


# ------------------------------------------------------------------------------------------------------------
# Which lines are text of the language


def script_share(line, script):
    """The share of line's non-space characters in the script's ranges."""
    visible = [ord(char) for char in line if not char.isspace()]
    inside = sum(any(low <= code <= high for low, high in SCRIPTS[script]) for code in visible)
    return inside / max(len(visible), 1)


def keep_line(line, language):
    """True when line (whitespace collapsed) is a line of language's text, not an untranslated message.

    Non-Latin scripts: at least MIN_SCRIPT_SHARE of the characters in the script. Vietnamese: letters with
    its diacritics (nearly every Vietnamese sentence has several; English has none). German: more German
    function words than English ones.
    """
    if len(line.replace(" ", "")) < MIN_CHARS:
        return False
    if language.script != "latin":
        return script_share(line, language.script) >= MIN_SCRIPT_SHARE
    if language.code == "vi":
        letters = [char for char in line if char.isalpha()]
        marked = sum(not char.isascii() for char in letters)
        return marked >= 2 and marked >= 0.1 * len(letters)
    words = re.findall(r"\w+", line.lower())
    german = sum(word in GERMAN_WORDS for word in words)
    return german >= 1 and german > sum(word in ENGLISH_WORDS for word in words)


# ------------------------------------------------------------------------------------------------------------
# Paragraphs of HTML and Mallard pages


@dataclasses.dataclass(frozen=True)
class Markup:
    """What a page format's parser skips (elements, classes, ids) and which elements end a paragraph."""

    skip_tags: frozenset
    skip_classes: frozenset
    skip_ids: frozenset
    blocks: frozenset


# LibreOffice help: the page's header, side panels (contents, index, search) and code samples are not prose;
# "howtoget" boxes are menu paths ("Choose Format - Cells").
HTML = Markup(
    skip_tags=frozenset({"head", "script", "style", "noscript", "header", "aside", "nav", "pre", "code",
                         "button"}),
    skip_classes=frozenset({"code", "codeintable", "smathcode", "howtoget", "bug", "related"}),
    skip_ids=frozenset({"TopLeftHeader", "SearchFrame", "DonationFrame"}),
    blocks=frozenset({"p", "div", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "br", "dd", "dt",
                      "table", "tr", "ul", "ol", "section", "body", "title"}),
)  # fmt: skip
# GNOME help (Mallard): <info> holds credits, licences and links; code, screens and media are not prose.
MALLARD = Markup(
    skip_tags=frozenset({"info", "code", "screen", "media", "comment", "synopsis", "cmd", "sys", "output"}),
    skip_classes=frozenset(),
    skip_ids=frozenset(),
    blocks=frozenset({"p", "title", "subtitle", "item", "td", "th", "tr", "list", "section", "page", "note",
                      "terms", "tree", "steps", "table", "desc", "figure", "quote", "example", "links"}),
)  # fmt: skip
# DocBook HTML (Debian's guides): navigation bars, tables of contents and screens are not prose; inline code
# (file names, commands) is part of its sentence and stays.
DOCBOOK = Markup(
    skip_tags=frozenset({"head", "script", "style", "pre"}),
    skip_classes=frozenset({"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures",
                            "list-of-examples", "screen", "programlisting", "synopsis", "cmdsynopsis"}),
    skip_ids=frozenset(),
    blocks=frozenset({"p", "div", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "br", "dd", "dt",
                      "table", "tr", "ul", "ol", "body", "title", "blockquote"}),
)  # fmt: skip
# Each format's markup, by Source.kind. The walk's documents leave out LibreOffice's macOS variants of a
# phrase ("LibreOffice - Preferences" beside "Tools - Options"): both in a row read as one garbled phrase;
# and the footer's debug lines ("This page is: /text/...xhp").
MARKUPS = {"html": HTML, "mallard": MALLARD, "docbook": DOCBOOK}
WALK_MARKUPS = {
    **MARKUPS,
    "html": dataclasses.replace(
        HTML, skip_tags=HTML.skip_tags | {"footer"}, skip_classes=HTML.skip_classes | {"MAC", "debug"}
    ),
}
# Elements with no end tag in HTML (nothing stays open); self-closing XML tags come as startendtag.
_VOID = frozenset(
    {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}
)


class _Paragraphs(html.parser.HTMLParser):
    """Collects the paragraphs (text between block boundaries, outside skipped elements) of one page."""

    def __init__(self, markup):
        super().__init__(convert_charrefs=True)
        self.markup = markup
        self.paragraphs = []
        self._open = []  # (tag, skipped) of the open elements
        self._skipped = 0  # how many of them are skipped
        self._text = []

    def _flush(self):
        text = " ".join("".join(self._text).split())
        if text:
            self.paragraphs.append(text)
        self._text = []

    def handle_starttag(self, tag, attrs):
        tag = tag.split(":")[-1]  # mal:credit and the like
        if tag in self.markup.blocks and not self._skipped:
            self._flush()
        if tag in _VOID:
            return
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        skipped = (
            tag in self.markup.skip_tags
            or bool(classes & self.markup.skip_classes)
            or attributes.get("id") in self.markup.skip_ids
        )
        self._open.append((tag, skipped))
        self._skipped += skipped

    def handle_startendtag(self, tag, attrs):
        if tag.split(":")[-1] in self.markup.blocks and not self._skipped:
            self._flush()

    def handle_endtag(self, tag):
        tag = tag.split(":")[-1]
        # HTML leaves some elements unclosed (<p>, <li>): closing an outer one closes them too.
        if not any(name == tag for name, _ in self._open):
            return
        while True:
            name, skipped = self._open.pop()
            self._skipped -= skipped
            if name == tag:
                break
        if tag in self.markup.blocks and not self._skipped:
            self._flush()

    def handle_data(self, data):
        if not self._skipped:
            self._text.append(data)

    def close(self):
        super().close()
        self._flush()


def page_lines(path, markup):
    """The paragraphs of an HTML or Mallard page, each whitespace-collapsed."""
    parser = _Paragraphs(markup)
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.paragraphs


# ------------------------------------------------------------------------------------------------------------
# Messages of gettext catalogues


def mo_messages(path):
    """The translations (msgstr, each plural form) of a GNU .mo file, decoded with the catalogue's charset.

    Read here rather than with `msgunfmt` (the gettext package) or the `gettext` module's private catalogue:
    the format is a header and two tables of (length, offset) pairs.
    """
    data = path.read_bytes()
    order = "<" if data[:4] == b"\xde\x12\x04\x95" else ">"
    count, originals, translations = struct.unpack(order + "3I", data[8:20])
    entries = []
    for index in range(count):
        original = struct.unpack_from(order + "2I", data, originals + 8 * index)
        length, offset = struct.unpack_from(order + "2I", data, translations + 8 * index)
        entries.append((original[0], data[offset : offset + length]))
    charset = "utf-8"
    for original_length, translation in entries:
        if original_length == 0:  # the header: "Content-Type: text/plain; charset=UTF-8"
            found = re.search(rb"charset=([\w-]+)", translation)
            charset = found.group(1).decode() if found else charset
    messages = []
    for original_length, translation in entries:
        if original_length and translation:
            messages.extend(translation.decode(charset, errors="replace").split("\0"))
    return messages


# Markup inside messages ("<b>%s</b>"), LibreOffice's "~" and GTK's "_" before a menu mnemonic.
_MESSAGE_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_MNEMONIC = re.compile(r"~|(?<!\w)_(?=\w)")


def catalogue_lines(path):
    """The lines of a catalogue's messages: tags, entities and mnemonic marks stripped."""
    lines = []
    for message in mo_messages(path):
        text = html.unescape(_MNEMONIC.sub("", _MESSAGE_TAG.sub("", message)))
        lines.extend(" ".join(line.split()) for line in text.split("\n"))
    return lines


# ------------------------------------------------------------------------------------------------------------
# Corpora


def source_lines(source, root, markups=MARKUPS):
    """(path, lines) of each file of source under root (sorted, for stable output)."""
    for path in sorted(glob.glob(str(root / source.pattern), recursive=True)):
        path = pathlib.Path(path)
        if not path.is_file():
            continue
        if source.kind == "gettext":
            yield path, catalogue_lines(path)
        else:
            yield path, page_lines(path, markups[source.kind])


def language_lines(language, roots):
    """The kept, distinct lines of language in reading order, and counts per package."""
    seen, lines = set(), []
    counts = collections.defaultdict(collections.Counter)
    for source in language.sources:
        for _, candidates in source_lines(source, roots[source.package]):
            counts[source.package]["files"] += 1
            for line in candidates:
                # NFC: the pages mix composed and decomposed marks; one form per line keeps duplicates out.
                line = unicodedata.normalize("NFC", line)
                if not keep_line(line, language):
                    continue
                counts[source.package]["read"] += 1
                if line in seen:
                    continue
                seen.add(line)
                lines.append(line)
                counts[source.package]["kept"] += 1
    return lines, {name: dict(counter) for name, counter in counts.items()}


def line_hash(line):
    return hashlib.blake2b(line.encode(), digest_size=8).digest()


def split_lines(lines):
    """(train, heldout): the HELDOUT_LINES lines of smallest blake2b hash held out, both in reading order."""
    held = set(sorted(lines, key=line_hash)[:HELDOUT_LINES])
    if len(held) < HELDOUT_LINES or len(lines) < 2 * HELDOUT_LINES:
        sys.exit(f"only {len(lines)} lines: at least {2 * HELDOUT_LINES} are needed (half for training)")
    return [line for line in lines if line not in held], [line for line in lines if line in held]


# ------------------------------------------------------------------------------------------------------------
# Documents for the corpus walk (--walk): one page a document, one sentence a line

# The walk's corpora (bench/language_walk.py): the LibreOffice and GNOME help pages, and Debian's New
# Maintainers' Guide and Installation Guide (DocBook HTML), whose translations are complete where much of the
# help is not (the Vietnamese help alone gives 1.66 MB of documents).
WALK_LANGUAGES = (
    Language(
        "ja", "Japanese", "japanese",
        (
            *help_sources("ja", "ja"),
            Source("maint-guide-ja", "docbook", "usr/share/doc/maint-guide-ja/html/*.ja.html"),
            Source("installation-guide-amd64", "docbook", "usr/share/doc/installation-guide-amd64/ja/*.html"),
        ),
    ),
    Language(
        "vi", "Vietnamese", "latin",
        (
            *help_sources("vi", "vi"),
            Source("maint-guide-vi", "docbook", "usr/share/doc/maint-guide-vi/html/*.vi.html"),
            Source("installation-guide-amd64", "docbook", "usr/share/doc/installation-guide-amd64/vi/*.html"),
        ),
    ),
)  # fmt: skip
# What the walk needs: bench/language_walk.py's issue asks for at least 2 MB of text per language.
MIN_WALK_BYTES = 2_000_000
# A page with fewer kept sentences gives the sentence-order task nothing to learn.
MIN_DOCUMENT_SENTENCES = 2
# The share of a page's sentences (of at least MIN_CHARS characters) that must be in the language: below it
# the page is mostly untranslated (English) or code, and is dropped whole.
MIN_PAGE_SHARE = 0.5

WALK_RULE = (
    "one document per page (blank lines between), one sentence per line in reading order, NFC; sentences "
    f"kept by the language's line filter; a page dropped when under {MIN_PAGE_SHARE:.0%} of its sentences "
    f"(of {MIN_CHARS} characters or more) are kept, when under {MIN_DOCUMENT_SENTENCES} are left, or when it "
    f"repeats an earlier page; a sentence already kept {MAX_SENTENCE_REPEATS} times dropped from later pages"
)

# Closing brackets and quotes stay with the sentence they close. After one, a particle means the quote was
# part of a longer sentence (「保存しました。」と表示されます。): no split there.
_CLOSERS = "」』）)]】〕〉》”’\"'"
_CJK_END = re.compile(r"[。！？]+[" + re.escape(_CLOSERS) + "]*")
_CJK_PARTICLES = frozenset("とをがのはにでもや")
# Latin script: ". ", "? ", "! " (and their closing quotes) before a capital, a digit or an opening quote; a
# lower-case word after it ("v.v. đã", "e.g. the") continues the sentence.
_LATIN_END = re.compile(r"[.?!]+[\"'”’)\]]*\s+(?=[\"'“‘(\[]?\w)")


def split_sentences(paragraph, script):
    """The sentences of a paragraph: at 。！？ for Japanese and Chinese, at ". ", "? ", "! " otherwise."""
    sentences, start = [], 0
    if script in ("japanese", "han"):
        for match in _CJK_END.finditer(paragraph):
            end = match.end()
            if match.group()[-1] in _CLOSERS and paragraph[end : end + 1] in _CJK_PARTICLES:
                continue
            sentences.append(paragraph[start:end])
            start = end
    else:
        for match in _LATIN_END.finditer(paragraph):
            following = paragraph[match.end() :].lstrip("\"'“‘([")
            if following[:1].isupper() or following[:1].isdigit():
                sentences.append(paragraph[start : match.end()])
                start = match.end()
    sentences.append(paragraph[start:])
    return [sentence.strip() for sentence in sentences if sentence.strip()]


def page_sentences(paragraphs, language):
    """(the page's sentences written in the language, in reading order, each in NFC and kept by keep_line's
    per-language filter; their share of the page's sentences of at least MIN_CHARS characters)."""
    sentences, total = [], 0
    for paragraph in paragraphs:
        for sentence in split_sentences(unicodedata.normalize("NFC", paragraph), language.script):
            if len("".join(sentence.split())) < MIN_CHARS:  # labels, short headings: too short to judge
                continue
            total += 1
            if keep_line(sentence, language):
                sentences.append(sentence)
    return sentences, len(sentences) / max(total, 1)


def language_documents(language, roots):
    """The walk's documents of language: one per page, in reading order, and counts per package.

    A page is dropped when under MIN_PAGE_SHARE of its sentences are in the language, when fewer than
    MIN_DOCUMENT_SENTENCES are left after boilerplate (a sentence already kept MAX_SENTENCE_REPEATS times,
    as in the study corpus) is dropped, or when an earlier page gave the same text.
    """
    documents, repeats, seen = [], collections.Counter(), set()
    counts = collections.defaultdict(collections.Counter)
    for source in language.sources:
        for _, paragraphs in source_lines(source, roots[source.package], WALK_MARKUPS):
            counts[source.package]["pages"] += 1
            sentences, share = page_sentences(paragraphs, language)
            if share < MIN_PAGE_SHARE:
                continue
            sentences = drop_repeats(sentences, repeats)
            text = "\n".join(sentences)
            digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
            if len(sentences) < MIN_DOCUMENT_SENTENCES or digest in seen:
                continue
            seen.add(digest)
            repeats.update(sentences)
            documents.append(text)
            counts[source.package].update(documents=1, sentences=len(sentences), bytes=len(text.encode()) + 2)
    return documents, {name: dict(counter) for name, counter in counts.items()}


def write_walk(roots, versions, output_dir):
    """Writes output_dir/walk/LANG.txt for WALK_LANGUAGES (documents separated by blank lines) and
    walk/manifest.json; returns the languages whose text falls short of MIN_WALK_BYTES."""
    folder = output_dir / "walk"
    folder.mkdir(parents=True, exist_ok=True)
    manifest, short = {"rule": WALK_RULE, "languages": {}}, []
    print(f"\n{'language':<12} {'documents':>9} {'sentences':>9} {'MB':>6}  documents per package")
    for language in WALK_LANGUAGES:
        documents, counts = language_documents(language, roots)
        text = "\n\n".join(documents) + "\n"
        size = len(text.encode())
        write_atomic(folder / f"{language.code}.txt", text)
        sentences = sum(count.get("sentences", 0) for count in counts.values())
        manifest["languages"][language.code] = {
            "name": language.name,
            "documents": len(documents),
            "sentences": sentences,
            "bytes": size,
            "sources": [dataclasses.asdict(source) for source in language.sources],
            "per_package": counts,
        }
        per_package = ", ".join(
            f"{name} {count.get('documents', 0)} of {count['pages']} pages" for name, count in counts.items()
        )
        print(f"{language.name:<12} {len(documents):>9} {sentences:>9} {size / 1e6:>6.2f}  {per_package}")
        if size < MIN_WALK_BYTES:
            short.append(f"{language.code} ({size:,} bytes)")
    manifest["packages"] = [
        {"name": name, "version": versions[name], "licence": PACKAGES[name].licence} for name in roots
    ]
    write_atomic(folder / "manifest.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return short


_GNU_LICENCE = r"(?:GNU (?:Lesser |Library )?General Public License|GNU GPL)[^.]*?(?:version [\d.]+[^.;]*|\.)"


def licence_line(path):
    """The `License:` of the copyright file's `Files: *` stanza (machine-readable files), else the first
    statement of a GNU licence in it."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found = re.search(r"^Files:\s*\*\s*\n(?:[^\n]+\n)*?License:\s*([^\n]+)", text, re.M)
    if found:
        return found.group(1).strip()
    # A free-form file: its first statement of a GNU licence.
    found = re.search(_GNU_LICENCE, " ".join(text.split()))
    return "free-form, first: " + (found.group(0) if found else "no GNU licence named")


def fetch_all(languages, scratch):
    """Downloads and unpacks every package the languages read; returns ({name: root}, {name: version})."""
    roots, versions = {}, {}
    for language in languages:
        for source in language.sources:
            name = source.package
            if name in roots:
                continue
            if FORBIDDEN.match(name):
                sys.exit(f"{name} is reserved for an independent evaluation")
            roots[name], versions[name] = fetch_package(PACKAGES[name], scratch)
    return roots, versions


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--output_dir", type=pathlib.Path, default=ROOT / "runs" / "multilingual")
    parser.add_argument(
        "--scratch_dir",
        type=pathlib.Path,
        default=pathlib.Path("/tmp/multilingual_scratch"),
        help="downloaded .deb files and unpacked packages; reused when run again",
    )
    parser.add_argument(
        "--walk",
        action="store_true",
        help="instead, the corpus walk's documents: walk/ja.txt and walk/vi.txt (bench/language_walk.py)",
    )
    args = parser.parse_args()
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: this script needs a Debian system (apt-get, dpkg-deb)")
    started = time.monotonic()
    roots, versions = fetch_all(WALK_LANGUAGES if args.walk else LANGUAGES, args.scratch_dir)
    print(f"{len(roots)} packages fetched and unpacked in {time.monotonic() - started:.0f} s", flush=True)
    print(f"{'package':<28} {'version':<22} licence (ours; the copyright file's Files: *)")
    (args.output_dir / "copyright").mkdir(parents=True, exist_ok=True)
    for name in roots:
        path = copyright_file(args.scratch_dir, name)
        write_atomic(args.output_dir / "copyright" / name, path.read_text(encoding="utf-8", errors="replace"))
        print(f"{name:<28} {versions[name]:<22} {PACKAGES[name].licence}; {licence_line(path)}")
    if args.walk:
        short = write_walk(roots, versions, args.output_dir)
        print(f"{args.output_dir / 'walk'}: done in {time.monotonic() - started:.0f} s")
        if short:
            sys.exit(f"under {MIN_WALK_BYTES:,} bytes, too little for the walk: {', '.join(short)}")
        return
    manifest = {
        "split_rule": f"per language, the {HELDOUT_LINES} lines of smallest blake2b(line, digest_size=8) "
        "are heldout.txt, the others train.txt, both in reading order",
        "packages": [
            {"name": name, "version": versions[name], "licence": PACKAGES[name].licence} for name in roots
        ],
        "languages": {},
    }
    print(f"\n{'language':<12} {'train':>7} {'heldout':>8} {'MB':>6}  lines kept (distinct) per package")
    for language in LANGUAGES:
        lines, counts = language_lines(language, roots)
        train, heldout = split_lines(lines)
        folder = args.output_dir / language.code
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "train.txt", "".join(line + "\n" for line in train))
        write_atomic(folder / "heldout.txt", "".join(line + "\n" for line in heldout))
        size = sum(len(line.encode()) + 1 for line in lines) / 1e6
        manifest["languages"][language.code] = {
            "name": language.name,
            "train_lines": len(train),
            "heldout_lines": len(heldout),
            "sources": [dataclasses.asdict(source) for source in language.sources],
            "lines_per_package": counts,
        }
        per_package = ", ".join(f"{name} {count.get('kept', 0)}" for name, count in counts.items())
        print(
            f"{language.name:<12} {len(train):>7} {len(heldout):>8} {size:>6.2f}  {per_package}", flush=True
        )
    write_atomic(args.output_dir / "manifest.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    print(f"{args.output_dir}: done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
