"""Links between the project's documents: every relative link names a file that exists and, with `#anchor`,
a heading of that file (GitHub's anchors: the heading lowercased, punctuation dropped, spaces as hyphens)."""

import re
import urllib.parse

from tests.helpers import REPO, repository_files

LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(?P<title>.+?) *#*$")
FENCE = re.compile(r"^ *```")


def markdown_files():
    return [REPO / name for name in repository_files() if name.endswith(".md")]


def _outside_code(path):
    """(line number, line) of a markdown file, skipping fenced code blocks."""
    inside = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            yield number, line


def anchors(path):
    """The anchors GitHub gives a markdown file's headings (a repeated one gets -1, -2, ...)."""
    found, seen = set(), {}
    for _, line in _outside_code(path):
        heading = HEADING.match(line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading["title"].replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path):
    broken = []
    for number, line in _outside_code(path):
        for link in LINK.finditer(line):
            target = link["target"]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / urllib.parse.unquote(file_part)).resolve() if file_part else path
            where = f"{path.relative_to(REPO)}:{number}: {target}"
            if not linked.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
                broken.append(f"{where} (no such heading)")
    return broken


def test_every_link_names_a_file_and_heading_that_exist():
    files = markdown_files()
    assert REPO / "README.md" in files and any(path.parent.name == "docs" for path in files)
    broken = [problem for path in files for problem in broken_links(path)]
    assert not broken, "broken links:\n" + "\n".join(broken)


# A section cited in plain text: `bench/README.md, "Quick start throughput"` (in code comments too, where a
# comment's `#` may stand at the start of a wrapped line).
CITED_SECTION = re.compile(r'(?P<page>(?:bench/)?README(?:\.md)?), "(?P<title>[^"]+)"')


def _cited_sections(text):
    unwrapped = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
    return [(match["page"], match["title"]) for match in CITED_SECTION.finditer(unwrapped)]


def test_every_section_cited_in_plain_text_is_a_heading_of_its_page():
    titles = {}
    for page in ("README.md", "bench/README.md"):
        headings = [HEADING.match(line) for _, line in _outside_code(REPO / page)]
        titles[page] = {heading["title"].strip() for heading in headings if heading}
    missing = []
    for name in repository_files():
        if name.startswith("bench/results/") or not name.endswith((".md", ".py", ".flags", ".ipynb")):
            continue
        for page, title in _cited_sections((REPO / name).read_text(encoding="utf-8")):
            page = page if page.endswith(".md") else page + ".md"
            if title not in titles[page]:
                missing.append(f"{name}: {page}, {title!r}")
    assert not missing, "sections cited that their page does not have:\n" + "\n".join(missing)


def test_anchors_follow_github_rules(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Serving raw text, float32 (`bench/serving.py`)\n## Set up\n## Set up\n```\n# code\n```\n"
    )
    assert anchors(page) == {"serving-raw-text-float32-benchservingpy", "set-up", "set-up-1"}
