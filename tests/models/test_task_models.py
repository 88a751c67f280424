"""Task models: shapes, padding, training, saving, and loading from a model directory."""

import keras
import numpy as np
import pytest

from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from albert_tf.models.task_models import AlbertClassifier, AlbertMultipleChoice, AlbertSpanLabeler
from tests.helpers import ENCODER_INPUTS, random_features, tiny_config


def features(batch_size=4, seed=0):
    values = random_features(tiny_config(), batch_size=batch_size, seed=seed)
    return {name: values[name] for name in ENCODER_INPUTS}


def test_classifier_fits_and_reloads(tmp_path):
    model = AlbertClassifier(AlbertEncoder(tiny_config()), num_classes=3)
    x = features(8)
    y = np.arange(8) % 3
    assert model(x).shape == (8, 3)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(True)
    )
    history = model.fit(x, y, epochs=15, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] * 0.5
    model.save(tmp_path / "classifier.keras")
    reloaded = keras.saving.load_model(tmp_path / "classifier.keras")
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)


def test_span_labeler_masks_padding_and_scores_answerability():
    model = AlbertSpanLabeler(AlbertEncoder(tiny_config()), answerability=True)
    x = features(2)
    out = model(x)
    assert out["start_logits"].shape == (2, 7) and out["answerable_logits"].shape == (2,)
    padded = np.asarray(out["end_logits"])[1, -2:]  # the last sequence ends in 2 pads
    assert (padded < -9000).all() and (np.asarray(out["end_logits"])[0] > -9000).all()


def test_multiple_choice_scores_each_choice_with_the_same_weights():
    model = AlbertMultipleChoice(AlbertEncoder(tiny_config()), num_choices=4)
    x = {name: np.stack([features(4, seed)[name] for seed in (1, 2)]) for name in ENCODER_INPUTS}
    scores = np.asarray(model(x, training=False))
    assert scores.shape == (2, 4)
    # Choice 0 of example 1, scored alone, gets the same score.
    alone = AlbertMultipleChoice(model.encoder, num_choices=1)
    alone.get_layer("choice_logits").set_weights(model.get_layer("choice_logits").get_weights())
    single = {name: value[1:2, 0:1] for name, value in x.items()}
    np.testing.assert_allclose(np.asarray(alone(single, training=False))[0, 0], scores[1, 0], atol=1e-5)


@pytest.mark.parametrize(
    "cls,arguments",
    [
        (AlbertClassifier, {"num_classes": 2}),
        (AlbertSpanLabeler, {}),
        (AlbertMultipleChoice, {"num_choices": 2}),
    ],
)
def test_from_model_dir_uses_the_pretrained_encoder(tmp_path, cls, arguments):
    pretrainer = AlbertPretrainer(AlbertEncoder(tiny_config()))
    model_dir.save_model_dir(pretrainer, tmp_path)
    model = cls.from_model_dir(str(tmp_path), **arguments)
    for ours, pretrained in zip(model.encoder.weights, pretrainer.encoder.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(pretrained))


def _task(name, config):
    """(model, inputs, targets, compile losses) of a tiny batch for each task model."""
    x = features(4)
    sparse = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if name == "classifier":
        return AlbertClassifier(AlbertEncoder(config), num_classes=3), x, np.arange(4) % 3, sparse
    if name == "span":
        y = {"start_logits": np.array([1, 2, 0, 3]), "end_logits": np.array([2, 4, 0, 3]),
             "answerable_logits": np.array([1.0, 1.0, 0.0, 1.0], np.float32)}  # fmt: skip
        losses = {"start_logits": sparse, "end_logits": sparse,
                  "answerable_logits": keras.losses.BinaryCrossentropy(from_logits=True)}  # fmt: skip
        return AlbertSpanLabeler(AlbertEncoder(config), answerability=True), x, y, losses
    choices = {name: np.stack([features(4, seed)[name] for seed in (1, 2, 3)], axis=1) for name in x}
    return AlbertMultipleChoice(AlbertEncoder(config), num_choices=3), choices, np.arange(4) % 3, sparse


# Under mixed_bfloat16 only: XLA in float32 compiles the same graph without its casts, and float32 fits with
# XLA in tests/models/test_keras_contract.py (test_fit_lowers_the_loss[True]) and pretraining's
# test_xla_gives_the_same_weights_and_evaluation. Each case costs four XLA compilations (fit, evaluate,
# predict, the reloaded model's predict), so float32 is not repeated here.
@pytest.mark.slow
@pytest.mark.parametrize("name", ["classifier", "span", "multiple_choice"])
def test_fit_evaluate_predict_with_xla_and_mixed_precision(name, tmp_path):
    keras.config.set_dtype_policy("mixed_bfloat16")
    model, x, y, losses = _task(name, tiny_config())
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=losses, jit_compile=True)
    history = model.fit(x, y, epochs=12, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] * 0.7
    assert np.isfinite(model.evaluate(x, y, verbose=0)).all()
    predicted = model.predict(x, verbose=0)
    for value in keras.tree.flatten(predicted):
        assert value.dtype == np.float32 and np.isfinite(value).all()  # logits in float32 under bfloat16
    model.save(tmp_path / "task.keras")
    reloaded = keras.saving.load_model(tmp_path / "task.keras")
    again = keras.tree.flatten(reloaded.predict(x, verbose=0))
    for ours, theirs in zip(again, keras.tree.flatten(predicted), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_from_model_dir_continues_a_fine_tuned_model(tmp_path):
    model_dir.save_model_dir(AlbertPretrainer(AlbertEncoder(tiny_config())), tmp_path / "pretrained")
    classifier = AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=3)
    model_dir.copy_config_and_spm(str(tmp_path / "pretrained"), tmp_path / "tuned")
    model_dir.save_task_model(classifier, tmp_path / "tuned")
    again = AlbertClassifier.from_model_dir(str(tmp_path / "tuned"), num_classes=3, dropout_rate=0.2)
    x = features(4)
    np.testing.assert_array_equal(again.predict(x, verbose=0), classifier.predict(x, verbose=0))
    # The dropout rate it is continued with is the head's, and what a save records.
    assert again.get_layer("dropout").rate == 0.2 and classifier.get_layer("dropout").rate == 0.1
    model_dir.copy_config_and_spm(str(tmp_path / "pretrained"), tmp_path / "continued")
    model_dir.save_task_model(again, tmp_path / "continued")
    assert model_dir.load_task_model(str(tmp_path / "continued")).get_layer("dropout").rate == 0.2
    with pytest.raises(ValueError, match="holds an AlbertClassifier with num_classes=3, not 2"):
        AlbertClassifier.from_model_dir(str(tmp_path / "tuned"), num_classes=2)
    with pytest.raises(ValueError, match="holds a fine-tuned AlbertClassifier, not an AlbertSpanLabeler"):
        AlbertSpanLabeler.from_model_dir(str(tmp_path / "tuned"))


def test_a_classifier_keeps_its_label_names(tmp_path):
    model_dir.save_model_dir(AlbertPretrainer(AlbertEncoder(tiny_config())), tmp_path / "pretrained")
    labels = ("entailment", "not_entailment")
    classifier = AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=2, labels=labels)
    model_dir.copy_config_and_spm(str(tmp_path / "pretrained"), tmp_path / "tuned")
    model_dir.save_task_model(classifier, tmp_path / "tuned")
    assert model_dir.load_task_model(str(tmp_path / "tuned")).labels == labels
    assert AlbertClassifier.from_model_dir(str(tmp_path / "tuned"), num_classes=2).labels == labels
    with pytest.raises(ValueError, match=r"labels \['entailment', 'not_entailment'\], not \['no', 'yes'\]"):
        AlbertClassifier.from_model_dir(str(tmp_path / "tuned"), num_classes=2, labels=["no", "yes"])
    with pytest.raises(ValueError, match=r"labels \['a'\] name 1 classes, not num_classes=2"):
        AlbertClassifier(AlbertEncoder(tiny_config()), num_classes=2, labels=["a"])
    # A classifier fine-tuned without names takes the names it is continued with.
    unnamed = AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=2)
    model_dir.save_task_model(unnamed, tmp_path / "old")
    continued = AlbertClassifier.from_model_dir(str(tmp_path / "old"), num_classes=2, labels=labels)
    assert continued.labels == labels


@pytest.mark.parametrize("saved, loaded", [("mixed_bfloat16", "float32"), ("float32", "mixed_bfloat16")])
def test_a_task_model_reloads_under_the_dtype_policy_it_was_saved_with(saved, loaded, tmp_path):
    keras.config.set_dtype_policy(saved)
    model = AlbertSpanLabeler(AlbertEncoder(tiny_config()), answerability=True)
    model_dir.save_task_model(model, tmp_path)
    keras.config.set_dtype_policy(loaded)  # the process that loads it runs under another global policy
    again = model_dir.load_task_model(str(tmp_path))
    policies = [(layer.name, layer.dtype_policy.name) for layer in model._flatten_layers()]
    assert [(layer.name, layer.dtype_policy.name) for layer in again._flatten_layers()] == policies
    assert again.dtype_policy.name == saved and again.encoder.dtype_policy.name == saved
    x = features(3)
    for name, value in model.predict(x, verbose=0).items():
        np.testing.assert_array_equal(again.predict(x, verbose=0)[name], value, err_msg=name)
