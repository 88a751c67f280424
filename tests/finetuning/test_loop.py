"""The fine-tuning loop under distribution strategies: two devices, and two worker processes on loopback,
give the one-device result for run_classifier, run_squad and run_race.

The one-device runs are in this process; the others run the real entry points in fresh processes (logical
devices and TF_CONFIG must be set before TensorFlow starts). No dropout, as its masks depend on how a batch
is split. The encoders are initialized wide (stddev 0.2): an untrained tiny encoder with the usual 0.02 gives
nearly the same output for every text, and metrics of near-ties would turn on float rounding.
"""

import contextlib
import dataclasses
import io
import json
import os
import pathlib
import random
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import model_files
from albert_tf.finetuning import classifier, multiple_choice, span
from albert_tf.finetuning.settings import ClassifierSettings, SquadSettings
from albert_tf.finetuning.task import run as run_task
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from tests import commands
from tests.finetuning.test_span import squad_json
from tests.helpers import (
    SAMPLE_CORPUS,
    SAMPLE_SPM,
    assert_same_values,
    kill_once_saved,
    run_on_two_devices,
    run_on_two_workers,
    tiny_config,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Weights, predictions and metrics of a split batch differ from one device's by float32 sum order only.
# Metrics near 0 (a correlation of -0.08 on this tiny task) get an absolute bound too: 2.2e-6 was seen.
WEIGHTS_ATOL, RESULTS_RTOL, RESULTS_ATOL = 2e-6, 1e-5, 1e-5
WORDS = ("dreadful", "splendid")
# Biases that shift every logit of one softmax alike (attention keys; the span start and end logits; the
# choice logits, one bias added to each choice's logit before the softmax over choices) have a gradient of
# exactly zero: they receive rounding (test_shift_invariant_biases_get_only_rounding), which Adam (epsilon
# 1e-6) turns into steps of up to about lr / 1000 either way. No output they feed depends on them, so they
# are not compared.
SHIFT_INVARIANT = ("attention_0/key/bias", "span_logits/bias", "choice_logits/bias")


def sentences(count, shortest=4, longest=30):
    with open(SAMPLE_CORPUS, encoding="utf-8") as file:
        lines = [line.strip().replace("\t", " ") for line in file]
    return [line for line in lines if shortest <= len(line.split()) <= longest][:count]


def save_model_dir(directory, **config):
    keras.utils.set_random_seed(7)  # module fixtures run before the per-test seeding
    encoder = AlbertEncoder(tiny_config(vocab_size=8000, initializer_range=0.2, **config))
    model_dir.save_model_dir(AlbertPretrainer(encoder), directory, str(SAMPLE_SPM))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Model directories and the data of the three tasks."""
    base = tmp_path_factory.mktemp("finetuning")
    save_model_dir(base / "model")
    save_model_dir(base / "squad-model", max_position_embeddings=64)
    texts = sentences(160)
    # STS-B (regression): a score of 0 or 5, told by the first word. Squared errors of scores up to 5 give
    # gradients far above the clipping norm of 1 (checked below), so clipping binds. The dev set has 41
    # pairs: its last batch of 5 splits unevenly between two replicas.
    glue = base / "STS-B"
    glue.mkdir()
    columns = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1",
               "sentence2", "score"]  # fmt: skip
    # test.tsv is the dev set again: --do_predict writes its scores.
    for name, part in (("train.tsv", texts[:96]), ("dev.tsv", texts[96:137]), ("test.tsv", texts[96:137])):
        rows = ["\t".join(columns)]
        for index, text in enumerate(part):
            label = index % 2
            pair = [f"{WORDS[label]} {text}", text, f"{5.0 * label}"]
            rows.append("\t".join([str(index), "g", "f", "2024", str(index), "s", "s", *pair]))
        (glue / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    rng = random.Random(0)
    for split, count in (("train", 24), ("dev", 10)):
        squad = squad_json(rng, sentences(300, longest=8), count, f"{split}-")
        (base / f"squad-{split}.json").write_text(json.dumps(squad), encoding="utf-8")
    for split, start in (("train", 0), ("dev", 40)):
        for level in ("high", "middle"):
            folder = base / "RACE" / split / level
            folder.mkdir(parents=True)
            for number in range(4 if split == "train" else 2):
                article = texts[start : start + 2]
                start += 2
                record = {
                    "id": f"{level}{number}.txt",
                    "article": " ".join(article),
                    "questions": ["Which sentence is in the article?", "Which one opens it?"],
                    "options": [[article[1], *texts[150:153]], [texts[153], article[0], *texts[154:156]]],
                    "answers": ["A", "B"],
                }
                (folder / f"{number}.txt").write_text(json.dumps(record), encoding="utf-8")
    return base


def classifier_settings(data, output_dir, **changes):
    values = dict(
        task_name="sts-b", data_dir=str(data / "STS-B"), model_dir=str(data / "model"),
        output_dir=str(output_dir), max_seq_length=16, train_batch_size=16, eval_batch_size=12,
        learning_rate=0.004, train_step=6, warmup_step=2, save_checkpoints_steps=3, dropout_rate=0.0,
    )  # fmt: skip
    values.update(changes)
    return ClassifierSettings(**values)


def squad_settings(data, output_dir):
    return SquadSettings(
        model_dir=str(data / "squad-model"), output_dir=str(output_dir),
        train_file=str(data / "squad-train.json"), predict_file=str(data / "squad-dev.json"),
        max_seq_length=64, doc_stride=24, max_query_length=8, train_batch_size=8, eval_batch_size=12,
        learning_rate=0.004, train_step=6, warmup_step=2, save_checkpoints_steps=3, dropout_rate=0.0,
        do_predict=True,
    )  # fmt: skip


def race_settings(data, output_dir):
    return ClassifierSettings(
        task_name="race", data_dir=str(data / "RACE"), model_dir=str(data / "model"),
        output_dir=str(output_dir), max_seq_length=16, train_batch_size=4, eval_batch_size=6,
        learning_rate=0.0002, train_step=6, warmup_step=2, save_checkpoints_steps=3, dropout_rate=0.0,
    )  # fmt: skip


def flags_of(settings, **changes):
    values = {**vars(settings), **changes}
    return [f"--{name}={value}" for name, value in values.items() if value is not None]


def weights(directory):
    """Variable path → array of a model directory's task model."""
    model = model_dir.load_task_model(str(directory))
    arrays = {variable.path: np.asarray(variable) for variable in model.weights}
    assert len(arrays) == len(model.weights) > 20
    return arrays


def logged_losses(text):
    """The training losses of a run's progress lines (4 decimals)."""
    return [float(loss) for loss in re.findall(r": step \d+/\d+ \| loss ([\d.]+)", text)]


def assert_same_run(one, two, outputs, logs):
    """The model, eval results and prediction files of two output directories, and the training losses of
    their progress lines, agree."""
    losses = [logged_losses(log) for log in logs]
    assert len(losses[0]) == 2 and losses[0] == pytest.approx(losses[1], abs=1.5e-4)  # a last digit apart
    assert not any("collapse" in log for log in logs)  # the guard stays quiet on runs that learn
    first, second = weights(one), weights(two)
    assert first.keys() == second.keys()
    for name in [name for name in first if not name.endswith(SHIFT_INVARIANT)]:
        np.testing.assert_allclose(first[name], second[name], rtol=0, atol=WEIGHTS_ATOL, err_msg=name)
    for name in ("eval_results.json", *outputs):
        a, b = (json.loads((directory / name).read_text()) for directory in (one, two))
        assert_same_values(a, b, RESULTS_RTOL, RESULTS_ATOL, name)


# In-process checks -------------------------------------------------------------------------------------


def test_first_gradient_norm_exceeds_the_clip(data, tmp_path):
    run_ = classifier.ClassifierTask(classifier_settings(data, tmp_path))
    inputs, labels = next(iter(run_._dataset("train", is_training=True)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(run_._example_losses(labels, run_.model(inputs, training=True)))
    assert float(tf.linalg.global_norm(tape.gradient(loss, run_.model.trainable_variables))) > 2


def test_shift_invariant_biases_get_only_rounding(data, tmp_path):
    run_ = span.SquadTask(squad_settings(data, tmp_path))
    inputs, targets = next(iter(run_._dataset("train", is_training=True)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(run_._example_losses(targets, run_.model(inputs, training=True)))
    variables = run_.model.trainable_variables
    largest = {
        variable.path: float(tf.reduce_max(tf.abs(tf.convert_to_tensor(gradient))))
        for variable, gradient in zip(variables, tape.gradient(loss, variables), strict=True)
        if gradient is not None  # the pooler: SQuAD v1.1 reads only the sequence output
    }
    top = max(largest.values())
    invariant = {name for name in largest if name.endswith(SHIFT_INVARIANT)}
    assert len(invariant) == 2 and all(largest[name] < 1e-6 * top for name in invariant)
    assert all(largest[name] > 1e-3 * top for name in largest.keys() - invariant)


# Two devices and two workers (fresh processes) ---------------------------------------------------------


@pytest.mark.slow
def test_classifier_on_two_devices_matches_one_device(data, tmp_path, capsys):
    one = classifier_settings(data, tmp_path / "one", do_predict=True)
    classifier.run(one)
    two = flags_of(one, output_dir=tmp_path / "two", strategy="mirrored")
    result = run_on_two_devices("albert_tf.run_classifier", two)
    assert_same_run(tmp_path / "one", tmp_path / "two", [], [capsys.readouterr().err, result.stderr])
    scores = [(tmp_path / name / "test_results.tsv").read_text().split()[3::2] for name in ("one", "two")]
    np.testing.assert_allclose(*(np.array(s, float) for s in scores), rtol=0, atol=WEIGHTS_ATOL)
    scores = np.array(scores[0], float)
    # Scores that differ between texts by far more than rounding: the metrics compared are not near-ties.
    assert len(scores) == 41 and np.ptp(scores) > 0.01
    # test.tsv is the dev set, so the predictions give the best evaluation's Pearson correlation: they come
    # from the best model (step 3 of 6), not the last.
    results = json.loads((tmp_path / "one" / "eval_results.json").read_text())
    correlation = np.corrcoef(scores, 5.0 * (np.arange(41) % 2))[0, 1]
    assert results["global_step"] == 3 and correlation == pytest.approx(results["pearson"], rel=RESULTS_RTOL)


@pytest.mark.slow
def test_batches_must_split_evenly(data, tmp_path):
    odd = run_on_two_devices(
        "albert_tf.run_classifier",
        flags_of(classifier_settings(data, tmp_path, train_batch_size=15), strategy="mirrored"),
        check=False,
    )
    assert odd.returncode == 1 and "--train_batch_size=15 must be divisible by the 2 replica(s)" in odd.stderr
    assert not tmp_path.joinpath("eval_results.json").exists()


@pytest.mark.slow
def test_float16_on_two_devices_matches_one_device(data, tmp_path):
    # RACE (cross-entropy, lr 2e-4) does not overflow float16 here; STS-B's squared errors of scores up to 5
    # do, and whether a half batch's float16 gradient overflows where the whole batch's does is float16's
    # own arithmetic, not a decision the replicas could share. (test_loss_scale.py checks shared skips.)
    one = dataclasses.replace(race_settings(data, tmp_path / "one"), mixed_precision="float16")
    multiple_choice.run(one)
    run_on_two_devices("albert_tf.run_race", flags_of(one, output_dir=tmp_path / "two", strategy="mirrored"))
    first, second = weights(tmp_path / "one"), weights(tmp_path / "two")
    assert all(np.isfinite(value).all() for value in first.values())
    # Each replica computes its gradient in float16 (relative rounding 2^-11), which Adam's normalization
    # carries into ~1e-3 of an update; an element whose gradient nearly cancels can flip its update's sign.
    # An update is at most (1 - β1) / √(1 - β2) = 3.16 times lr = 2e-4 (the original's Adam has no bias
    # correction: the first step's m / √v is 0.1 / √0.001), so a flip moves a weight by up to 2 · 3.16 · lr
    # (1.6e-4 to 4.3e-4 seen, depending on how the CPU's oneDNN kernels round float16).
    # The bound that matters is on the typical weight (the median difference was 0): another update, or
    # another replica's decision, would move most weights by ~lr.
    differences = np.concatenate(
        [np.abs(first[n] - second[n]).ravel() for n in first if not n.endswith(SHIFT_INVARIANT)]
    )
    assert differences.max() < 2 * 3.17 * 2e-4 and np.median(differences) < 1e-5, np.median(differences)


@pytest.fixture(scope="module")
def one_classifier_process(data, tmp_path_factory):
    """The settings of the workers' runs, and their one-process run (its output_dir, its stderr)."""
    one = classifier_settings(data, tmp_path_factory.mktemp("one_process") / "one")
    with contextlib.redirect_stderr(io.StringIO()) as stderr:
        classifier.run(one)
    return one, stderr.getvalue()


@pytest.mark.slow
@pytest.mark.xdist_group("one_classifier_process")  # one process runs the shared one-process run once
def test_classifier_on_a_chief_and_a_worker_matches_one_process(one_classifier_process, tmp_path):
    # The layout of Vertex AI, Kubeflow's TFJob and SageMaker; two `worker` tasks: the span and choice tasks
    # below. The task that is not the chief (worker 0 beside the `chief` task) is told another output
    # directory: it must write nothing at all.
    one, one_log = one_classifier_process
    args = [
        flags_of(one, output_dir=tmp_path / name, strategy="multi_worker_mirrored")
        for name in ("two", "not-the-chief")
    ]
    outputs = run_on_two_workers("albert_tf.run_classifier", args, chief=True)
    assert not (tmp_path / "not-the-chief").exists()
    assert "run_classifier: step 6/6" in outputs[0] and "run_classifier: step" not in outputs[1]
    assert_same_run(pathlib.Path(one.output_dir), tmp_path / "two", [], [one_log, outputs[0]])


@pytest.mark.slow
@pytest.mark.xdist_group("one_classifier_process")
def test_a_task_that_refuses_stops_every_task_of_the_cluster_at_once(one_classifier_process, tmp_path):
    # The chief's --output_dir holds a run fine-tuned at another length, which it refuses to resume; worker 0,
    # told a folder of its own, finds nothing wrong. Without the chief it would wait on its first collective
    # until that timed out: it stops too, naming the chief and its reason.
    one, _ = one_classifier_process
    held = tmp_path / "chief"
    shutil.copytree(one.output_dir, held)
    args = [flags_of(one, output_dir=tmp_path / name, strategy="multi_worker_mirrored", max_seq_length=12)
            for name in ("chief", "worker")]  # fmt: skip
    outputs = run_on_two_workers("albert_tf.run_classifier", args, chief=True, returncode=1, timeout=180)
    reason = f"--output_dir={held} holds a run fine-tuned with max_seq_length=16"
    assert f"run_classifier: error: {reason}" in outputs[0], outputs[0][-2000:]
    assert (
        f"run_classifier: error: the chief of this run refused, so this task stops too: {reason}"
        in (outputs[1])
    ), outputs[1][-2000:]
    assert not (tmp_path / "worker").exists()


# Task → (settings, in-process run, entry point, prediction files compared besides eval_results.json).
SPAN_AND_CHOICE_TASKS = {
    "squad": (squad_settings, span.run, "albert_tf.run_squad", ["predictions.json"]),
    "race": (race_settings, multiple_choice.run, "albert_tf.run_race", []),
}


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(SPAN_AND_CHOICE_TASKS))
def test_squad_and_race_on_two_devices_and_two_workers_match_one_device(task, data, tmp_path, capsys):
    make_settings, run_in_process, module, outputs = SPAN_AND_CHOICE_TASKS[task]
    one = make_settings(data, tmp_path / "one")
    run_in_process(one)
    one_log = capsys.readouterr().err
    result = run_on_two_devices(module, flags_of(one, output_dir=tmp_path / "two", strategy="mirrored"))
    assert_same_run(tmp_path / "one", tmp_path / "two", outputs, [one_log, result.stderr])
    # Workers 0 and 1: worker 0 is the chief and writes; worker 1 writes nothing.
    args = [
        flags_of(one, output_dir=tmp_path / name, strategy="multi_worker_mirrored")
        for name in ("workers", "not-the-chief")
    ]
    logs = run_on_two_workers(module, args)
    assert not (tmp_path / "not-the-chief").exists()
    assert_same_run(tmp_path / "one", tmp_path / "workers", outputs, [one_log, logs[0]])


# Resuming and accumulating ------------------------------------------------------------------------------

# Task → (settings, in-process run, entry point, prediction files compared besides eval_results.json).
RESUMED_TASKS = {
    "classifier": (classifier_settings, classifier.run, "albert_tf.run_classifier", []),
    "squad": (squad_settings, span.run, "albert_tf.run_squad", ["predictions.json"]),
}


def run_module(module, args):
    result = commands.run(module, args)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def checkpoint_values(folder):
    """Name → value of the variables of the latest checkpoint in folder."""
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(folder)))
    names = [name for name in reader.get_variable_to_shape_map() if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert len(names) > 20, names
    return {name: reader.get_tensor(name) for name in names}


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(RESUMED_TASKS))
def test_a_killed_run_resumes_to_the_uninterrupted_weights_and_results_under_its_own_settings_only(
    task, data, tmp_path
):
    # With dropout: its masks come from seed states that the checkpoints hold; with the collapse guard on,
    # whose readings they hold too. Killed once a checkpoint of step 8 or later is written (a second save:
    # the resume is not from the first), with 32 steps and 8 evaluations left.
    make_settings, run_in_process, module, outputs = RESUMED_TASKS[task]
    whole = dataclasses.replace(
        make_settings(data, tmp_path / "whole"), train_step=40, save_checkpoints_steps=4, dropout_rate=0.1,
        rollback_on_collapse=True,
    )  # fmt: skip
    run_in_process(whole)  # the uninterrupted run
    interrupted = flags_of(whole, output_dir=tmp_path / "killed")
    killed = tmp_path / "killed"
    kill_once_saved(module, interrupted, killed / "checkpoints", 8)
    assert not (killed / "eval_results.json").exists(), "the run ended before it was killed"
    # Started again at another length, its checkpoints would train on and be saved for that length: refused,
    # though the run saved no task_model.keras yet (what it trains was recorded when it started).
    length = whole.max_seq_length
    refused = commands.run(module, flags_of(whole, output_dir=killed, max_seq_length=length - 4))
    assert refused.returncode == 1, refused.stderr[-2000:]
    assert f"holds a run fine-tuned with max_seq_length={length}, and training there resumes it" in (
        refused.stderr
    )
    resumed = run_module(module, interrupted)
    steps = [int(step) for step in re.findall(r"resumed from .*ckpt-\d+ at step (\d+)", resumed.stderr)]
    assert len(steps) == 1 and 8 <= steps[0] < 40, resumed.stderr[-2000:]
    # The last step's state (weights, optimizer, dropout seeds, input position), then what the run ends with
    # (the best evaluation's model, which may predate the kill).
    for first, second in [
        [checkpoint_values(folder / "checkpoints") for folder in (tmp_path / "whole", killed)],
        [weights(folder) for folder in (tmp_path / "whole", killed)],
    ]:
        assert first.keys() == second.keys()
        for name in first:
            np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    for name in ("eval_results.json", *outputs):
        assert (tmp_path / "whole" / name).read_text() == (killed / name).read_text(), name


class ScriptedEvaluations(classifier.ClassifierTask):
    """STS-B whose evaluations give `pearson` from `values` by step: what a run on a GPU may give when it
    trains and evaluates a step again (its evaluations are not bit-exact)."""

    values = {}

    def _evaluate(self):
        return {"pearson": self.values[int(self.optimizer.iterations.numpy())], "spearman": 0.0}


@pytest.mark.slow
def test_a_run_stopped_between_a_new_best_and_its_checkpoint_ends_with_that_best_and_its_results(
    data, tmp_path, capsys
):
    settings = classifier_settings(data, tmp_path)
    ScriptedEvaluations.values = {3: 0.5, 6: 0.7}
    run_task(settings, ScriptedEvaluations)
    # Stopped after saving step 6's best weights (the only ones checkpoints/best keeps), before the
    # checkpoint of step 6 and the run's outputs: it resumes from step 3's, whose best is step 3's.
    folder = tmp_path / "checkpoints"
    for path in folder.glob("ckpt-6.*"):
        path.unlink()
    state = 'model_checkpoint_path: "ckpt-3"\nall_model_checkpoint_paths: "ckpt-3"\n'
    (folder / "checkpoint").write_text(state)  # TensorFlow's index of the checkpoints, as of step 3
    for name in ("eval_results.json", model_files.TASK_MODEL_FILE):
        (tmp_path / name).unlink()
    assert tf.train.latest_checkpoint(str(folder / "best")).endswith("ckpt-6")
    ScriptedEvaluations.values = {6: 0.4}  # step 6 trained and evaluated again scores below step 3's 0.5
    capsys.readouterr()
    results = run_task(settings, ScriptedEvaluations)
    said = capsys.readouterr().err
    assert "the best evaluation is step 6's, saved after the checkpoint resumed from" in said, said[-2000:]
    # It ends with the weights of checkpoints/best and their results, not step 3's results.
    expected = {"pearson": 0.7, "spearman": 0.0, "global_step": 6}
    assert results == expected and json.loads((tmp_path / "eval_results.json").read_text()) == expected
    assert model_files.global_step(str(tmp_path)) == 6


def test_remat_reaches_the_fine_tuned_model(data, tmp_path):
    settings = classifier_settings(data, tmp_path, remat=True)
    assert classifier.ClassifierTask(settings).model.encoder.remat  # its updates: tests/models/test_remat.py


@pytest.mark.slow
@pytest.mark.xdist_group("one_classifier_process")
def test_gradient_accumulation_gives_the_whole_batch_update(one_classifier_process, tmp_path, capsys):
    one, whole_batch = one_classifier_process
    classifier.run(dataclasses.replace(one, output_dir=str(tmp_path / "two"), gradient_accumulation_steps=4))
    logs = [whole_batch, capsys.readouterr().err]
    assert_same_run(pathlib.Path(one.output_dir), tmp_path / "two", [], logs)
