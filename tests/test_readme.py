"""The guide and reference pages, executed: the shell blocks of README.md, BUILD.md and docs/ run as
written, in order, in one fresh copy of the repository, as a new user would copy them (the README's walk
first, then the pages that build on its outputs); the README's Python prints what it shows; BUILD.md lists
what setup.py installs.

A block is skipped only when the line before it says why: `<!-- not run: REASON -->` (it needs a GPU, network,
a download, or it installs packages). Where a command would take long, or asks more of the bundled sample
than it holds, the test appends flags to it, and the document says so in its text (checked here). So the
guide cannot drift from the code. Their `python` is this interpreter's, each command forked from a server that
has imported TensorFlow (tests/command_server.py): how a command starts in a fresh interpreter is tested
elsewhere, and some thirty commands are spared its import.
"""

import dataclasses
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import command_server
from tests.helpers import REPO, setup_arguments

# In the order CI runs their blocks, in one folder: the README's walk first, then what builds on it.
DOC_PAGES = (
    "docs/data.md",
    "docs/pretraining.md",
    "docs/finetuning.md",
    "docs/serving.md",
    "docs/checkpoints.md",
    "docs/performance.md",
    "docs/contributing.md",
)
DOCUMENTS = ("README.md", "BUILD.md", *DOC_PAGES)
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w-]*)\s*$")
NOT_RUN = re.compile(r"^\s*<!-- not run: (?P<reason>\S.*\S) -->\s*$")
SHELL = {"bash", "sh", "shell", "console"}
# Flags appended to a command (a logical line starting with `python -m` + the key) so that CI runs it in
# seconds on the sample; each document must say so in its text, with these words.
APPENDED = {
    "README.md": {
        "albert_tf.run_pretraining --flagfile=tiny --input_file=records/train.manifest.json": (
            "--num_train_steps=4 --num_warmup_steps=1 --max_eval_steps=1"
        ),
        "albert_tf.run_classifier --task_name=text": "--train_step=2 --warmup_step=1",
    },
    "docs/finetuning.md": {
        "albert_tf.run_classifier --task_name=text --train_file=data/doc_topics/train.csv": (
            "--train_step=20 --warmup_step=2 --seed=1 --nojit_compile"
        ),
    },
}
# The commands of the README's walk: run, not opted out (corpus → tokenizer → records → pretraining →
# fine-tuning → export).
WALK = (
    "albert_tf.train_tokenizer",
    "albert_tf.create_pretraining_data",
    "albert_tf.run_pretraining --flagfile=tiny",
    "albert_tf.run_classifier",
    "albert_tf.export_saved_model",
)
# What the copy leaves out: version control, caches and build outputs anywhere, and at the top what the
# documents' commands write there.
NOT_COPIED = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    ".benchmarks",
    ".device",
    ".whl",
    ".venv",
)
OUTPUTS = {"build", "dist", "runs", "corpus", "heldout", "spm", "records", "records_beam", "models", "hf"}


def _not_copied(folder, names):
    top = OUTPUTS & set(names) if os.path.samefile(folder, REPO) else set()
    return NOT_COPIED(folder, names) | top


@dataclasses.dataclass
class Block:
    """A fenced code block: its document, opening line (1-based), language, text, and opt-out reason."""

    document: str
    line: int
    language: str
    text: str
    not_run: str | None

    def __str__(self):
        return f"{self.document}:{self.line}"


def blocks(document):
    """The fenced blocks of a document, in order (indented ones, in list items, dedented)."""
    lines = (REPO / document).read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = opening["indent"]
        marker = NOT_RUN.match(lines[index - 1]) if index else None  # the line right before the fence
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != f"{indent}```":
            end += 1
        assert end < len(lines), f"{document}:{index + 1}: the block never closes"
        text = "\n".join(line[len(indent) :] for line in lines[index + 1 : end]) + "\n"
        found.append(Block(document, index + 1, opening["language"], text, marker and marker["reason"]))
        index = end + 1
    return found


def commands(text):
    """The logical lines of a shell block: continuation lines (ending in a backslash) joined."""
    logical, current = [], []
    for line in text.splitlines():
        current.append(line)
        if not line.endswith("\\"):
            logical.append("\n".join(current))
            current = []
    return logical + (["\n".join(current)] if current else [])


def _normalized(text):
    return " ".join(text.replace("\\\n", " ").split())


def with_appended_flags(block, used):
    """The block's text with APPENDED's flags after each command they are for; adds the keys used to used."""
    lines = []
    for command in commands(block.text):
        for key, flags in APPENDED.get(block.document, {}).items():
            if _normalized(command).startswith(f"python -m {key}"):
                command += f" {flags}"
                used.add(key)
        lines.append(command)
    return "\n".join(lines) + "\n"


def shell_blocks(document):
    return [block for block in blocks(document) if block.language in SHELL]


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    """(a copy of the repository without outputs, an environment whose `python` is this interpreter's, as
    when it is activated: run by tests/command_server.py, whose children have imported TensorFlow)."""
    root = tmp_path_factory.mktemp("readme")
    work = root / "albert_tf"
    shutil.copytree(REPO, work, ignore=_not_copied)
    tools = root / "bin"
    tools.mkdir()
    server = command_server.start(tools)  # writes tools/python
    environment = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    environment.pop("PYTHONPATH", None)
    yield work, environment
    server.terminate()
    server.wait()


def test_every_block_not_run_says_why_and_the_walk_is_run():
    assert {str(path.relative_to(REPO)) for path in (REPO / "docs").glob("*.md")} == set(DOC_PAGES)
    for document in DOCUMENTS:
        lines = (REPO / document).read_text(encoding="utf-8").splitlines()
        markers = [n for n, line in enumerate(lines, 1) if re.match(r"\s*<!--.*not run", line)]
        opted_out = {block.line - 1 for block in blocks(document) if block.not_run}
        # A marker that does not parse, or stands anywhere but right before a block, would silently run it.
        assert all(NOT_RUN.match(lines[n - 1]) and n in opted_out for n in markers), (document, markers)
    run = " ".join(_normalized(block.text) for block in shell_blocks("README.md") if not block.not_run)
    for command in WALK:
        assert f"python -m {command}" in run, command
    for document, appended in APPENDED.items():
        text = _normalized((REPO / document).read_text(encoding="utf-8"))
        for flags in appended.values():
            assert flags in text, f"{document} does not say that CI appends {flags}"


def test_the_readme_is_a_guide_of_a_few_screens():
    assert len((REPO / "README.md").read_text(encoding="utf-8")) < 15_000  # reference goes to docs/


def quick_start_output():
    """The lines the README shows the quick start printing: its first `text` block."""
    return next(block for block in blocks("README.md") if block.language == "text").text.splitlines()


@pytest.mark.slow
def test_shell_blocks_of_the_readme_build_md_and_docs_run_as_written_in_a_fresh_copy(fresh_copy):
    work, environment = fresh_copy
    used, ran = set(), []
    for document in DOCUMENTS:
        for block in shell_blocks(document):
            if block.not_run:
                continue
            script = with_appended_flags(block, used)
            result = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", script], cwd=work, env=environment,
                capture_output=True, text=True, timeout=900,
            )  # fmt: skip
            assert result.returncode == 0, (
                f"{block}:\n{script}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
            )
            ran.append(str(block))
    every_key = {key for appended in APPENDED.values() for key in appended}
    assert used == every_key, used  # every command that CI shortens was found
    # The walk's outputs, each where the next command read it.
    for path in ("spm/albert.model", "records/train.manifest.json", "records/eval.manifest.json",
                 "runs/my_albert/pretrainer.weights.h5", "runs/my_albert/eval_results.json",
                 "runs/doc_topics/task_model.keras", "models/doc_topics/1/saved_model.pb",
                 "records_beam/train.manifest.json", "hf/my_albert/model.safetensors"):  # fmt: skip
        assert (work / path).is_file(), (path, ran)


# Runs a Python block statement by statement, as pasted into a fresh interpreter; an expression followed by
# a `# value` comment line must have that repr. Exits with the failures, one per line, on stderr (the block
# may print: a fit's progress).
CHECK_PYTHON = """
import ast, sys
source = sys.stdin.read()
lines = source.splitlines()
namespace, failures = {}, []
for statement in ast.parse(source).body:
    code = ast.get_source_segment(source, statement)
    following = lines[statement.end_lineno].strip() if statement.end_lineno < len(lines) else ""
    if isinstance(statement, ast.Expr) and following.startswith("# "):
        value = repr(eval(code, namespace))
        if value != following[2:]:
            failures.append(f"line {statement.lineno}: {code} gives {value}, the block shows {following[2:]}")
    else:
        exec(compile(ast.Module([statement], []), "<block>", "exec"), namespace)
if failures:
    sys.exit("\\n".join(failures))
"""


def python_blocks():
    """The Python blocks of the README and docs/ that run: each a snippet a user pastes whole."""
    return [b for d in DOCUMENTS for b in blocks(d) if b.language == "python" and not b.not_run]


def test_every_python_block_runs_and_shows_a_value():
    """None opted out, each with its imports, each showing a value the test checks."""
    every = [b for d in DOCUMENTS for b in blocks(d) if b.language == "python"]
    assert [str(block) for block in every if block.not_run] == []
    assert {block.document for block in every} >= {"README.md", "docs/finetuning.md"}
    for block in every:
        assert any(line.startswith("# (") for line in block.text.splitlines()), block  # it shows a value


@pytest.mark.slow
@pytest.mark.parametrize("block", python_blocks(), ids=str)
def test_python_blocks_print_what_the_documents_show(fresh_copy, block):
    work, environment = fresh_copy
    result = subprocess.run(
        ["python", "-c", CHECK_PYTHON], input=block.text, cwd=work, env=environment,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, f"{block}:\n{result.stderr[-3000:]}"


def _requirement_names(requirements):
    return {re.split(r"[<>=!~\[ ]", requirement)[0] for requirement in requirements}


def test_build_md_lists_what_each_install_command_installs():
    arguments = setup_arguments()
    install_requires, extras = arguments["install_requires"], arguments["extras_require"]
    listed = {}
    for block in shell_blocks("BUILD.md"):
        for line in block.text.splitlines():
            command, _, comment = line.partition("#")
            if command.strip() in ("pip install -e .", 'pip install -e ".[test]"'):
                # "tensorflow 2.21, tensorflow-text 2.21, ..." or "+ pytest, pytest-xdist, ...": the names.
                listed[command.strip()] = {item.split()[0] for item in comment.lstrip(" +").split(", ")}
    assert listed["pip install -e ."] == _requirement_names(install_requires)
    assert listed['pip install -e ".[test]"'] == _requirement_names(extras["test"])
    # The TPU VM's install: tensorflow-tpu for tensorflow, then every other requirement by name.
    tpu = next(block.text for block in shell_blocks("BUILD.md") if "tensorflow-tpu" in block.text)
    named = {re.split(r"[<>=!~\[ ]", word.strip('"'))[0] for word in tpu.split() if not word.startswith("-")}
    assert _requirement_names(install_requires) - {"tensorflow"} <= named and "tensorflow-tpu" in named


# What a command sees and how it ends, printed by each form of `python` invocation (a module of its working
# directory; code; a script on standard input; a script file).
PROBE = """import os, sys
print(sys.argv, repr(sys.path[0]), __name__, os.environ.get("PROBE"))
import probe_module
print(os.path.relpath(probe_module.__file__))
sys.exit(int(sys.argv[1]) if sys.argv[1:2] != ["-"] else 0)
"""


@pytest.mark.slow
def test_the_documents_python_runs_each_form_as_the_interpreter_does(tmp_path):
    """Arguments, sys.path's first entry, __main__, the environment, standard input and the exit status are
    what a fresh interpreter gives, and the package imports from the working directory."""
    (tmp_path / "probe_module.py").write_text("")
    (tmp_path / "probe.py").write_text(PROBE)
    tools = tmp_path / "bin"
    tools.mkdir()
    server = command_server.start(tools)
    try:
        for args, stdin in [
            (["-m", "probe", "3", "x"], ""),
            (["-c", PROBE, "4"], ""),
            (["-", "-"], PROBE),
            (["probe.py", "0", "y"], ""),
        ]:
            runs = [
                subprocess.run([python, *args], input=stdin, cwd=tmp_path, capture_output=True, text=True,
                               env={**os.environ, "PROBE": "given"}, timeout=120)
                for python in (sys.executable, str(tools / "python"))
            ]  # fmt: skip
            fresh, served = runs
            assert (served.returncode, served.stdout) == (fresh.returncode, fresh.stdout), (
                args,
                served.stderr,
            )
        failed = subprocess.run([tools / "python", "-c", "raise ValueError('no')"], capture_output=True,
                                text=True, timeout=120)  # fmt: skip
        assert failed.returncode == 1 and failed.stderr.splitlines()[-1] == "ValueError: no", failed.stderr
        assert (
            'File "<string>", line 1, in <module>' in failed.stderr and "command_server" not in failed.stderr
        )
    finally:
        server.terminate()
        server.wait()
