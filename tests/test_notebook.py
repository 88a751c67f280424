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
    # The margin, from measured seed variance (2-core AMD EPYC, 2026-11-24): fine-tuned from the shipped
    # model, 0.740 / 0.728 / 0.762 over 3 seeds (bench/pretraining_study.py, same recipe) and 0.7525 here;
    # from random weights 0.505 / 0.698 / 0.532 and 0.6475 here (sd 0.104: from scratch some seeds train far
    # worse). The closest pair of all is 0.728 against 0.698, so the pretrained model wins by at least 0.03
    # whatever the seeds; here it wins by 0.105.
    assert results["accuracy"] - results["random_init_accuracy"] >= 0.03, results
    assert (work / "doc_topics" / "serving" / "1" / "saved_model.pb").exists()
    printed = "".join(o["text"] for o in notebook.cells[-2].outputs if o.get("name") == "stdout")
    served = re.findall(r"^(\w+) +(0\.\d\d|1\.00)  (.+)$", printed, flags=re.MULTILINE)
    assert len(served) == 4 and {label for label, _, _ in served} <= set(results["labels"]), printed
