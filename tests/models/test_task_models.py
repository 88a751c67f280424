"""Task models: shapes, padding, training, saving, and loading from a model directory."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertEncoder, AlbertPretrainer, model_dir
from albert_tf.models.preprocessing import Preprocessing
from albert_tf.models.task_models import AlbertClassifier, AlbertMultipleChoice, AlbertSpanLabeler
from albert_tf.text import batches
from albert_tf.text.tf_tokenizer import InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import ENCODER_INPUTS, SAMPLE_CORPUS, SAMPLE_SPM, random_features, tiny_config


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


@pytest.mark.parametrize(
    "cls, arguments",
    [
        (AlbertClassifier, {"num_classes": 3, "labels": ("a", "b", "c")}),
        (AlbertSpanLabeler, {"answerability": True, "span_settings": {"doc_stride": 5, "n_best_size": 3}}),
        (AlbertMultipleChoice, {"num_choices": 3}),
    ],
)
def test_a_keras_file_keeps_every_head_argument(cls, arguments, tmp_path):
    """Each head argument away from its default, and the Dropout layers' rate, come back from .keras."""
    preprocessing = Preprocessing(max_seq_length=12, text_pair=True, do_lower_case=False)
    model = cls(AlbertEncoder(tiny_config()), dropout_rate=0.3, preprocessing=preprocessing, **arguments)
    model.save(tmp_path / "model.keras")
    again = keras.saving.load_model(tmp_path / "model.keras")
    assert type(again) is cls and again._head_config() == model._head_config()
    for name, value in arguments.items():
        assert getattr(again, name) == value, name
    assert again.preprocessing == preprocessing
    rates = [layer.rate for layer in again.layers if isinstance(layer, keras.layers.Dropout)]
    assert rates and all(rate == 0.3 for rate in rates), rates


@pytest.mark.parametrize("cls, arguments", [(AlbertClassifier, {"num_classes": 2}),
                                            (AlbertSpanLabeler, {}),
                                            (AlbertMultipleChoice, {"num_choices": 3})])  # fmt: skip
def test_a_task_model_keeps_its_preprocessing_and_refuses_other_pairing(cls, arguments, tmp_path):
    config = tiny_config(max_position_embeddings=40)
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(config)), tmp_path / "pretrained", do_lower_case=False
    )
    fresh = cls.from_model_dir(str(tmp_path / "pretrained"), **arguments)
    # Put on a pretrained encoder: length and pairing unknown until given, the directory's casing.
    assert fresh.preprocessing == Preprocessing(max_seq_length=None, text_pair=None, do_lower_case=False)
    tuned = cls.from_model_dir(str(tmp_path / "pretrained"), max_seq_length=40, text_pair=True, **arguments)
    model_dir.save_task_model(tuned, tmp_path / "tuned")
    kept = model_dir.load_task_model(str(tmp_path / "tuned")).preprocessing  # through task_model.keras
    assert kept == Preprocessing(max_seq_length=40, text_pair=True, do_lower_case=False)
    # Continued at another length: it takes effect; with single texts: refused, naming both.
    again = cls.from_model_dir(str(tmp_path / "tuned"), max_seq_length=24, **arguments)
    assert again.preprocessing.max_seq_length == 24 and again.preprocessing.text_pair is True
    with pytest.raises(ValueError, match="trained with text_pair=True; text_pair=False contradicts it"):
        cls.from_model_dir(str(tmp_path / "tuned"), text_pair=False, **arguments)


@pytest.mark.slow
def test_a_classifier_fits_evaluates_and_predicts_on_raw_text(tmp_path):
    """Strings in, as a notebook user has them: tokenized in tf.data by the in-graph tokenizer, as the
    Python tokenizer packs them at the model's length; the pairing is recorded and then held to; label
    names are looked up; the SentencePiece model travels in the .keras file."""
    # Initialized wide: an untrained tiny encoder with the usual 0.02 gives nearly one output for every text.
    config = tiny_config(vocab_size=8000, max_position_embeddings=32, initializer_range=0.2)
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(config)), tmp_path / "pretrained", str(SAMPLE_SPM)
    )
    with pytest.raises(ValueError, match="max_seq_length=40 exceeds the model's max_position_embeddings=32"):
        AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=2, max_seq_length=40)
    lines = [line.strip() for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [f"{('dreadful', 'splendid')[i % 2]} {line}" for i, line in enumerate(lines[:48])]
    names = [("bad", "good")[i % 2] for i in range(len(texts))]
    model = AlbertClassifier.from_model_dir(
        str(tmp_path / "pretrained"), num_classes=2, labels=("bad", "good"), max_seq_length=24
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2), loss=keras.losses.SparseCategoricalCrossentropy(True),
        metrics=["accuracy"],
    )  # fmt: skip
    history = model.fit(texts, names, batch_size=16, epochs=6, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0], history.history["loss"]
    assert model.preprocessing == Preprocessing(max_seq_length=24, text_pair=False, do_lower_case=True)
    probabilities = model.predict(texts[:5], verbose=0)
    assert probabilities.shape == (5, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)
    # The ids the model saw: the Python tokenizer's packing at 24 tokens (longer texts truncated).
    python = AlbertTokenizer(str(SAMPLE_SPM))
    rows = [python.pack(text, None, 24) for text in texts[:5]]
    ids = {name: np.array([getattr(row, name) for row in rows], np.int32) for name in ENCODER_INPUTS}
    assert max(len(python.encode(text)) for text in texts[:5]) > 22  # one is cut
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(ids)))
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    # evaluate on strings and names; a tf.data.Dataset of string batches; the .keras round trip.
    loss, accuracy = model.evaluate(texts, names, verbose=0)
    assert np.isfinite(loss) and 0 <= accuracy <= 1
    string_batches = tf.data.Dataset.from_tensor_slices(texts[:5]).batch(2)
    np.testing.assert_allclose(model.predict(string_batches, verbose=0), expected, atol=1e-5)
    model.save(tmp_path / "tuned.keras")
    again = keras.saving.load_model(tmp_path / "tuned.keras")
    assert again.preprocessing == model.preprocessing and again.spm_model == SAMPLE_SPM.read_bytes()
    np.testing.assert_allclose(again.predict(texts[:5], verbose=0), probabilities, atol=1e-6)
    # Trained on single texts: pairs are refused, naming both; unknown label names too.
    with pytest.raises(ValueError, match="trained with text_pair=False; text_pair=True contradicts it"):
        model.predict((texts[:2], texts[2:4]), verbose=0)
    with pytest.raises(ValueError, match=r"labels \['neutral'\] are not among this classifier's"):
        model.fit(texts[:2], ["good", "neutral"], verbose=0)


@pytest.mark.slow
def test_a_classifier_fit_on_pairs_keeps_them_apart_and_other_heads_refuse_text(tmp_path):
    config = tiny_config(vocab_size=8000, max_position_embeddings=32)
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(config)), tmp_path / "pretrained", str(SAMPLE_SPM)
    )
    first, second = ["a cat sat", "the mat", "on a hill"], ["a dog ran", "the rug", "in the park"]
    model = AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=1)  # regression
    model.compile(optimizer="adam", loss="mse")
    with pytest.raises(ValueError, match="max_seq_length=128 exceeds the model's max_position_embeddings=32"):
        model.fit((first, second), [0.5, 1.0, 2.0], verbose=0)  # the default length does not fit
    model = AlbertClassifier.from_model_dir(str(tmp_path / "pretrained"), num_classes=1, max_seq_length=20)
    model.compile(optimizer="adam", loss="mse")
    model.fit((first, second), [0.5, 1.0, 2.0], verbose=0)
    assert model.preprocessing.text_pair is True and model.preprocessing.max_seq_length == 20
    scores = model.predict((first, second), verbose=0)
    python = AlbertTokenizer(str(SAMPLE_SPM))
    rows = [python.pack(a, b, 20) for a, b in zip(first, second, strict=True)]
    ids = {name: np.array([getattr(row, name) for row in rows], np.int32) for name in ENCODER_INPUTS}
    assert scores.shape == (3,) and ids["input_type_ids"].max() == 1  # segment B is typed 1
    np.testing.assert_allclose(scores, keras.ops.convert_to_numpy(model(ids))[:, 0], atol=1e-5)
    span = AlbertSpanLabeler.from_model_dir(str(tmp_path / "pretrained"), max_seq_length=20)
    with pytest.raises(ValueError, match="an AlbertSpanLabeler's fit and evaluate take the encoder's token"):
        span.fit((first, second), [0, 1, 2], verbose=0)


@pytest.mark.slow
def test_multiple_choice_fits_and_predicts_on_passages_and_choices(tmp_path):
    config = tiny_config(vocab_size=8000, max_position_embeddings=32)
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(config)), tmp_path / "pretrained", str(SAMPLE_SPM)
    )
    model = AlbertMultipleChoice.from_model_dir(
        str(tmp_path / "pretrained"), num_choices=3, max_seq_length=24
    )
    passages = ["the cat sat on the mat near the door", "a dog ran in the park", "rain fell all day long"]
    choices = [["where? on the mat", "where? in the sea", "where? up a tree"]] * 3
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit((passages, choices), [0, 1, 2], batch_size=2, verbose=0)
    assert model.preprocessing == Preprocessing(max_seq_length=24, text_pair=True, do_lower_case=True)
    probabilities = model.predict((passages, choices), verbose=0)
    assert probabilities.shape == (3, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-6)
    # The ids the model saw: run_race's packing of each choice after its passage, at 24 tokens.
    ids = batches.encode_choices(
        InGraphTokenizer(str(SAMPLE_SPM)), 24, tf.constant(passages), tf.constant(choices), 3
    )
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(model(ids)))
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    with pytest.raises(ValueError, match="choices must give 3 strings for each of the 3 passages"):
        model.predict((passages, [row[:2] for row in choices]), verbose=0)


def test_a_span_model_predicts_answers_on_raw_questions_and_contexts(tmp_path):
    """(questions, contexts) in, answers out: what run_squad's Python pipeline decodes (squad_features →
    the model → answer_texts) at the model's length and span settings, contexts of several windows run a
    few windows per call; the settings survive the .keras round trip."""
    from albert_tf.finetuning import squad

    config = tiny_config(vocab_size=8000, max_position_embeddings=40, initializer_range=0.2)
    model_dir.save_model_dir(
        AlbertPretrainer(AlbertEncoder(config)), tmp_path / "pretrained", str(SAMPLE_SPM)
    )
    settings = {"doc_stride": 7, "max_query_length": 6, "n_best_size": 5, "max_answer_length": 4}
    model = AlbertSpanLabeler.from_model_dir(
        str(tmp_path / "pretrained"), answerability=True, max_seq_length=40, span_settings=settings
    )
    lines = [line.strip() for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    contexts = [" ".join(lines[i : i + 3]) for i in range(0, 24, 3)] + ["one"]
    questions = [lines[30 + i] for i in range(len(contexts))]
    examples = [
        squad.SquadExample(str(i), q, c, (), None)
        for i, (q, c) in enumerate(zip(questions, contexts, strict=True))
    ]
    features = squad.squad_features(
        examples, AlbertTokenizer(str(SAMPLE_SPM)), seq_length=40, doc_stride=7, max_query_length=6
    )
    assert np.bincount(features.example_index).max() > 3  # long contexts span several windows
    outputs = {k: keras.ops.convert_to_numpy(v) for k, v in model(features.inputs).items()}
    # A threshold halfway between two questions' answerable logits: some are answered, some not.
    logits = sorted(
        outputs["answerable_logits"][features.example_index == i].max() for i in range(len(examples))
    )
    threshold = float(logits[len(logits) // 2 - 1] + logits[len(logits) // 2]) / 2
    model.span_settings = {**settings, "null_score_threshold": threshold}
    expected, no_answer = squad.answer_texts(
        examples, features, outputs, n_best_size=5, max_answer_length=4, null_score_threshold=threshold
    )
    got = model.predict((questions, contexts), batch_size=3)
    assert list(got["answer_text"]) == [expected[e.qas_id] for e in examples]
    assert 0 < sum(text != "" for text in got["answer_text"]) < len(examples)  # answered and not
    for context, text, start, end in zip(
        contexts, got["answer_text"], got["answer_start"], got["answer_end"], strict=True
    ):
        assert context[start:end] == text if text else start == end == -1
    np.testing.assert_allclose(
        got["no_answer_probability"], [no_answer[e.qas_id] for e in examples], atol=1e-6
    )
    model.save(tmp_path / "span.keras")
    again = keras.saving.load_model(tmp_path / "span.keras")
    assert again.span_settings == model.span_settings
    assert list(again.predict((questions, contexts))["answer_text"]) == list(got["answer_text"])
    with pytest.raises(ValueError, match="2 questions and 1 contexts"):
        model.predict((questions[:2], contexts[:1]))
    # Continued from its directory with a setting given: that one replaced, the others kept.
    model_dir.copy_config_and_spm(str(tmp_path / "pretrained"), tmp_path / "tuned")
    model_dir.save_task_model(model, tmp_path / "tuned")
    continued = AlbertSpanLabeler.from_model_dir(str(tmp_path / "tuned"), span_settings={"n_best_size": 7})
    assert continued.span_settings == {**model.span_settings, "n_best_size": 7}
