"""The pretraining loop and `python -m albert_tf.run_pretraining`, on tiny synthetic records.

Records are written with TensorFlow's own tf.train.Example and TFRecordWriter (not our builder), with ids
below the tiny vocabulary of 97.
"""

import dataclasses
import gc
import json
import os
import pathlib
import re
import shutil

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import features, model_files, shipped
from albert_tf.checkpoints import convert, tf1_variables
from albert_tf.config import AlbertConfig
from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from albert_tf.pretraining import dataset, losses
from albert_tf.pretraining.run import build, run
from albert_tf.pretraining.settings import PretrainingSettings
from albert_tf.text.tokenizer import TokenizerError
from albert_tf.training.engine import TrainingError
from albert_tf.training.schedules import WarmupPolynomialDecay
from tests import commands
from tests.helpers import (
    INFO_LINE,
    SAMPLE_SPM,
    kill_once_saved,
    run_on_two_devices,
    run_on_two_workers,
    small_spm,
    tiny_config,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEQ, PREDICTIONS, VOCAB = 16, 3, 97


def write_records(
    path, count, seed, seq=SEQ, predictions=PREDICTIONS, ids_below=VOCAB, with_masks=True, masked=False
):
    """`count` records of random ids in [5, ids_below); without masks, only what online masking needs.
    With `masked`, input_ids show [MASK] (4) at about 80% of the masked positions, a random id at 10%."""
    rng, masking = np.random.default_rng(seed), np.random.default_rng(seed + 1000)
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(count):
            length = int(rng.integers(8, seq + 1))
            ids = np.zeros(seq, np.int64)
            ids[:length] = rng.integers(5, ids_below, size=length)
            ids[0], ids[length - 1] = 2, 3
            mask = (np.arange(seq) < length).astype(np.int64)
            positions = np.sort(rng.choice(np.arange(1, length - 1), size=predictions, replace=False))
            int64 = {
                "input_ids": ids,
                "input_mask": mask,
                "segment_ids": ((np.arange(seq) >= length // 2) * mask).astype(np.int64),
                "token_boundary": mask,
                "masked_lm_positions": positions,
                "masked_lm_ids": ids[positions],
                "next_sentence_labels": [int(rng.integers(0, 2))],
            }
            if masked:
                shown = ids.copy()
                draw = masking.random(predictions)
                random_ids = masking.integers(5, ids_below, predictions)
                shown[positions] = np.where(draw < 0.8, 4, np.where(draw < 0.9, random_ids, ids[positions]))
                int64["input_ids"] = shown
            if not with_masks:
                del int64["masked_lm_positions"], int64["masked_lm_ids"]
            feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in int64.items()}
            if with_masks:
                weights = tf.train.FloatList(value=[1.0] * predictions)
                feature["masked_lm_weights"] = tf.train.Feature(float_list=weights)
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pretraining")
    train = [str(directory / f"train-{i}.tfrecord") for i in range(2)]
    for index, path in enumerate(train):
        write_records(path, 48, seed=index)
    write_records(str(directory / "eval.tfrecord"), 20, seed=9, masked=True)
    # Dropout on, so that resuming must restore the random draws too; comparisons of batch splits (replicas,
    # micro-batches, XLA) use the config without dropout, as dropout masks depend on how a batch is split.
    config, exact = str(directory / "albert_config.json"), str(directory / "no_dropout.json")
    tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1).to_json_file(config)
    tiny_config().to_json_file(exact)
    train = ",".join(train)
    return {"config": config, "exact": exact, "train": train, "eval": str(directory / "eval.tfrecord")}


def settings(data, output_dir, **changes):
    values = dict(
        albert_config_file=data["config"],
        input_file=data["train"],
        eval_input_file=data["eval"],
        output_dir=str(output_dir),
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        train_batch_size=8,
        eval_batch_size=4,
        learning_rate=0.01,
        num_train_steps=6,
        num_warmup_steps=2,
        save_checkpoints_steps=3,
        steps_per_loop=2,
        log_every_steps=2,
        shuffle_buffer_size=32,
    )
    values.update(changes)
    return PretrainingSettings(**values)


def exact_settings(data, output_dir, eval_input_file=None):
    """A run whose result does not depend on how batches are split: no dropout. Its global gradient norm is
    above 1 (checked below), so clipping binds and must act on the sum over replicas."""
    return settings(
        data, output_dir, albert_config_file=data["exact"], eval_input_file=eval_input_file, optimizer="adamw"
    )


def cross_entropy(logits, labels):
    """Softmax cross-entropy in float64 NumPy: logits [..., C], integer labels [...]."""
    logits = np.asarray(logits, np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, np.asarray(labels)[..., None], axis=-1)[..., 0]


def flags_of(run_settings):
    return [f"--{name}={value}" for name, value in vars(run_settings).items() if value is not None]


def weights(directory):
    """name → array of a model directory's weights file."""
    arrays = {}
    with h5py.File(os.path.join(directory, model_files.WEIGHTS_FILE), "r") as file:
        file.visititems(
            lambda name, item: arrays.__setitem__(name, item[()]) if hasattr(item, "shape") else None
        )
    assert len(arrays) > 20
    return arrays


def assert_same_weights(a, b, atol=0.0):
    first, second = weights(a), weights(b)
    assert first.keys() == second.keys()
    for name in first:
        np.testing.assert_allclose(first[name], second[name], rtol=0, atol=atol, err_msg=name)


def run_module(args, env=None, check=True):
    result = commands.run("albert_tf.run_pretraining", args, env={**os.environ, **(env or {})})
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


# In-process runs ------------------------------------------------------------------------------------------


def test_run_writes_a_model_directory_and_eval_results(data, tmp_path):
    results = run(settings(data, tmp_path))
    names = ("masked_lm_loss", "masked_lm_accuracy", "sentence_order_loss", "sentence_order_accuracy")
    baselines = ("masked_lm_baseline_accuracy", "masked_lm_context_free_accuracy")
    assert set(results) == {*names, *baselines, "global_step"}
    assert results["global_step"] == 6
    assert json.loads((tmp_path / "eval_results.json").read_text()) == pytest.approx(results)
    # The baseline: the most frequent target's share of the held-out masked positions, read here from the
    # records themselves (all 20 are evaluated, every weight is 1).
    targets, shown = [], []  # each masked position's target and the input id the record shows there
    for record in tf.data.TFRecordDataset(data["eval"]).as_numpy_iterator():
        feature = tf.train.Example.FromString(record).features.feature
        inputs = feature["input_ids"].int64_list.value
        targets += feature["masked_lm_ids"].int64_list.value
        shown += [inputs[position] for position in feature["masked_lm_positions"].int64_list.value]
    assert len(targets) == 20 * PREDICTIONS
    assert results["masked_lm_baseline_accuracy"] == pytest.approx(
        max(targets.count(id_) for id_ in targets) / len(targets)
    )
    # Without context: copy the shown id where it is not [MASK] (4), else the most frequent such target.
    at_mask = [target for target, id_ in zip(targets, shown, strict=True) if id_ == 4]
    kept = sum(target == id_ for target, id_ in zip(targets, shown, strict=True))
    assert 0 < kept < len(targets) - len(at_mask)  # some kept, some randomly replaced
    assert results["masked_lm_context_free_accuracy"] == pytest.approx(
        (kept + max(at_mask.count(id_) for id_ in at_mask)) / len(targets)
    )
    assert sorted(p.name for p in (tmp_path / "checkpoints").glob("*.index")) == [
        "ckpt-3.index",
        "ckpt-6.index",
    ]
    assert list((tmp_path / "train").glob("events.out.tfevents.*")) and list(
        (tmp_path / "eval").glob("events.*")
    )
    pretrainer = model_dir.load_pretrainer(str(tmp_path))
    assert pretrainer.encoder.config.hidden_size == 14
    # The loaded weights are the trained ones: the loaded model gives the run's held-out losses, computed
    # here by hand over all 20 eval records (the run evaluated them in batches of 4).
    (batch,) = dataset.pretraining_dataset(
        data["eval"],
        batch_size=20,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        is_training=False,
    )
    outputs = pretrainer({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=False)
    mlm_ce = cross_entropy(outputs["mlm_logits"], batch["masked_lm_ids"])
    weights = batch["masked_lm_weights"].numpy()
    assert np.sum(weights * mlm_ce) / np.sum(weights) == pytest.approx(results["masked_lm_loss"], rel=1e-5)
    sop_ce = cross_entropy(outputs["sop_logits"], batch["sentence_order_label"])
    assert np.mean(sop_ce) == pytest.approx(results["sentence_order_loss"], rel=1e-5)


def test_the_training_input_is_released_when_training_ends(data, tmp_path):
    """Not when the garbage collector finds the engine: a collection that deletes a tf.data iterator can
    block the process for up to a minute (its autotuning thread's sleep)."""
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, tf.data.Iterator)}
    gc.disable()  # what is left must be left by the run, not freed by a collection that happens to run
    try:
        run(settings(data, tmp_path))
        left = [o for o in gc.get_objects() if isinstance(o, tf.data.Iterator) and id(o) not in before]
    finally:
        gc.enable()
    assert not left, left


@pytest.mark.slow
def test_gradient_accumulation_gives_the_larger_batch_update(data, tmp_path):
    run(exact_settings(data, tmp_path / "one"))
    run(dataclasses.replace(exact_settings(data, tmp_path / "two"), gradient_accumulation_steps=2))
    assert_same_weights(tmp_path / "one", tmp_path / "two", atol=2e-6)


@pytest.mark.slow
def test_remat_trains_to_the_weights_of_a_run_without_it_with_dropout_on(data, tmp_path):
    run(settings(data, tmp_path / "kept", eval_input_file=None))
    recomputed = settings(data, tmp_path / "recomputed", eval_input_file=None, remat=True)
    run(recomputed)
    assert_same_weights(tmp_path / "kept", tmp_path / "recomputed", atol=1e-6)
    assert build(
        recomputed, restore=False
    ).task.model.encoder.remat  # what that does: tests/models/test_remat.py


def test_accumulation_must_divide_the_batch(data, tmp_path):
    with pytest.raises(
        ValueError, match="--train_batch_size=8 must be divisible .* --gradient_accumulation_steps=3"
    ):
        run(settings(data, tmp_path, gradient_accumulation_steps=3))


def _trained_mlm_losses(run_settings):
    """(held-out masked-LM loss before training, after it, the run) for a run built from run_settings."""
    run_ = build(run_settings)
    before = run_.evaluate()["masked_lm_loss"]
    run_.train()
    return before, run_.evaluate()["masked_lm_loss"], run_


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_trains_like_float32(data, tmp_path, precision):
    before, full, _ = _trained_mlm_losses(
        exact_settings(data, tmp_path / "float32", eval_input_file=data["eval"])
    )
    keras.config.set_dtype_policy("float32")
    mixed_settings = exact_settings(data, tmp_path / precision, eval_input_file=data["eval"])
    start, mixed, run_ = _trained_mlm_losses(dataclasses.replace(mixed_settings, mixed_precision=precision))
    assert run_.model.encoder.compute_dtype == precision and run_.model.encoder.variable_dtype == "float32"
    # Both start from the same weights, and training moves the loss; the low-precision run follows float32.
    assert abs(start - before) < 1e-3 and before - full > 5e-3, (before, full)
    assert abs(mixed - full) < 0.1 * (before - full), (before, full, mixed)


def test_online_masking_trains_on_records_without_stored_masks(tmp_path):
    # Records with token_boundary but no masked_lm_* features: only the masks drawn in the pipeline can
    # train the model. Ids below 10 give the masked-LM head something to learn in a few steps.
    for name, count, seed in (("train", 96, 0), ("eval", 20, 9)):
        write_records(str(tmp_path / f"{name}.tfrecord"), count, seed, ids_below=10, with_masks=False)
    tiny_config().to_json_file(tmp_path / "albert_config.json")
    files = {"config": str(tmp_path / "albert_config.json"), "train": str(tmp_path / "train.tfrecord"),
             "eval": str(tmp_path / "eval.tfrecord")}  # fmt: skip
    before, after, _ = _trained_mlm_losses(settings(files, tmp_path / "run", online_masking=True))
    assert after < before - 0.1, (before, after)


@pytest.mark.slow
def test_xla_gives_the_same_weights_and_evaluation(data, tmp_path):
    """--jit_compile compiles the training step and the evaluation step."""
    graph = run(exact_settings(data, tmp_path / "eager", eval_input_file=data["eval"]))
    compiled = run(
        dataclasses.replace(exact_settings(data, tmp_path / "xla", data["eval"]), jit_compile=True)
    )
    assert_same_weights(tmp_path / "eager", tmp_path / "xla", atol=1e-5)
    assert compiled == pytest.approx(graph, rel=1e-5, abs=1e-6)


def test_records_of_another_length_are_named_with_both_values(data, tmp_path):
    path = str(tmp_path / "long.tfrecord")
    write_records(path, 2, seed=3, seq=32)
    expected = (
        r"--input_file: .*long\.tfrecord was built with input_ids of length 32, but --max_seq_length=16"
    )
    with pytest.raises(ValueError, match=expected):
        run(settings(data, tmp_path / "out", input_file=path))
    with pytest.raises(ValueError, match=r"--eval_input_file: .*masked_lm_positions of length 3, but "
                       r"--max_predictions_per_seq=5"):  # fmt: skip
        dataset.check_records(data["eval"], SEQ, 5, "--eval_input_file")


def test_a_tokenizer_larger_than_the_vocabulary_is_refused_before_the_first_step(data, tmp_path):
    """The sample's 8k SentencePiece model with tiny_config's 97 ids: on a CPU the embedding gather would fail
    mid-run; on a GPU or TPU it would read zeros and train on wrong inputs."""
    with pytest.raises(TokenizerError, match=r"spm_8k\.model has 8,000 pieces but .*albert_config\.json has "
                                             r"vocab_size 97"):  # fmt: skip
        build(settings(data, tmp_path / "run", spm_model_file=str(SAMPLE_SPM)))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(data, tmp_path):
    run_settings = settings(data, tmp_path, optimizer="adamw", learning_rate=1e30, num_warmup_steps=0)
    with pytest.raises(TrainingError, match=r"not finite at step \d+.*Last good checkpoint: none"):
        run(run_settings)
    assert not (tmp_path / model_files.WEIGHTS_FILE).exists()


def write_tf1_release(pretrainer, folder):
    """Our weights as an original TF1 release: albert_config.json, model.ckpt-best with the original names."""
    os.makedirs(folder)
    pretrainer.encoder.config.to_json_file(os.path.join(folder, "albert_config.json"))
    tensors = {}
    for name, variable in tf1_variables.tf1_variable_map(pretrainer).items():
        value = np.asarray(variable)
        tensors[name] = value.T if name in tf1_variables.TRANSPOSED else value
    names = sorted(tensors)
    tf.raw_ops.SaveV2(
        prefix=os.path.join(folder, "model.ckpt-best"), tensor_names=names,
        shape_and_slices=[""] * len(names), tensors=[tf.constant(tensors[n]) for n in names],
    )  # fmt: skip


def test_a_starting_model_with_another_tokenizer_or_casing_than_the_records_is_refused(tmp_path):
    """--init_checkpoint's model must read the records' ids as they were built (the sample's manifest names
    its SentencePiece model, lowercasing and the original's dropped marks): another SentencePiece model, a
    cased model, or one that keeps marks is refused before any weight is loaded, naming both; the records'
    own tokenizer and normalization start."""
    config = shipped.config_file("albert_tiny")
    pretrainer = AlbertPretrainer(AlbertEncoder(AlbertConfig.from_json_file(config)))
    built_from = (
        r"train\.manifest\.json \(--input_file\) was built from lowercased text with combining marks dropped"
    )
    cases = (
        ("other", small_spm(tmp_path), True, False, r"its SentencePiece model .*other/spm\.model is not the "
         r"one .*train\.manifest\.json \(--input_file\) was built with, .*spm_8k\.model"),
        ("cased", str(SAMPLE_SPM), False, False, r"takes cased text with combining marks dropped, but .*"
         + built_from),
        ("marks", str(SAMPLE_SPM), True, True, r"takes lowercased text with its combining marks kept, but .*"
         + built_from),
        ("same", str(SAMPLE_SPM), True, False, None),
    )  # fmt: skip
    for name, spm, lowercased, keeps_accents, refusal in cases:
        model_dir.save_model_dir(
            pretrainer, tmp_path / name, spm, do_lower_case=lowercased, keep_accents=keeps_accents
        )
        run_settings = PretrainingSettings(
            albert_config_file=config, input_file=shipped.resolve("input_file", "sample"),
            output_dir=str(tmp_path / f"run_{name}"), max_seq_length=64, max_predictions_per_seq=10,
            train_batch_size=8, num_train_steps=1, num_warmup_steps=0, init_checkpoint=str(tmp_path / name),
        )  # fmt: skip
        if refusal:
            with pytest.raises(TokenizerError, match=refusal):
                build(run_settings)
        else:
            started = build(run_settings)
            for ours, saved in zip(started.model.weights, pretrainer.weights, strict=True):
                np.testing.assert_array_equal(np.asarray(ours), np.asarray(saved))


def test_some_shards_of_a_build_and_held_out_records_are_held_to_the_builds_tokenizer_and_casing(tmp_path):
    """A glob of some of a build's shards is checked against what its manifest says (here another
    --spm_model_file, refused); held-out records built from cased text beside lowercased training records are
    refused, naming both manifests."""
    sample = pathlib.Path(shipped.resolve("input_file", "sample")).parent
    common = dict(
        albert_config_file=shipped.config_file("albert_tiny"), output_dir=str(tmp_path / "run"),
        max_seq_length=64, max_predictions_per_seq=10, train_batch_size=8, num_train_steps=1,
        num_warmup_steps=0,
    )  # fmt: skip
    some = f"{sample}/train-00000-of-00004,{sample}/train-00001-of-00004"
    other = small_spm(tmp_path)
    refusal = (
        r"--input_file: .*train\.manifest\.json was built with .*spm_8k\.model .*not with --spm_model_file="
    )
    with pytest.raises(TokenizerError, match=refusal):
        build(PretrainingSettings(input_file=some, spm_model_file=other, **common))
    cased = tmp_path / "cased"
    cased.mkdir()
    shutil.copy(sample / "eval-00000-of-00001", cased)
    manifest = json.loads((sample / "eval.manifest.json").read_text())
    manifest["settings"]["do_lower_case"] = False
    (cased / "eval.manifest.json").write_text(json.dumps(manifest))
    refusal = (
        r"--eval_input_file: .*cased/eval\.manifest\.json was built from cased text with combining marks "
        r"dropped, but --input_file's .*train\.manifest\.json from lowercased text with combining marks "
        r"dropped"
    )
    with pytest.raises(TokenizerError, match=refusal):
        build(PretrainingSettings(
            input_file=str(sample / "train.manifest.json"), eval_input_file=str(cased / "eval.manifest.json"),
            **common,
        ))  # fmt: skip
    manifest["settings"].update(do_lower_case=True, keep_accents=True)  # marks kept: other pieces again
    (cased / "eval.manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TokenizerError, match=r"from lowercased text with its combining marks kept, but"):
        build(PretrainingSettings(
            input_file=str(sample / "train.manifest.json"), eval_input_file=str(cased / "eval.manifest.json"),
            **common,
        ))  # fmt: skip


@pytest.mark.slow
def test_init_checkpoint_takes_a_model_directory_a_tf1_release_or_a_hugging_face_directory(
    data, tmp_path, capsys
):
    run(settings(data, tmp_path / "first", eval_input_file=None))
    assert "no evaluation: no --eval_input_file" in capsys.readouterr().err  # trains, and says why no eval
    trained = model_dir.load_pretrainer(str(tmp_path / "first"))
    convert.to_hf(str(tmp_path / "first"), str(tmp_path / "hf"))
    write_tf1_release(trained, str(tmp_path / "tf1"))
    for source in ("first", "hf", "tf1", "first/checkpoints"):
        # A SentencePiece model given as well must not keep the weights from loading.
        spm = small_spm(tmp_path) if source == "first" else None
        run_ = build(
            settings(
                data,
                tmp_path / f"from_{source[:5]}",
                init_checkpoint=str(tmp_path / source),
                spm_model_file=spm,
            )
        )
        assert run_.engine.step == 0  # weights only: a new run
        for ours, theirs in zip(run_.model.weights, trained.weights, strict=True):
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs), err_msg=source)
    other = str(tmp_path / "wide.json")
    tiny_config(hidden_size=22).to_json_file(other)
    with pytest.raises(ValueError, match=r"--init_checkpoint=.*hf holds another architecture"):
        build(settings(data, tmp_path / "wide", init_checkpoint=str(tmp_path / "hf"),
                                   albert_config_file=other))  # fmt: skip


def event_steps(folder):
    """tag → sorted steps of the scalars in a TensorBoard folder."""
    steps = {}
    for path in tf.io.gfile.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                steps.setdefault(value.tag, []).append(event.step)
    return {tag: sorted(found) for tag, found in steps.items()}


@pytest.mark.slow
def test_periodic_evaluation_keeps_a_history_and_evaluation_alone_reads_any_checkpoint_and_its_step(
    data, tmp_path
):
    results = run(settings(data, tmp_path / "run", eval_every_steps=2))
    lines = (tmp_path / "run" / "eval_history.jsonl").read_text().splitlines()
    history = [json.loads(line) for line in lines]
    assert [entry["global_step"] for entry in history] == [2, 4, 6]
    assert history[-1] == pytest.approx(results) and history[0] != pytest.approx(results)
    assert event_steps(tmp_path / "run" / "eval")["masked_lm_loss"] == [2, 4, 6]
    assert event_steps(tmp_path / "run" / "eval")["masked_lm_baseline_accuracy"] == [2, 4, 6]
    assert event_steps(tmp_path / "run" / "train")["masked_lm_baseline_accuracy"] == [2, 4, 6]
    assert all(
        entry["masked_lm_baseline_accuracy"] == results["masked_lm_baseline_accuracy"] for entry in history
    )
    # Evaluation alone, reporting the step of the weights it evaluates: the run's latest checkpoint, a model
    # directory (global_step.json), a training checkpoint, and a Hugging Face directory (no step: null).
    again = run(settings(data, tmp_path / "run", do_train=False))
    assert again == pytest.approx(results) and results["global_step"] == 6
    assert model_files.global_step(tmp_path / "run") == 6
    from_dir = run(settings(data, tmp_path / "eval", do_train=False, init_checkpoint=str(tmp_path / "run")))
    assert from_dir == pytest.approx(results)
    assert not (tmp_path / "eval" / model_files.WEIGHTS_FILE).exists()  # evaluation writes no model
    assert json.loads((tmp_path / "eval" / "eval_results.json").read_text()) == pytest.approx(from_dir)
    earlier = str(tmp_path / "run" / "checkpoints" / "ckpt-3")
    with pytest.raises(ValueError, match=r"--output_dir=.*run holds checkpoints too: give another --output"):
        run(settings(data, tmp_path / "run", do_train=False, init_checkpoint=earlier))  # evaluate which?
    from_checkpoint = run(settings(data, tmp_path / "ckpt", do_train=False, init_checkpoint=earlier))
    metrics = {name: value for name, value in results.items() if name != "global_step"}
    assert from_checkpoint.pop("global_step") == 3 and from_checkpoint != pytest.approx(
        metrics
    )  # other weights
    convert.to_hf(str(tmp_path / "run"), str(tmp_path / "hf"))
    from_hf = run(settings(data, tmp_path / "hf_eval", do_train=False, init_checkpoint=str(tmp_path / "hf")))
    assert from_hf.pop("global_step") is None and from_hf == pytest.approx(metrics, rel=1e-5)
    history = (tmp_path / "hf_eval" / "eval_history.jsonl").read_text().splitlines()
    assert [json.loads(line)["global_step"] for line in history] == [None]
    with pytest.raises(
        ValueError, match="nothing to evaluate: no checkpoint in .*empty.* and no --init_checkpoint"
    ):
        run(settings(data, tmp_path / "empty", do_train=False))
    with pytest.raises(ValueError, match="evaluation needs --eval_input_file"):
        run(settings(data, tmp_path / "no_eval", eval_input_file=None, eval_every_steps=2))


def test_first_gradient_norm_exceeds_the_clip(data, tmp_path):
    run_ = build(exact_settings(data, tmp_path))
    batch = next(
        iter(run_.strategy.distribute_datasets_from_function(lambda c: run_.inputs.train_dataset(c, 0)))
    )
    with tf.GradientTape() as tape:
        outputs = run_.model({name: batch[name] for name in features.PRETRAINER_INPUTS}, training=True)
        sums = losses.pretraining_sums(batch, outputs)
        loss = losses.pretraining_loss(sums, tf.reduce_sum(batch["masked_lm_weights"]), 8.0)
    assert float(tf.linalg.global_norm(tape.gradient(loss, run_.model.trainable_variables))) > 1.5


# The command line, distribution and preemption (separate processes) ---------------------------------------


@pytest.mark.slow
def test_command_line_prints_progress_and_rejects_typos(data, tmp_path):
    result = run_module(flags_of(settings(data, tmp_path)))
    assert "run_pretraining: step 6/6 | loss " in result.stderr and "examples/s | ETA" in result.stderr
    # The process's peak so far: TensorFlow and the model alone hold a few hundred MB.
    peak = re.search(r"ETA [\d:]+ \| peak memory (\d+\.\d\d) GB host\n", result.stderr)
    assert peak and 0.2 < float(peak.group(1)) < 20, result.stderr[-2000:]
    assert re.search(
        r"step 6/6 \| .* mlm_acc 0\.\d{4} \(most frequent token 0\.\d{4}, without context \d\.\d{4}\) \| "
        r"sop_acc",
        result.stderr,
    )
    assert re.search(r"eval at step 6: .*masked_lm_baseline_accuracy 0\.\d{4}", result.stderr)
    assert (tmp_path / "eval_results.json").exists()
    assert not INFO_LINE.search(result.stderr), result.stderr[-2000:]  # TensorFlow's INFO lines held back
    typo = run_module([*flags_of(settings(data, tmp_path / "typo")), "--num_train_step=3"], check=False)
    assert (
        typo.returncode != 0
        and "num_train_step" in typo.stderr
        and "Unknown command line flag" in typo.stderr
    )


@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_weights(data, tmp_path):
    # Killed once a checkpoint of step 8 or later is written (a second save: the resume is not from the
    # first). After step 8 the run has 192 steps left: seconds on a CPU.
    run_settings = settings(data, tmp_path / "whole", num_train_steps=200, save_checkpoints_steps=4,
                            steps_per_loop=4, log_every_steps=100, eval_input_file=None)  # fmt: skip
    run(run_settings)  # the uninterrupted run: in this process
    interrupted = flags_of(dataclasses.replace(run_settings, output_dir=str(tmp_path / "killed")))
    kill_once_saved("albert_tf.run_pretraining", interrupted, tmp_path / "killed" / "checkpoints", 8)
    assert not (tmp_path / "killed" / model_files.WEIGHTS_FILE).exists(), "the run ended before it was killed"
    resumed = run_module(interrupted)
    steps = [int(step) for step in re.findall(r"resumed from .*ckpt-\d+ at step (\d+)", resumed.stderr)]
    assert len(steps) == 1 and 8 <= steps[0] < 200, resumed.stderr[-2000:]
    assert_same_weights(tmp_path / "whole", tmp_path / "killed")


@pytest.mark.slow
def test_mirrored_over_two_devices_matches_one_device(data, tmp_path):
    base = exact_settings(data, tmp_path / "one")
    run(base)  # one device: in this process
    two = flags_of(dataclasses.replace(base, output_dir=str(tmp_path / "two"), strategy="mirrored"))
    run_on_two_devices("albert_tf.run_pretraining", two)
    assert_same_weights(tmp_path / "one", tmp_path / "two", atol=2e-6)


@pytest.fixture(scope="module")
def one_process_on_one_file(data, tmp_path_factory):
    """The settings of a run on one file without shuffling, and its one-process run's output directory.

    One file and no shuffling: the file is then split record by record between two workers (0, 2, 4, ... and
    1, 3, 5, ...), so each step's global batch holds the records the single process batches together."""
    base = dataclasses.replace(
        exact_settings(data, tmp_path_factory.mktemp("one_process") / "one"),
        input_file=data["train"].split(",")[0],
        shuffle_buffer_size=1,
        eval_input_file=data["eval"],
    )
    run(base)
    return base


@pytest.mark.slow
@pytest.mark.xdist_group("one_process_on_one_file")  # one process runs the shared one-process run once
def test_multi_worker_on_loopback_matches_one_process(one_process_on_one_file, tmp_path):
    base = one_process_on_one_file
    args = flags_of(
        dataclasses.replace(base, output_dir=str(tmp_path / "two"), strategy="multi_worker_mirrored")
    )
    run_on_two_workers("albert_tf.run_pretraining", [args, args])
    # Worker 0 wrote the run; worker 1 kept its checkpoints in a scratch folder, removed at the end.
    assert (tmp_path / "two" / "checkpoints" / "checkpoint").is_file()
    assert not (tmp_path / "two" / "checkpoints" / "worker_1").exists()
    assert_same_weights(base.output_dir, tmp_path / "two", atol=2e-6)
    # Evaluation reads every held-out record once across the workers, as the single process does.
    one, two = (json.loads((directory / "eval_results.json").read_text())
                for directory in (pathlib.Path(base.output_dir), tmp_path / "two"))  # fmt: skip
    assert one == pytest.approx(two, rel=1e-5)


@pytest.mark.slow
@pytest.mark.xdist_group("one_process_on_one_file")
def test_a_chief_and_a_worker_train_the_one_process_weights_only_the_chief_writes_and_they_resume_alike(
    one_process_on_one_file, tmp_path, capsys
):
    # The cluster of Vertex AI, Kubeflow's TFJob and SageMaker: a `chief` task beside worker 0, each told its
    # own --output_dir. The chief writes the run; worker 0 leaves nothing behind.
    base = one_process_on_one_file
    chief, worker = (
        flags_of(dataclasses.replace(base, output_dir=str(tmp_path / name), strategy="multi_worker_mirrored"))
        for name in ("chief", "worker")
    )
    outputs = run_on_two_workers("albert_tf.run_pretraining", [chief, worker], chief=True)
    assert "run_pretraining: step 6/6" in outputs[0] and "run_pretraining: step" not in outputs[1]
    assert_same_weights(base.output_dir, tmp_path / "chief", atol=2e-6)
    assert (tmp_path / "chief" / "eval_results.json").is_file()
    # Its checkpoints went to a scratch folder of its own, removed with the folders made for it at the end.
    assert not (tmp_path / "worker").exists()

    # Then the worker is as if killed before it saved step 6: its scratch folder holds step 3 only.
    # Continued to 9 steps, both restore step 3 (the chief's step 6 would start them from different
    # weights) and end with the weights of one process resumed from step 3.
    step_3 = str(tmp_path / "chief" / "checkpoints" / "ckpt-3")
    copy_checkpoint(step_3, tmp_path / "worker" / "checkpoints" / "worker_0")
    longer = [[*flags, "--num_train_steps=9"] for flags in (chief, worker)]
    outputs = run_on_two_workers("albert_tf.run_pretraining", longer, chief=True)
    assert "at step 3 (the newest step every task holds; chief holds 3, 6; worker 0 holds 3)" in outputs[0]
    assert "run_pretraining: step 9/9" in outputs[0]
    assert not (tmp_path / "worker" / "checkpoints" / "worker_0").exists()  # the scratch folder, removed
    copy_checkpoint(step_3, tmp_path / "one" / "checkpoints")
    capsys.readouterr()
    run(dataclasses.replace(base, output_dir=str(tmp_path / "one"), num_train_steps=9))
    assert "resumed from" in capsys.readouterr().err
    assert_same_weights(tmp_path / "one", tmp_path / "chief", atol=2e-6)


@pytest.mark.slow
@pytest.mark.xdist_group("one_process_on_one_file")
def test_a_task_that_refuses_stops_every_task_of_the_cluster_at_once(one_process_on_one_file, tmp_path):
    # What only the chief sees, each task told its own paths: without the chief, worker 0 would wait on its
    # first collective until that timed out. It stops too, naming the chief and its reason: before TensorFlow
    # starts (an --output_dir that is a file) and as the run is built (a config file missing on its disk).
    base = dataclasses.replace(one_process_on_one_file, strategy="multi_worker_mirrored")
    (tmp_path / "a_file").write_text("")
    missing = str(tmp_path / "missing.json")
    cases = [
        (
            {"output_dir": str(tmp_path / "a_file")},
            f"--output_dir={tmp_path / 'a_file'}: {tmp_path / 'a_file'} ",
        ),
        (
            {"output_dir": str(tmp_path / "chief"), "albert_config_file": missing},
            f"{missing}: no such config",
        ),
    ]
    for chief, reason in cases:
        args = [flags_of(dataclasses.replace(base, **chief)),
                flags_of(dataclasses.replace(base, output_dir=str(tmp_path / "worker")))]  # fmt: skip
        outputs = run_on_two_workers("albert_tf.run_pretraining", args, chief=True, returncode=1, timeout=180)
        assert f"run_pretraining: error: {reason}" in outputs[0], outputs[0][-2000:]
        told = "run_pretraining: error: the chief of this run refused, so this task stops too: "
        assert told + reason in outputs[1], outputs[1][-2000:]
        assert not (tmp_path / "worker").exists()


def copy_checkpoint(prefix, folder):
    """A checkpoint's files copied into folder, listed there as its only checkpoint."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in pathlib.Path(prefix).parent.glob(pathlib.Path(prefix).name + ".*"):
        shutil.copy(path, folder)
    tf.compat.v1.train.update_checkpoint_state(str(folder), str(folder / pathlib.Path(prefix).name))


def test_a_resume_with_another_batch_size_or_model_is_refused_naming_both(data, tmp_path):
    run(settings(data, tmp_path, eval_input_file=None))
    with pytest.raises(ValueError, match=r"--train_batch_size=4, but .*ckpt-6 was trained with batches of 8"):
        build(settings(data, tmp_path, eval_input_file=None, train_batch_size=4, num_train_steps=9))
    wider = json.loads(pathlib.Path(data["config"]).read_text())
    wider["intermediate_size"] += 2
    (tmp_path / "wider.json").write_text(json.dumps(wider))
    refused = r"ckpt-6 is a checkpoint of another model or task than this run's \(.*shape"
    with pytest.raises(ValueError, match=refused):
        build(settings(data, tmp_path, eval_input_file=None, albert_config_file=str(tmp_path / "wider.json")))


def spiking_settings(data, output_dir, **changes):
    """The injected collapse: a peak learning rate of 1.0 (AdamW) that warm-up reaches in 10 steps; by step 6
    the loss is several times its best. A rollback lowers the rate tenfold, and the run trains on."""
    values = dict(
        optimizer="adamw", learning_rate=1.0, num_warmup_steps=10, num_train_steps=40,
        save_checkpoints_steps=2, log_every_steps=2, steps_per_loop=2, eval_every_steps=10,
        rollback_on_collapse=True, rollback_learning_rate_factor=0.1,
    )  # fmt: skip
    return settings(data, output_dir, **{**values, **changes})


@pytest.mark.slow
def test_a_learning_rate_spike_is_caught_rolled_back_and_recorded(data, tmp_path, capsys):
    results = run(spiking_settings(data, tmp_path))
    log = capsys.readouterr().err
    assert "| collapse: loss spike: the smoothed loss" in log, log[-3000:]
    rollbacks = re.findall(
        r"rolled back to .*ckpt-(\d+) \(step (\d+)\); the learning rate is now ([\d.]+)x", log
    )
    assert rollbacks and all(saved == step for saved, step, _ in rollbacks), log[-3000:]
    assert [float(scale) for *_, scale in rollbacks] == pytest.approx(
        [0.1**n for n in range(1, len(rollbacks) + 1)]
    )
    # Each rollback goes back before the spike: the next progress line's loss is below the flagged one's.
    losses = [(index, float(found[1])) for index, line in enumerate(log.splitlines())
              if (found := re.search(r": step \d+/40 \| loss ([\d.]+)", line))]  # fmt: skip
    for index, line in enumerate(log.splitlines()):
        if "rolled back to" in line:
            flagged = [loss for at, loss in losses if at < index][-1]
            after = next(loss for at, loss in losses if at > index)
            assert after < flagged, (flagged, after, line)
    assert "step 40/40" in log and np.isfinite(results["masked_lm_loss"])
    history = [json.loads(line) for line in (tmp_path / "eval_history.jsonl").read_text().splitlines()]
    # The evaluation after a rollback says why and where it happened (not `collapse`: the weights it
    # evaluates are the ones rolled back to), and each entry how many rollbacks its weights have been through.
    rolled_back = [entry["rolled_back"] for entry in history if "rolled_back" in entry]
    assert rolled_back and all(re.fullmatch(r"loss spike: .* at step \d+: rolled back to step \d+", reason)
                               for reason in rolled_back), history  # fmt: skip
    counts = [entry.get("rollbacks", 0) for entry in history]
    assert counts == sorted(counts) and counts[-1] == len(rollbacks), history


@pytest.mark.slow
def test_a_run_that_rolled_back_resumes_to_the_uninterrupted_weights_history_and_guard(data, tmp_path):
    # The rollback at step 6 (to step 2) is reported by the evaluation at step 20; the run is killed once it
    # has saved step 8 or later after the rollback, before that evaluation. The resumed run must report it,
    # count it and read its next losses against the best it had, as the uninterrupted run does.
    whole = spiking_settings(data, tmp_path / "whole", eval_every_steps=20)
    run(whole)
    killed = tmp_path / "killed"
    flags = flags_of(dataclasses.replace(whole, output_dir=str(killed)))
    saved = kill_once_saved("albert_tf.run_pretraining", flags, killed / "checkpoints", 8)
    assert 8 <= saved < 20 and not (killed / "eval_history.jsonl").exists(), saved
    resumed = run_module(flags)
    assert re.search(r"resumed from .*ckpt-\d+ at step (8|1\d)\n", resumed.stderr), resumed.stderr[-2000:]
    assert_same_weights(tmp_path / "whole", killed)
    for name in ("eval_history.jsonl", "eval_results.json"):
        assert (tmp_path / "whole" / name).read_text() == (killed / name).read_text(), name
    history = [json.loads(line) for line in (killed / "eval_history.jsonl").read_text().splitlines()]
    assert "at step 6: rolled back to step 2" in history[0]["rolled_back"], history
    ends = [build(dataclasses.replace(whole, output_dir=str(folder))).engine.state.serialize()
            for folder in (tmp_path / "whole", killed)]  # fmt: skip
    assert ends[0] == ends[1] and json.loads(ends[0])["rollbacks"] == 1


def test_an_evaluation_flagged_as_a_collapse_never_becomes_the_best(data, tmp_path):
    run_ = build(settings(data, tmp_path, num_train_steps=2, save_checkpoints_steps=2))
    engine = run_.engine
    engine.state.spike = "loss spike: injected"  # a spike since the last evaluation flags the next one
    flagged = engine.evaluate(keep_best=True)
    assert flagged["collapse"] == "loss spike: injected"
    assert int(engine.best_step.numpy()) == -1 and engine.state.best_results is None
    assert not (tmp_path / "checkpoints" / "best").exists()
    healthy = engine.evaluate(keep_best=True)  # the same weights, not flagged: the best
    assert "collapse" not in healthy and engine.state.best_results == healthy
    assert int(engine.best_step.numpy()) == 0 and (tmp_path / "checkpoints" / "best").is_dir()


@pytest.mark.slow
def test_a_rollback_restores_the_healthy_checkpoint_and_keeps_the_input_position(data, tmp_path):
    steps = dict(eval_input_file=None, save_checkpoints_steps=2)
    healthy = build(settings(data, tmp_path, num_train_steps=4, **steps))
    healthy.train()
    at_step_4 = [np.array(w) for w in healthy.model.get_weights()]
    # Step 4's checkpoint as a version before runs kept their state wrote it: resumed from, and rolled back
    # to, with the guard's readings started afresh.
    older = {name: part for name, part in healthy.engine._checkpointed().items() if name != "run_state"}
    tf.train.CheckpointManager(tf.train.Checkpoint(**older), str(tmp_path / "checkpoints"), 5).save(4)
    assert not any(name.startswith("run_state/") for name, _ in tf.train.list_variables(
        str(tmp_path / "checkpoints" / "ckpt-4")))  # fmt: skip
    run_ = build(settings(data, tmp_path, num_train_steps=6, **steps))
    run_.train()
    for variable in run_.model.trainable_variables:  # the collapse: weights a spike has wrecked
        variable.assign(tf.fill(variable.shape, 7.0))
    run_.engine.state.guard.healthy_step = 5  # the last healthy line: the newest checkpoint before it is 4
    assert run_.engine.roll_back("an injected collapse", 6) == 4
    for restored, expected in zip(run_.model.get_weights(), at_step_4, strict=True):
        np.testing.assert_array_equal(restored, expected)
    assert int(run_.engine.batches.numpy()) == 6  # the input goes on: batches 5 and 6 are not seen again
    assert float(run_.engine.learning_rate_scale.numpy()) == 0.5
    s = run_.settings
    unscaled = WarmupPolynomialDecay(s.learning_rate, s.num_train_steps, s.num_warmup_steps)(3)
    assert float(run_.task.schedule(3)) == pytest.approx(0.5 * float(unscaled), rel=1e-6)


@pytest.mark.slow
def test_an_evaluator_task_evaluates_each_checkpoint_as_it_lands(data, tmp_path):
    # TF_CONFIG's `evaluator` task beside a training run with the same flags: it joins no cluster (the
    # worker address it names is never dialled), trains nothing and evaluates checkpoints until step 12's.
    flags = flags_of(settings(data, tmp_path, num_train_steps=12, save_checkpoints_steps=4, steps_per_loop=4,
                              log_every_steps=4))  # fmt: skip
    evaluator_config = {"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}
    evaluator = commands.start(
        "albert_tf.run_pretraining",
        flags,
        env={**os.environ, "TF_CONFIG": json.dumps(evaluator_config)},
        combined=True,
    )
    run_module(flags)
    evaluated = evaluator.result(timeout=300)
    output = evaluated.stdout
    assert evaluated.returncode == 0, output[-3000:]
    # Each checkpoint saved, in order, however many landed while one was evaluated.
    steps = [int(step) for step in re.findall(r"eval at step (\d+)", output)]
    assert steps == [4, 8, 12], output[-3000:]
    assert "run_pretraining: step" not in output
    own = tmp_path / "continuous_eval"
    history = [json.loads(line) for line in (own / "eval_history.jsonl").read_text().splitlines()]
    assert [entry["global_step"] for entry in history] == steps
    # Step 12's weights, evaluated by the evaluator and by the training run at its end.
    trained = json.loads((tmp_path / "eval_results.json").read_text())
    assert json.loads((own / "eval_results.json").read_text()) == pytest.approx(trained, rel=1e-6)
