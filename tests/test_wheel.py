"""The package as a user gets it from its wheel (`pip wheel .`, what BUILD.md's Beam worker image installs):
built, installed into a fresh virtual environment, and run from a folder away from the source tree, so
nothing is imported from the checkout. An editable install (`pip install -e .`) would hide a sub-package
that the wheel leaves out."""

import ast
import os
import pathlib
import shutil
import site
import subprocess
import sys

import pytest

from tests.helpers import REPO

ENTRY_POINTS = (
    "train_tokenizer",
    "create_pretraining_data",
    "run_pretraining",
    "run_classifier",
    "run_squad",
    "run_race",
    "export_saved_model",
    "convert_checkpoint",
    "model_summary",
)
# What setup.py needs to build the wheel; copied out so that the build writes nothing into the checkout.
BUILD_INPUTS = ("setup.py", "pyproject.toml", "README.md", "albert_tf")


def _run(command, cwd, timeout=600, returncode=0):
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
    output = f"{command}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.returncode == returncode, output
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the interpreter of a fresh virtual environment holding the wheel, a work folder outside the repo).

    The dependencies (TensorFlow and the rest) come from this interpreter's site-packages, without network:
    a .pth file lists those folders after the environment's own. Not `--system-site-packages`, which would
    also run their .pth files, among them the hook of an editable install of albert_tf (`pip install -e .`,
    as CI installs it) that serves from the checkout whatever sub-package the wheel lacks.
    """
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(REPO / name, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", ".",
          "-w", str(root / "dist")], cwd=source)  # fmt: skip
    (wheel,) = (root / "dist").glob("albert_tf-*.whl")
    _run([sys.executable, "-m", "venv", str(root / "venv")], cwd=root)
    python = root / "venv" / "bin" / "python"
    own = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)
    dependencies = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    pathlib.Path(own.stdout.strip(), "dependencies.pth").write_text(
        "".join(f"{folder}\n" for folder in dependencies if os.path.isdir(folder))
    )
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], cwd=root)
    work = root / "work"
    work.mkdir()
    return python, work


@pytest.mark.slow
def test_every_entry_point_of_the_installed_wheel_runs_away_from_the_source_tree(installed):
    python, work = installed
    located = _run([str(python), "-c", "import albert_tf.checkpoints.convert as m; print(m.__file__)"], work)
    package = pathlib.Path(located.stdout.strip()).parent.parent
    assert package.resolve().is_relative_to(python.parent.parent.resolve()), package
    assert not package.resolve().is_relative_to(REPO), package
    for entry_point in ENTRY_POINTS:
        # absl's --helpshort prints the module's docstring and the flags it defines (under its file's path),
        # then exits 1; a module that fails to import gives a traceback instead.
        result = _run([str(python), "-m", f"albert_tf.{entry_point}", "--helpshort"], work, 120, returncode=1)
        installed_file = package / f"{entry_point}.py"
        assert result.stdout.startswith(ast.get_docstring(ast.parse(installed_file.read_text()))), entry_point
        assert "Traceback" not in result.stderr and str(REPO) not in result.stdout, result.stderr[-2000:]


@pytest.mark.slow
def test_the_installed_wheel_converts_a_hugging_face_directory(installed):
    python, work = installed
    _run([str(python), "-m", "albert_tf.convert_checkpoint", "--source=hf",
          f"--input={REPO / 'tests' / 'testdata' / 'hf_single_group'}", "--output_dir=models/converted"],
         work)  # fmt: skip
    written = sorted(os.listdir(work / "models" / "converted"))
    assert written == ["albert_config.json", "pretrainer.weights.h5", "tokenizer.json"], written
