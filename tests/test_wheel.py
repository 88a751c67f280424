"""The package as a user gets it from its wheel (`pip wheel .`, what BUILD.md's Beam worker image installs):
built, installed into a fresh virtual environment, and run from a folder away from the source tree, so
nothing is imported from the checkout. An editable install (`pip install -e .`) would hide a sub-package
that the wheel leaves out."""

import ast
import os
import pathlib

import pytest

from tests.helpers import REPO, run_checked

ENTRY_POINTS = (
    "train_tokenizer",
    "create_pretraining_data",
    "run_pretraining",
    "run_classifier",
    "run_squad",
    "run_race",
    "export_saved_model",
    "export_litert",
    "convert_checkpoint",
    "model_summary",
    "summarize_sweep",
)
# The wheel's environment (conftest.py's installed_wheel) is the quick start's: one worker builds it once.
pytestmark = pytest.mark.xdist_group("installed_wheel")


@pytest.mark.slow
def test_every_entry_point_of_the_installed_wheel_runs_away_from_the_source_tree(installed_wheel, tmp_path):
    python, work = installed_wheel, tmp_path  # an empty folder outside the repo
    located = run_checked(
        [str(python), "-c", "import albert_tf.checkpoints.convert as m; print(m.__file__)"], work
    )
    package = pathlib.Path(located.stdout.strip()).parent.parent
    assert package.resolve().is_relative_to(python.parent.parent.resolve()), package
    assert not package.resolve().is_relative_to(REPO), package
    for entry_point in ENTRY_POINTS:
        # absl's --helpshort prints the module's docstring and the flags it defines (under its file's path),
        # then exits 1; a module that fails to import gives a traceback instead.
        result = run_checked(
            [str(python), "-m", f"albert_tf.{entry_point}", "--helpshort"], work, 120, returncode=1
        )
        installed_file = package / f"{entry_point}.py"
        assert result.stdout.startswith(ast.get_docstring(ast.parse(installed_file.read_text()))), entry_point
        assert "Traceback" not in result.stderr and str(REPO) not in result.stdout, result.stderr[-2000:]


@pytest.mark.slow
def test_the_installed_wheel_converts_a_hugging_face_directory(installed_wheel, tmp_path):
    python, work = installed_wheel, tmp_path
    run_checked([str(python), "-m", "albert_tf.convert_checkpoint", "--source=hf",
          f"--input={REPO / 'tests' / 'testdata' / 'hf_single_group'}", "--output_dir=models/converted"],
         work)  # fmt: skip
    written = sorted(os.listdir(work / "models" / "converted"))
    assert written == ["albert_config.json", "pretrainer.weights.h5", "tokenizer.json"], written
