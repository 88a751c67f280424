"""Builds train.csv and dev.csv: sentences of the Python 3.11 library reference, labelled by topic.

Source: the same Debian package as the sample corpus (`python3.11-doc` 3.11.2-6+deb12u8,
`usr/share/doc/python3.11/html/_sources/library`), under the PSF licence (../sample/LICENSE.rst). None of
these pages is in the pretraining sample corpus, which stops before the library reference.

    apt-get download python3.11-doc && dpkg-deb -x python3.11-doc_*.deb pkg
    python data/doc_topics/make_doc_topics.py pkg/usr/share/doc/python3.11/html/_sources

Each sentence (prose only, as make_sample_corpus.py extracts it) takes the topic of the page it documents.
Sections (text between two headings) go whole to train or dev, so no section is split across the two; each
topic keeps the same number of sentences in each file.
"""

import csv
import hashlib
import importlib.util
import pathlib
import random
import re
import sys

TOPICS = {
    "internet": ("socket", "ssl", "socketserver", "http.client", "http.server", "http.cookies",
                 "http.cookiejar", "urllib.request", "urllib.parse", "urllib.error", "urllib.robotparser",
                 "ftplib", "poplib", "imaplib", "smtplib", "ipaddress", "email.message", "email.parser",
                 "email.policy", "email.headerregistry", "email.utils", "xmlrpc.client", "xmlrpc.server",
                 "wsgiref", "webbrowser", "nntplib", "telnetlib"),
    "numbers": ("math", "cmath", "decimal", "fractions", "numbers", "random", "statistics"),
    "files": ("os.path", "pathlib", "shutil", "tempfile", "glob", "fnmatch", "filecmp", "stat", "fileinput",
              "zipfile", "tarfile", "gzip", "bz2", "lzma", "zlib", "io", "linecache"),
    "concurrency": ("threading", "multiprocessing", "multiprocessing.shared_memory", "concurrent.futures",
                    "subprocess", "sched", "queue", "_thread", "contextvars", "asyncio-task", "asyncio-sync",
                    "asyncio-queue", "asyncio-eventloop", "asyncio-subprocess", "asyncio-runner"),
}  # fmt: skip
TRAIN_PER_TOPIC, DEV_PER_TOPIC = 400, 100
MAX_SENTENCE_WORDS = 60
# Directives whose indented body is prose: the reference describes each function and class inside one.
_DESCRIPTION = re.compile(
    r"^\s*\.\. (function|method|class|attribute|data|exception|decorator|decoratormethod|classmethod|"
    r"staticmethod|abstractmethod|coroutinefunction|coroutinemethod|describe|note|versionchanged|"
    r"versionadded|deprecated|impl-detail)::"
)


def _corpus_module():
    path = pathlib.Path(__file__).resolve().parent.parent / "sample" / "make_sample_corpus.py"
    spec = importlib.util.spec_from_file_location("make_sample_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unwrap_descriptions(lines):
    """reST lines with description directives unwrapped: header, signature lines and options dropped, body
    dedented. Code blocks inside a body stay indented relative to it, so the prose extraction skips them.
    """
    out, bodies = [], []  # bodies: the indents of the open directives' bodies
    header, in_header = None, False  # a directive's indent; whether its header lines are still going
    for line in lines:
        stripped, indent = line.strip(), len(line) - len(line.lstrip())
        if in_header:  # signature continuations and options run up to the first blank line
            in_header = bool(stripped)
            continue
        if header is not None and stripped:  # the first line after the header: the body, if indented
            if indent > header:
                bodies.append(indent)
            header = None
        while bodies and stripped and indent < bodies[-1]:
            bodies.pop()
        if _DESCRIPTION.match(line):
            out.append("")
            header, in_header = indent, True
            continue
        out.append(line[bodies[-1] :] if bodies and stripped else line)
    return out


def main(sources):
    corpus = _corpus_module()
    library = pathlib.Path(sources) / "library"
    found = {}  # (topic, split) → sentences
    for topic, pages in TOPICS.items():
        for page in pages:
            lines = (library / f"{page}.rst.txt").read_text(encoding="utf-8").splitlines()
            for number, document in enumerate(corpus.documents_of_lines(unwrap_descriptions(lines))):
                # A stable 1-in-5 draw per section: the same split on every machine and Python.
                digest = hashlib.sha256(f"{page}/{number}".encode()).digest()
                split = "dev" if digest[0] % 5 == 0 else "train"
                found.setdefault((topic, split), set()).update(
                    s
                    for s in document
                    if len(s.split()) <= MAX_SENTENCE_WORDS and not s.startswith("Source code:")
                )
    # A sentence written in two places (boilerplate) would be in two topics or in both files: drop it.
    seen = {}
    for (topic, split), sentences in found.items():
        for sentence in sentences:
            seen.setdefault(sentence, set()).add((topic, split))
    rows = {"train": [], "dev": []}
    for topic in TOPICS:
        for split, count in (("train", TRAIN_PER_TOPIC), ("dev", DEV_PER_TOPIC)):
            sentences = sorted(s for s in found[topic, split] if len(seen[s]) == 1)
            if len(sentences) < count:
                raise SystemExit(f"{topic}: only {len(sentences)} {split} sentences, {count} wanted")
            chosen = random.Random(topic).sample(sentences, count)
            rows[split].extend((sentence, topic) for sentence in chosen)
    target = pathlib.Path(__file__).resolve().parent
    for split, split_rows in rows.items():
        random.Random(split).shuffle(split_rows)
        with open(target / f"{split}.csv", "w", encoding="utf-8", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["text", "label"])
            writer.writerows(split_rows)
        print(f"{split}.csv: {len(split_rows)} sentences")


if __name__ == "__main__":
    main(sys.argv[1])
