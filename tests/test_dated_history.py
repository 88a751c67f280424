"""Figures live in bench/ (with the command, CPU and date), history lives in git: code, packaging, flagfiles
and documentation pages hold no dated measurement or session history. No TensorFlow here: text only."""

import re

from tests.helpers import REPO, repository_files

# bench/'s results and its README hold the dated runs; its scripts are code like any other.
EXCLUDED_FOLDERS = ("bench/README.md", "bench/results/", "bench/study/", "tests/testdata/")
CODE_SUFFIXES = (".py", ".flags", ".toml")
# A date, except in the name of a dated results file that a page links to (bench/results/DATE-....md).
ISO_DATE = re.compile(r"(?<!results/)\b20\d\d-\d\d-\d\d\b")
# A named CPU model is a measurement's machine; cpuinfo flags (avx512_bf16, amx_bf16) are fine: code detects
# them. The brackets keep this file's own pattern from matching itself.
CPU_MODEL = re.compile(r"\b(EP[Y]C|Xe[o]n|Sapphire Rapid[s]|H1[0]0|H2[0]0|A1[0]0)\b", re.IGNORECASE)


def _outside_bench(path):
    return not path.startswith(EXCLUDED_FOLDERS)


def _is_checked_for_dates(path):
    """Code, packaging, flagfiles, notebooks and documentation pages."""
    if not _outside_bench(path):
        return False
    return (
        path.endswith((*CODE_SUFFIXES, ".cfg", ".md", ".ipynb"))
        or path == ".ci/run"
        or (path.startswith("export/") and path.endswith(".config"))
    )


def _text_lines(path):
    """The file's lines, read as UTF-8; none for a binary file (a NUL byte, or not UTF-8)."""
    data = (REPO / path).read_bytes()
    if b"\0" in data:
        return []
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return []


def _matches(paths, pattern):
    return [
        f"{path}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(_text_lines(path), start=1)
        if pattern.search(line)
    ]


def test_no_dated_measurement_outside_bench():
    """A date in code or a page is a measurement's or a session's: its figures belong in bench/README.md
    (with the command and CPU), its history in git."""
    paths = [path for path in repository_files() if _is_checked_for_dates(path)]
    assert paths, "no files to check: the selection is wrong"
    found = _matches(paths, ISO_DATE)
    assert not found, "dated measurements or history outside bench/:\n" + "\n".join(found)


def test_no_session_history_in_code_comments():
    """Comments, docstrings and help texts say what the code does and why, not on which machine a figure was
    measured: that belongs in bench/README.md."""
    paths = [path for path in repository_files() if _outside_bench(path) and path.endswith(CODE_SUFFIXES)]
    found = _matches(paths, CPU_MODEL)
    assert not found, "CPU models named outside bench/:\n" + "\n".join(found)
