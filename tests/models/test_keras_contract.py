"""The Keras contract: configs round-trip, .keras files reload, fit/XLA/mixed precision work."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertEncoder, AlbertPretrainer
from tests.helpers import encoder_inputs, random_features, tiny_config


def pretrainer_for(**changes):
    return AlbertPretrainer(AlbertEncoder(tiny_config(**changes)))


def test_get_config_round_trip():
    pretrainer = pretrainer_for(sharing="attention", inner_group_num=2)
    clone = AlbertPretrainer.from_config(pretrainer.get_config())
    assert clone.get_config() == pretrainer.get_config()
    assert clone.encoder.config == pretrainer.encoder.config
    clone.set_weights(pretrainer.get_weights())
    features = random_features(pretrainer.encoder.config)
    np.testing.assert_array_equal(clone(features)["mlm_logits"], pretrainer(features)["mlm_logits"])


@pytest.mark.parametrize(
    "changes", [dict(), dict(sharing="ffn"), dict(num_hidden_groups=3, inner_group_num=2)]
)
def test_keras_file_reload_gives_identical_outputs(tmp_path, changes):
    pretrainer = pretrainer_for(**changes)
    features = random_features(pretrainer.encoder.config)
    path = str(tmp_path / "pretrainer.keras")
    pretrainer.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, AlbertPretrainer) and isinstance(restored.encoder, AlbertEncoder)
    # Tying survives the round trip: the head still scores against the encoder's own table.
    assert restored.masked_lm.token_embedding is restored.encoder.embeddings.word_embeddings
    for name in ("mlm_logits", "sop_logits"):
        np.testing.assert_array_equal(restored(features)[name], pretrainer(features)[name])

    encoder_path = str(tmp_path / "encoder.keras")
    pretrainer.encoder.save(encoder_path)
    encoder = keras.saving.load_model(encoder_path)
    np.testing.assert_array_equal(
        encoder(encoder_inputs(features))["pooled_output"],
        pretrainer.encoder(encoder_inputs(features))["pooled_output"],
    )


def pretraining_dataset(config, examples=16, seed=3):
    features = random_features(config, batch_size=examples, seed=seed)
    # A learnable task: predict the (unmasked) token at each position; SOP label = first token's parity.
    labels = {
        "mlm_logits": np.take_along_axis(features["input_word_ids"], features["masked_lm_positions"], axis=1),
        "sop_logits": features["input_word_ids"][:, 0] % 2,
    }
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)


def compile_for_fit(model, **kwargs):
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss={
            "mlm_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "sop_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        },
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_lowers_the_loss(jit_compile):
    pretrainer = pretrainer_for(num_hidden_layers=2)
    compile_for_fit(pretrainer, jit_compile=jit_compile)
    history = pretrainer.fit(pretraining_dataset(pretrainer.encoder.config), epochs=10, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0]


def test_xla_predictions_equal_eager():
    pretrainer = pretrainer_for(inner_group_num=2)
    features = random_features(pretrainer.encoder.config)
    compiled = tf.function(pretrainer, jit_compile=True)(features)
    np.testing.assert_allclose(compiled["mlm_logits"], pretrainer(features)["mlm_logits"], atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("policy, tolerance", [("mixed_bfloat16", 0.05), ("mixed_float16", 0.01)])
def test_mixed_precision(policy, tolerance):
    reference = pretrainer_for()
    features = random_features(reference.encoder.config)
    expected = reference(features)

    keras.config.set_dtype_policy(policy)
    pretrainer = pretrainer_for()
    pretrainer.set_weights(reference.get_weights())
    half = policy.removeprefix("mixed_")
    encoded = pretrainer.encoder(encoder_inputs(features))
    assert encoded["sequence_output"].dtype == half
    out = pretrainer(features)
    assert out["mlm_logits"].dtype == "float32" and out["sop_logits"].dtype == "float32"
    # Variables (LayerNorm included) stay float32; LayerNorm and softmax compute in float32.
    assert {w.dtype for w in pretrainer.weights} == {"float32"}
    # bfloat16 keeps 8 significant bits, float16 11: the logits differ from float32's by 1.4% and 0.25% of
    # their largest magnitude here, and the bounds are about 4x that; zero, negated or reordered logits are
    # off by 100% of it or more.
    scale = np.abs(expected["mlm_logits"]).max()
    assert np.abs(out["mlm_logits"] - expected["mlm_logits"]).max() <= tolerance * scale

    compile_for_fit(pretrainer, jit_compile=True)
    history = pretrainer.fit(pretraining_dataset(pretrainer.encoder.config), epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
