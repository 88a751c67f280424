"""Fine-tuning sweeps (albert_tf/finetuning/sweep.py, sweep_summary.py): seeds by a grid on doc_topics, from
the study's pretrained model, with one learning rate that diverges."""

import dataclasses
import json
import os
import shutil
import statistics

import numpy as np
import pytest

from albert_tf.finetuning import sweep
from tests import commands
from tests.helpers import kill_once_saved

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "data", "doc_topics")
# Vertex AI's description of a job's replicas: a chief pool of one and a pool of two.
VERTEX = json.dumps({"cluster": {"workerpool0": ["a:1"], "workerpool1": ["b:1", "c:1"]},
                     "task": {"type": "workerpool1", "index": 1}})  # fmt: skip
GOOD, DIVERGING = "lr0.001_batch16_steps20", "lr1000.0_batch16_steps20"


def flags(output, *extra):
    """3 seeds x 2 learning rates, 20 steps each; the second rate's loss is not finite by step 10."""
    return [
        "--task_name=text", f"--train_file={DATA}/train.csv", f"--dev_file={DATA}/dev.csv",
        f"--model_dir={ROOT}/data/study/model", f"--output_dir={output}", "--max_seq_length=32",
        "--train_batch_size=16", "--learning_rate=1e-3,1e3", "--seed=1,2,3", "--train_step=20",
        "--warmup_step=2", "--save_checkpoints_steps=10", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The sweep run whole in one process: (its folder, the command's result)."""
    output = tmp_path_factory.mktemp("sweep") / "whole"
    return output, commands.run("albert_tf.run_classifier", flags(output))


def recomputed(output):
    """Each setting's accuracies by seed, read from each run's own files: a run that stopped has no
    eval_results.json and counts at the constant baseline, 0.25 (doc_topics' dev split has 100 of each of
    its 4 labels)."""
    values = {}
    for setting in (GOOD, DIVERGING):
        for seed in (1, 2, 3):
            path = output / setting / f"seed{seed}" / "eval_results.json"
            values.setdefault(setting, {})[seed] = (
                json.loads(path.read_text())["accuracy"] if path.exists() else 0.25
            )
    return values


@pytest.mark.slow
@pytest.mark.xdist_group("uninterrupted_sweep")  # one process runs the shared sweep once
def test_a_sweep_reports_each_settings_figures_over_its_seeds_and_names_its_failed_runs(uninterrupted):
    output, result = uninterrupted
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((output / "summary.json").read_text())
    values = recomputed(output)
    assert [entry["setting"] for entry in summary["settings"]] == [GOOD, DIVERGING]
    for entry in summary["settings"]:
        accuracies = list(values[entry["setting"]].values())
        figures = entry["figures"]["accuracy"]
        assert figures["median"] == pytest.approx(float(np.median(accuracies)), abs=1e-12)
        assert figures["mean"] == pytest.approx(float(np.mean(accuracies)), abs=1e-12)
        assert figures["std"] == pytest.approx(float(np.std(accuracies, ddof=1)), abs=1e-12)
        assert (figures["min"], figures["max"]) == (min(accuracies), max(accuracies))
        # A run failed when it stopped or ended at or below the constant prediction; each is named.
        failed = {run["seed"]: run["failed"] for entry_run in [entry] for run in entry_run["runs"]}
        expected = {seed for seed, value in values[entry["setting"]].items() if value <= 0.25}
        assert {seed for seed, why in failed.items() if why} == expected and entry["failed"] == len(expected)
    # Each run ends with its last step's evaluation, not its best: runs compare as trained.
    for seed in (1, 2, 3):
        results = json.loads((output / GOOD / f"seed{seed}" / "eval_results.json").read_text())
        assert results["global_step"] == 20, results
    diverged = summary["settings"][1]["runs"]
    assert all(run["failed"].startswith("stopped: the loss is not finite") for run in diverged), diverged
    assert all(f"failed: {DIVERGING}/seed{seed}: stopped" in result.stderr for seed in (1, 2, 3))
    # The setting of the highest median, and its best run that did not fail.
    good = values[GOOD]
    assert statistics.median(good.values()) > 0.25, good
    best_seed = max((seed for seed in good if good[seed] > 0.25), key=lambda seed: good[seed])
    chosen = summary["chosen"]
    assert (chosen["setting"], chosen["run"], chosen["seed"]) == (GOOD, f"{GOOD}/seed{best_seed}", best_seed)
    assert f"chosen: {GOOD}/seed{best_seed}" in result.stderr
    assert (output / "sweep.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
@pytest.mark.xdist_group("uninterrupted_sweep")
def test_the_sweep_folder_stands_for_its_chosen_run(uninterrupted, capfd):
    from albert_tf.models import AlbertClassifier

    output, _ = uninterrupted
    chosen = json.loads((output / "summary.json").read_text())["chosen"]["run"]
    model = AlbertClassifier.from_model_dir(str(output))
    assert f"is a sweep; its chosen model is {output / chosen}" in capfd.readouterr().err
    direct = AlbertClassifier.from_model_dir(str(output / chosen))
    for mine, theirs in zip(model.weights, direct.weights, strict=True):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.slow
@pytest.mark.xdist_group("uninterrupted_sweep")
def test_a_sweep_killed_and_split_over_two_processes_ends_with_the_uninterrupted_summary(
    uninterrupted, tmp_path
):
    whole, _ = uninterrupted
    output = tmp_path / "split"
    # Process 0 of 2 takes runs 0, 2, 4 (seed 1 and 3 of the good rate, seed 2 of the diverging one): killed
    # once its second run has saved a checkpoint.
    first = flags(output, "--sweep_task_index=0", "--sweep_task_count=2")
    killed_at = kill_once_saved(
        "albert_tf.run_classifier", first, output / GOOD / "seed3" / "checkpoints", 10
    )
    assert killed_at >= 10 and (output / GOOD / "seed1" / "run.json").exists()
    assert not (output / GOOD / "seed3" / "run.json").exists()
    # Process 1 of 2, its index from a Slurm array job's variables.
    slurm = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2"}
    second = commands.run("albert_tf.run_classifier", flags(output), env={**os.environ, **slurm})
    assert second.returncode == 0, second.stderr[-3000:]
    assert "process 1 of 2 by SLURM_ARRAY_TASK_ID: 3 runs" in second.stderr
    assert (
        "runs of other processes have not ended" in second.stderr and not (output / "summary.json").exists()
    )
    gather = commands.run("albert_tf.summarize_sweep", [f"--output_dir={output}"])
    assert gather.returncode == 1 and "2 of 6 runs have not ended" in gather.stderr, gather.stderr
    assert f"{GOOD}/seed3" in gather.stderr and f"{DIVERGING}/seed2" in gather.stderr
    # Started again, process 0 keeps its ended run, resumes the stopped one, and writes the summary.
    again = commands.run("albert_tf.run_classifier", first)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{GOOD}/seed1 ended before; kept" in again.stderr
    assert f"resumed from {output / GOOD / 'seed3'}" in again.stderr, again.stderr[-3000:]
    split, expected = (json.loads((folder / "summary.json").read_text()) for folder in (output, whole))
    assert split == expected
    gathered = commands.run("albert_tf.summarize_sweep", [f"--output_dir={output}"])
    assert gathered.returncode == 0 and json.loads((output / "summary.json").read_text()) == expected


@pytest.mark.slow
@pytest.mark.xdist_group("uninterrupted_sweep")
def test_a_sweep_refuses_a_folder_of_other_shared_settings(uninterrupted, tmp_path):
    whole, _ = uninterrupted
    output = tmp_path / "copy"
    shutil.copytree(whole, output)
    result = commands.run("albert_tf.run_classifier", flags(output, "--warmup_step=3"))
    assert result.returncode == 1
    assert "holds a sweep of other settings (--warmup_step=2 there, 3 here)" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_grid_flags_take_one_value_or_several():
    parser = sweep.GridValues(float)
    assert parser.parse("1e-5,2e-5") == (1e-5, 2e-5) and parser.parse(3e-5) == (3e-5,)
    with pytest.raises(ValueError, match="given twice"):
        parser.parse("1e-5,1e-5")
    assert sweep.GridValues(int).parse(12345) == (12345,)
    runs = sweep.plan({"learning_rate": (1e-5, 2e-5), "train_batch_size": (16,), "train_step": (9,),
                       "seed": (1, 2, 3)})  # fmt: skip
    assert [run.folder for run in runs[:4]] == [
        "lr1e-05_batch16_steps9/seed1", "lr1e-05_batch16_steps9/seed2", "lr1e-05_batch16_steps9/seed3",
        "lr2e-05_batch16_steps9/seed1",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("flags_given", "environ", "expected"),
    [
        ((None, None), {}, (0, 1)),
        ((2, 5), {"SLURM_ARRAY_TASK_ID": "0"}, (2, 5)),  # flags first
        ((None, None), {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_STEP": "2",
                        "SLURM_ARRAY_TASK_COUNT": "4"}, (2, 4)),  # --array=3-9:2
        ((None, 3), {"JOB_COMPLETION_INDEX": "2"}, (2, 3)),  # Kubernetes sets no count
        ((None, None), {"CLUSTER_SPEC": VERTEX}, (2, 3)),  # the second replica of the second pool
    ],
)  # fmt: skip
def test_each_process_finds_its_share_from_flags_or_its_scheduler(flags_given, environ, expected):
    slot = sweep.task_slot(*flags_given, environ=environ)
    assert (slot.index, slot.count) == expected


@pytest.mark.parametrize(
    ("flags_given", "environ", "message"),
    [
        ((None, None), {"JOB_COMPLETION_INDEX": "1"}, "give --sweep_task_count"),
        ((3, 3), {}, "index 3 of 3 processes"),
        ((None, 2), {}, "needs --sweep_task_index"),
        ((None, None), {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_STEP": "2",
                        "SLURM_ARRAY_TASK_COUNT": "3"}, "not one of an array of evenly spaced indices"),
        ((None, None), {"CLUSTER_SPEC": "{}"}, "CLUSTER_SPEC: expected Vertex AI's"),
    ],
)  # fmt: skip
def test_a_share_that_cannot_be_told_is_refused_naming_its_source(flags_given, environ, message):
    with pytest.raises(ValueError, match=message):
        sweep.task_slot(*flags_given, environ=environ)


def test_the_constant_prediction_is_the_most_frequent_training_label_or_no_answer():
    """By hand: what a model that gives one answer whatever the text scores on the dev split."""
    from albert_tf.finetuning import classifier, span
    from albert_tf.finetuning.glue import Example
    from albert_tf.finetuning.settings import ClassifierSettings, SquadSettings
    from albert_tf.finetuning.squad import SquadExample
    from albert_tf.finetuning.task_data import TaskData

    def examples(labels):
        return [Example(f"text {i}", None, label) for i, label in enumerate(labels)]

    def settings(kind, **values):
        return kind(model_dir="m", output_dir="o", **values)

    # The best of the labels, each given to every dev example: 1 is right on two of four.
    data = TaskData("spm", True, {"train": examples([2, 2, 2, 0]), "dev": examples([1, 0, 1, 2])},
                    labels=("a", "b", "c"))  # fmt: skip
    assert classifier.constant_baseline(settings(ClassifierSettings, task_name="text"), data) == {
        "accuracy": 0.5
    }
    # QQP: F1 of the positive class first. Training's most frequent label, 0, scores F1 0; a model that says
    # 1 to everything scores 0.5 (precision 1/3, recall 1), and 0 the better accuracy, 2/3.
    data = TaskData(
        "spm", True, {"train": examples([0, 0, 1]), "dev": examples([1, 0, 0])}, labels=("0", "1")
    )
    assert classifier.constant_baseline(settings(ClassifierSettings, task_name="QQP"), data) == {
        "f1": pytest.approx(0.5), "accuracy": pytest.approx(2 / 3)
    }  # fmt: skip
    # A regression's constant (the mean score) correlates with nothing.
    data = TaskData("spm", True, {"train": examples([0.5, 4.0]), "dev": examples([1.0, 3.0, 2.0])})
    assert classifier.constant_baseline(settings(ClassifierSettings, task_name="sts-b"), data) == {
        "pearson": 0.0, "spearman": 0.0
    }  # fmt: skip
    # SQuAD v2.0: no answer is right on the one unanswerable question of four.
    questions = [SquadExample(str(i), "q", "c", answers, None, not answers)
                 for i, answers in enumerate([("x",), ("y", "z"), (), ("w",)])]  # fmt: skip
    data = TaskData("spm", True, {"train": questions, "dev": questions})
    v2 = settings(SquadSettings, version_2_with_negative=True)
    assert span.constant_baseline(v2, data) == {"f1": 25.0, "exact_match": 25.0}
    # MNLI: each dev set's best label, matched and mismatched apart.
    data = TaskData("spm", True, {"train": examples([0, 1, 2]), "dev": examples([1, 0, 1, 2]),
                                  "dev_mismatched": examples([2, 2, 0])}, labels=("a", "b", "c"))  # fmt: skip
    assert classifier.constant_baseline(settings(ClassifierSettings, task_name="mnli"), data) == {
        "accuracy": 0.5, "accuracy_mismatched": pytest.approx(2 / 3)
    }  # fmt: skip


def fake_sweep(folder, scores, shared=None):
    """A sweep's folder as its processes leave it: sweep.json and, for each (learning rate, seed): score,
    its run folder with run.json and eval_results.json (score "stopped": a run that stopped; None: one that
    has not ended)."""
    from albert_tf.finetuning import sweep_summary

    shared = shared or {"warmup_step": 2}
    runs = [sweep.Run(rate, 16, 20, seed) for rate, seed in scores]
    planned = [{"run": run.folder, "setting": run.setting, **dataclasses.asdict(run)} for run in runs]
    plan = {"command": "run_classifier", "shared": {"warmup_step": 2}, "metrics": ["accuracy"],
            "baseline": {"accuracy": 0.25}, "runs": planned}  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sweep.json").write_text(json.dumps(plan))
    for run, score in zip(runs, scores.values(), strict=True):
        if score is None:
            continue
        (folder / run.folder).mkdir(parents=True)
        stopped = "the loss is not finite at step 10" if score == "stopped" else None
        record = {"run": run.folder, **dataclasses.asdict(run), "shared": shared, "stopped": stopped}
        (folder / run.folder / sweep_summary.RUN_FILE).write_text(json.dumps(record))
        if not stopped:
            (folder / run.folder / "eval_results.json").write_text(json.dumps({"accuracy": score}))
    return folder


def test_failed_runs_are_named_a_stopped_one_counts_at_the_constant_prediction_and_the_median_chooses(
    tmp_path,
):
    from albert_tf import model_files
    from albert_tf.finetuning import sweep_summary

    scores = {(1e-5, 1): 0.6, (1e-5, 2): 0.7, (1e-5, 3): "stopped",  # median of 0.6, 0.7, 0.25
              (2e-5, 1): 0.65, (2e-5, 2): 0.66, (2e-5, 3): 0.2,  # 0.65; the third failed at its score
              (3e-5, 1): "stopped", (3e-5, 2): 0.1, (3e-5, 3): float("nan")}  # every run failed  # fmt: skip
    folder = fake_sweep(tmp_path / "sweep", scores)
    summary, missing = sweep_summary.gather(str(folder))
    assert missing == []
    first, second, third = summary["settings"]
    assert first["figures"]["accuracy"] == {"median": 0.6, "mean": pytest.approx(1.55 / 3),
        "std": pytest.approx(float(np.std([0.6, 0.7, 0.25], ddof=1))), "min": 0.25, "max": 0.7}  # fmt: skip
    assert [run["failed"] is not None for run in second["runs"]] == [False, False, True]
    assert second["runs"][2]["accuracy"] == 0.2 and third["failed"] == 3
    assert third["runs"][2]["accuracy"] == 0.25  # not a number: at the constant prediction
    assert summary["chosen"]["run"] == "lr2e-05_batch16_steps20/seed2"
    lines = sweep_summary.write(str(folder), summary)
    assert any(line.startswith("    failed: lr1e-05_batch16_steps20/seed3: stopped") for line in lines)
    assert model_files.resolve(str(folder)) == str(folder / "lr2e-05_batch16_steps20" / "seed2")


def test_a_sweep_folder_without_a_model_to_give_says_why(tmp_path, capsys):
    from albert_tf import model_files
    from albert_tf.finetuning import sweep_summary

    going = fake_sweep(tmp_path / "going", {(1e-5, 1): 0.6, (1e-5, 2): None})
    assert sweep_summary.gather(str(going)) == (None, ["lr1e-05_batch16_steps20/seed2"])
    with pytest.raises(ValueError, match="has no summary yet"):
        model_files.resolve(str(going))
    failed = fake_sweep(tmp_path / "failed", {(1e-5, 1): 0.25, (1e-5, 2): "stopped"})
    sweep_summary.write(str(failed), sweep_summary.gather(str(failed))[0])
    with pytest.raises(ValueError, match="every run of the sweep failed"):
        model_files.resolve(str(failed))
    mixed = fake_sweep(tmp_path / "mixed", {(1e-5, 1): 0.6}, shared={"warmup_step": 3})
    with pytest.raises(ValueError, match="trained with other shared settings"):
        sweep_summary.gather(str(mixed))


def test_a_sweep_is_refused_before_tensorflow_when_it_cannot_run_or_compare(tmp_path):
    from albert_tf.finetuning.settings import ClassifierSettings

    folder = fake_sweep(tmp_path / "sweep", {(1e-5, 1): 0.6})
    grid = {"learning_rate": (1e-5,), "train_batch_size": (16,), "train_step": (20,), "seed": (1, 2)}

    def refusal(grid=grid, command="run_classifier", **values):
        settings = ClassifierSettings(task_name="text", model_dir="m", output_dir=str(folder),
                                      **{"warmup_step": 2, "train_batch_size": 16, **values})  # fmt: skip
        with pytest.raises(ValueError) as error:
            sweep.check(settings, grid, command)
        return str(error.value)

    assert "leave --do_train and --do_eval on" in refusal(do_train=False)
    assert "not trained across a cluster" in refusal(strategy="multi_worker_mirrored")
    assert "at most each --train_step, not 20" in refusal(warmup_step=30)
    assert "--train_batch_size=16 must be divisible" in refusal(gradient_accumulation_steps=3)
    assert "holds a sweep of run_classifier" in refusal(command="run_race")
    assert "--warmup_step=2 there, 5 here" in refusal(warmup_step=5)
    single = ClassifierSettings(task_name="text", model_dir="m", output_dir=str(folder))
    with pytest.raises(ValueError, match="holds a sweep"):
        sweep.check_single(single)


def test_a_sweep_on_another_file_system_is_summarized_and_resolved_there(tmp_path):
    """The summary, the plot and the chosen run through TensorFlow's file systems (ram://, in this process),
    as on gs:// storage that every process of a split sweep writes to."""
    import tensorflow as tf

    from albert_tf import file_io, model_files
    from albert_tf.finetuning import sweep_summary

    local = fake_sweep(tmp_path / "sweep", {(1e-5, 1): 0.6, (1e-5, 2): 0.7, (2e-5, 1): 0.3, (2e-5, 2): 0.5})
    remote = f"ram://{tmp_path.name}/sweep"
    for path in local.rglob("*"):
        if path.is_file():
            target = f"{remote}/{path.relative_to(local).as_posix()}"
            tf.io.gfile.makedirs(target.rsplit("/", 1)[0])
            file_io.write_atomically(target, path.read_bytes())
    summary, missing = sweep_summary.gather(remote)
    assert missing == [] and summary == sweep_summary.gather(str(local))[0]
    sweep_summary.write(remote, summary)
    assert json.loads(file_io.read_text(f"{remote}/summary.json")) == json.loads(json.dumps(summary))
    assert file_io.read_bytes(f"{remote}/sweep.png").startswith(b"\x89PNG")
    assert model_files.resolve(remote) == f"{remote}/lr1e-05_batch16_steps20/seed2"
