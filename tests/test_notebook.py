"""The fine-tuning notebook runs top to bottom, and the classifier it fine-tunes from the shipped pretrained
model (data/study/model) beats the same model fine-tuned from random weights, with no TensorFlow start-up
notice among the cells' outputs."""

import json
import pathlib
import re

import nbclient
import nbformat
import pytest

from tests.helpers import INFO_LINE

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "finetune_text_classification.ipynb"


@pytest.mark.slow
def test_notebook_fine_tunes_exports_and_beats_random_init(tmp_path, monkeypatch):
    work = tmp_path
    monkeypatch.setenv("ALBERT_TF_WORK", str(work))  # the kernel inherits it: models and exports go there
    # Under pytest ipykernel leaves the kernel's own stderr (where TensorFlow's C++ notices go) out of the
    # cells' outputs; without this variable it shows it there, as Jupyter does for a user.
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells), "commit the notebook without outputs"
    client = nbclient.NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
    results = json.loads((work / "doc_topics" / "eval_results.json").read_text())
    assert len(results["labels"]) == 4
    # The bars, from runs of this notebook (the shipped model is the pretraining study's 2-layer SOP model:
    # bench/README.md, "Pretraining study", records the runs). Dev accuracy after epochs 1 / 2 / 6: the
    # shipped model 0.6225 / 0.740 / 0.7475; five random draws of the same model (seeds 1-4 saved as the
    # model directory, ALBERT_TF_MODEL_DIR, and this notebook's own random-init run) 0.25 (all five) /
    # 0.4225-0.4725 / 0.4225-0.7475. From random weights the 2-layer model is slow to start but can
    # end as high (seed 1: 0.7475), so the end alone does not tell pretraining from none: the early epochs do.
    # After 2 epochs the pretrained model clears 0.60, halfway between the best random draw and itself, and
    # beats this notebook's own random-init run by at least 0.13, half the closest pair (0.740 - 0.4725).
    # At the end it reaches 0.735, below every pretrained run measured (0.7475 here; the study's 3 seeds
    # 0.7525-0.77), and beats its own random-init run (0.4225 here).
    early, random_early = results["accuracy_by_epoch"][1], results["random_init_accuracy_by_epoch"][1]
    assert early >= 0.60, results
    assert early - random_early >= 0.13, results
    assert results["accuracy"] >= 0.735, results
    assert results["accuracy"] - results["random_init_accuracy"] >= 0.025, results
    assert (work / "doc_topics" / "serving" / "1" / "saved_model.pb").exists()
    shown = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", []))
    for notice in ("failed call to cuInit", "oneDNN custom operations are on", "absl::InitializeLog"):
        assert notice not in shown, f"a TensorFlow start-up notice in the notebook's outputs: {notice}"
    info_lines = INFO_LINE.findall(shown)  # INFO lines of any kind
    assert not info_lines, info_lines
    printed = "".join(o["text"] for o in notebook.cells[-2].outputs if o.get("name") == "stdout")
    served = re.findall(r"^(\w+) +(0\.\d\d|1\.00)  (.+)$", printed, flags=re.MULTILINE)
    assert len(served) == 4 and {label for label, _, _ in served} <= set(results["labels"]), printed
