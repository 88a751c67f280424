"""The fine-tuning notebook runs top to bottom, and the classifier it fine-tunes from the shipped pretrained
model (data/study/model) beats the same model fine-tuned from random weights."""

import json
import pathlib
import re

import nbclient
import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "finetune_text_classification.ipynb"


@pytest.mark.slow
def test_notebook_fine_tunes_exports_and_beats_random_init(tmp_path, monkeypatch):
    work = tmp_path
    monkeypatch.setenv("ALBERT_TF_WORK", str(work))  # the kernel inherits it: models and exports go there
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells), "commit the notebook without outputs"
    client = nbclient.NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
    results = json.loads((work / "doc_topics" / "eval_results.json").read_text())
    assert len(results["labels"]) == 4
    # The bars, from measured seed variance (the study's doc_topics fine-tunings use this recipe:
    # bench/README.md, "Pretraining study"). The shipped model fine-tuned: 0.7625 / 0.765 / 0.7475 over 3
    # seeds and 0.755 here (2-core Intel Xeon, 2026-11-26; sd 0.009). The same model from random weights:
    # 0.7225 at most over every run measured (seeds 1-3 of the study: 0.680 / 0.7025 / 0.545 there,
    # 0.538-0.710 on an AMD EPYC and at most 0.703 on another Xeon, 2026-11-25; 0.445 here; 0.7225 here with
    # seed 1's random weights shipped in place of the model: from scratch some seeds train far worse, some
    # nearly as well). So the pretrained model clears 0.735, halfway between the best random-init run and
    # the worst pretrained one, and beats this notebook's own random-init run by at least the closest pair
    # of all, 0.7475 against 0.7225.
    assert results["accuracy"] >= 0.735, results
    assert results["accuracy"] - results["random_init_accuracy"] >= 0.025, results
    assert (work / "doc_topics" / "serving" / "1" / "saved_model.pb").exists()
    printed = "".join(o["text"] for o in notebook.cells[-2].outputs if o.get("name") == "stdout")
    served = re.findall(r"^(\w+) +(0\.\d\d|1\.00)  (.+)$", printed, flags=re.MULTILINE)
    assert len(served) == 4 and {label for label, _, _ in served} <= set(results["labels"]), printed
