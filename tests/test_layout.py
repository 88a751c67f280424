"""The package's layering: a folder imports only the parts ALLOWED names (what its `__init__.py` docstring
says), so imports go down; and the records builder loads without TensorFlow."""

import ast
import pathlib
import subprocess
import sys

import albert_tf

PACKAGE = pathlib.Path(albert_tf.__file__).parent
FOUNDATION = {
    "config",
    "features",
    "file_io",
    "file_systems",
    "input_options",
    "model_files",
    "shipped",
    "tf_startup",
}
# What each part may import besides itself and the foundation modules (top-level modules with no folder).
# Entry points (the other top-level modules) may import anything and nothing imports them but entry points.
ALLOWED = {
    "foundation": set(),
    "text": set(),
    "layers": set(),
    "models": {"layers", "text"},
    "checkpoints": {"models", "layers"},
    "training": set(),
    "pretraining.data": {"text"},
    "pretraining": {"pretraining.data", "checkpoints", "models", "layers", "text", "training"},
    "finetuning": {"models", "layers", "text", "training"},
    "serving": {"models", "layers", "text"},
}


def _part(module):
    """albert_tf.pretraining.data.units → "pretraining.data"; albert_tf.file_io → "foundation"."""
    names = module.split(".")[1:]
    if not names:
        return "package"
    if names[0] in FOUNDATION:
        return "foundation"
    if names[:2] == ["pretraining", "data"]:
        return "pretraining.data"
    if (PACKAGE / names[0]).is_dir():
        return names[0]
    return "entry point"


def _imports(path):
    """albert_tf modules a file imports, at any depth (imports inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from albert_tf.text import corpus` imports albert_tf.text.corpus.
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "albert_tf"}


def _allowed(importer, name):
    imported = _part(name)
    if importer == "entry point" or imported in (importer, "foundation", "package"):
        return True
    return any(allowed in (imported, name) or name.startswith(allowed + ".") for allowed in ALLOWED[importer])


def test_imports_only_go_down():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _part(".".join(("albert_tf", *path.relative_to(PACKAGE).with_suffix("").parts)))
        for name in sorted(_imports(path)):
            if not _allowed(importer, name):
                upward.append(f"{path.relative_to(PACKAGE.parent)} ({importer}) imports {name}")
    assert not upward, "imports that go up or sideways:\n" + "\n".join(upward)


def test_every_folder_says_what_it_holds_and_may_import():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring, f"{init} has no docstring"
        assert "May import:" in docstring, f"{init}: its docstring does not say what the folder may import"


def heavy_imports(modules):
    """Which of TensorFlow and Keras a fresh process imports with modules."""
    code = "".join(f"import {name}\n" for name in modules)
    code += "import sys\nprint(sorted({n.split('.')[0] for n in sys.modules} & {'tensorflow', 'keras'}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_records_builder_starts_without_tensorflow():
    """Every module of pretraining/data/ (and what it imports: text, features, file_io, file_systems) loads
    without TensorFlow or Keras: each builder worker would pay 600 MB for them."""
    names = sorted(path.stem for path in (PACKAGE / "pretraining" / "data").glob("*.py"))
    modules = [f"albert_tf.pretraining.data.{name}" for name in names if name != "__init__"]
    assert heavy_imports(modules) == "[]", "the builder's modules import TensorFlow or Keras"


def test_the_fine_tuning_commands_read_their_data_without_tensorflow():
    """run_classifier, run_race and run_squad load with what reads and checks their data and model directory
    (task_data, model_files) and no TensorFlow or Keras: a mistake is named before TensorFlow starts."""
    for command in ("run_classifier", "run_race", "run_squad"):  # one a process: they define the same flags
        modules = [f"albert_tf.{command}", "albert_tf.finetuning.task_data", "albert_tf.model_files"]
        assert heavy_imports(modules) == "[]", f"{command} imports TensorFlow or Keras"
