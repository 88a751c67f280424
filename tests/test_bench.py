"""The benchmark scripts (bench/*.py) point at files that exist: they run rarely, by hand, so a file moved in
the repository would otherwise break them unnoticed until someone measures."""

import ast

from tests.helpers import REPO

BENCH = REPO / "bench"
# How the scripts name the repository's root, the folder they join paths onto.
ROOT_NAMES = {"ROOT", "REPO"}
# Where commands write (a default --model_dir, a scratch folder): made by a run, not in the repository.
OUTPUTS = ("runs/",)


def _joined(node):
    """[ROOT, "a", "b"] for `os.path.join(ROOT, "a", "b")` or `ROOT / "a" / "b"`, else None."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.path.join":
        return node.args
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left = _joined(node.left) if isinstance(node.left, ast.BinOp) else [node.left]
        return left and [*left, node.right]
    return None


def _paths_into_the_repository(source):
    """(line, relative path) of each path joined onto ROOT (or REPO) from literals only."""
    tree = ast.parse(source)
    inner = {id(n.left) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)}
    for node in ast.walk(tree):
        parts = None if id(node) in inner else _joined(node)  # a chain once, whole
        if not parts or len(parts) < 2:
            continue
        first, rest = parts[0], parts[1:]
        literal = all(isinstance(part, ast.Constant) and isinstance(part.value, str) for part in rest)
        if isinstance(first, ast.Name) and first.id in ROOT_NAMES and literal:
            yield node.lineno, "/".join(part.value for part in rest)


def test_every_path_a_benchmark_joins_onto_the_repository_exists():
    scripts = sorted(BENCH.glob("*.py"))
    assert len(scripts) > 10
    checked, missing = 0, []
    for script in scripts:
        for line, relative in _paths_into_the_repository(script.read_text(encoding="utf-8")):
            checked += 1
            if not relative.startswith(OUTPUTS) and not (REPO / relative).exists():
                missing.append(f"bench/{script.name}:{line}: {relative}")
    assert checked > 5  # the scan still finds the scripts' paths
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)
