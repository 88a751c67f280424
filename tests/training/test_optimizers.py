"""LAMB and AdamWeightDecay against a NumPy transcription of the original update (lamb_optimizer.py)."""

import re

import keras
import numpy as np
import pytest

from albert_tf.checkpoints.tf1_variables import tf1_variable_map
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from albert_tf.training.optimizers import AdamWeightDecay, Lamb, create_optimizer
from albert_tf.training.schedules import WarmupPolynomialDecay
from tests.helpers import tiny_config

B1, B2, EPS, WD = 0.9, 0.999, 1e-6, 0.01


def numpy_step(weights, grads, state, lr, *, lamb, excluded, clip=1.0):
    """One original update of every variable (float64): clip globally, Adam moments, decay, trust ratio."""
    norm = np.sqrt(sum(np.sum(g**2) for g in grads))
    grads = [g * clip / max(norm, clip) for g in grads]
    out = []
    for i, (w, g) in enumerate(zip(weights, grads, strict=True)):
        m, v = state[i]
        m = B1 * m + (1 - B1) * g
        v = B2 * v + (1 - B2) * g * g
        state[i] = (m, v)
        update = m / (np.sqrt(v) + EPS)
        if not excluded[i]:
            update = update + WD * w
        ratio = 1.0
        if lamb and not excluded[i]:
            w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        out.append(w - lr * ratio * update)
    return out


def small_model():
    """Variables: dense/kernel (decayed), dense/bias and layer_normalization/{gamma,beta} (excluded)."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5), keras.layers.LayerNormalization()])
    rng = np.random.default_rng(7)
    for variable in model.trainable_variables:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


@pytest.mark.parametrize("cls", [Lamb, AdamWeightDecay])
def test_matches_numpy_reference_step_by_step(cls):
    model = small_model()
    variables = model.trainable_variables
    excluded = [("bias" in v.path) or ("layer_norm" in v.path) for v in variables]
    assert excluded == [False, True, True, True], [v.path for v in variables]
    schedule = WarmupPolynomialDecay(0.05, num_train_steps=10, num_warmup_steps=3)
    optimizer = cls(learning_rate=schedule)
    weights = [np.asarray(v, np.float64) for v in variables]
    state = [(np.zeros_like(w), np.zeros_like(w)) for w in weights]
    rng = np.random.default_rng(0)
    for step in range(6):
        # Step 2's gradients are small, so clipping binds on some steps only.
        scale = 0.01 if step == 2 else 3.0
        grads = [(rng.normal(size=w.shape) * scale).astype("float32") for w in weights]
        lr = float(schedule(step))
        weights = numpy_step(weights, grads, state, lr, lamb=cls is Lamb, excluded=excluded)
        optimizer.apply(grads, variables)
        for ours, reference in zip(variables, weights, strict=True):
            np.testing.assert_allclose(np.asarray(ours), reference, rtol=2e-6, atol=2e-7, err_msg=ours.path)
    assert int(optimizer.iterations) == 6


def test_trust_ratio_makes_lamb_differ_from_adamw():
    results = []
    for cls in (Lamb, AdamWeightDecay):
        model = small_model()
        cls(learning_rate=0.1).apply(
            [np.ones(v.shape, "float32") for v in model.trainable_variables], model.trainable_variables
        )
        results.append([np.asarray(v) for v in model.trainable_variables])
    assert np.abs(results[0][0] - results[1][0]).max() > 1e-3  # the kernel: trust ratio applies
    np.testing.assert_allclose(results[0][1], results[1][1])  # the bias: excluded, same update


# The original's exclusions (run_pretraining.py, run_classifier.py), searched in its TF1 variable names.
ORIGINAL_EXCLUSIONS = ("LayerNorm", "layer_norm", "bias")


def pretrainer_variables():
    """A real pretrainer's trainable variables (2 groups x 2 inner blocks), set to random non-zero values,
    and whether the original would exclude each, judged by its original name."""
    pretrainer = AlbertPretrainer(
        AlbertEncoder(tiny_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2))
    )
    original_names = {id(variable): name for name, variable in tf1_variable_map(pretrainer).items()}
    variables = pretrainer.trainable_variables
    assert sorted(original_names) == sorted(id(variable) for variable in variables)
    rng = np.random.default_rng(5)
    for variable in variables:
        variable.assign(rng.uniform(0.5, 1.5, size=variable.shape).astype("float32"))
    excluded = [
        any(re.search(pattern, original_names[id(v)]) for pattern in ORIGINAL_EXCLUSIONS) for v in variables
    ]
    assert 0 < sum(excluded) < len(variables)
    return variables, excluded


@pytest.mark.parametrize("cls", [Lamb, AdamWeightDecay])
def test_weight_decay_spares_what_the_original_spares_in_a_real_pretrainer(cls):
    variables, excluded = pretrainer_variables()
    before = [np.asarray(v).copy() for v in variables]
    # Zero gradients keep Adam's moments at 0: the update is the weight decay alone.
    cls(learning_rate=0.1).apply([np.zeros(v.shape, "float32") for v in variables], variables)
    spared = [np.array_equal(np.asarray(v), b) for v, b in zip(variables, before, strict=True)]
    assert spared == excluded, [v.path for v, s, e in zip(variables, spared, excluded, strict=True) if s != e]


def test_trust_ratio_spares_what_the_original_spares_in_a_real_pretrainer():
    variables, excluded = pretrainer_variables()
    start = [np.asarray(v).copy() for v in variables]
    rng = np.random.default_rng(6)
    grads = [rng.normal(size=v.shape).astype("float32") for v in variables]
    updates = []
    for cls in (Lamb, AdamWeightDecay):  # no weight decay: the trust ratio is all that differs
        for variable, value in zip(variables, start, strict=True):
            variable.assign(value)
        cls(learning_rate=0.1, weight_decay_rate=0.0).apply(grads, variables)
        updates.append([np.asarray(v) - value for v, value in zip(variables, start, strict=True)])
    same = [np.allclose(a, b, rtol=1e-6, atol=0) for a, b in zip(*updates, strict=True)]
    assert same == excluded, [v.path for v, s, e in zip(variables, same, excluded, strict=True) if s != e]


def test_zero_weights_use_ratio_one():
    variable = keras.Variable(np.zeros((4,), "float32"), name="kernel")
    Lamb(learning_rate=0.5, clip_global_norm=None).apply([np.full((4,), 2.0, "float32")], [variable])
    # m = 0.2, v = 0.004: u = 0.2 / (0.0632... + 1e-6) ≈ 3.1622; w = −0.5 · u.
    expected = -0.5 * 0.2 / (np.sqrt(0.004) + 1e-6)
    np.testing.assert_allclose(np.asarray(variable), np.full((4,), expected), rtol=1e-6)


def test_schedule_warmup_and_decay_by_hand():
    schedule = WarmupPolynomialDecay(1.0, num_train_steps=10, num_warmup_steps=4, power=2.0)
    got = [float(schedule(step)) for step in (0, 2, 4, 5, 10, 12)]
    np.testing.assert_allclose(got, [0.0, 0.5, 0.36, 0.25, 0.0, 0.0], atol=1e-7)


def test_create_optimizer_rejects_unknown_name():
    with pytest.raises(ValueError, match="'sgd'"):
        create_optimizer("sgd", 0.1)


def test_serializes():
    optimizer = Lamb(learning_rate=WarmupPolynomialDecay(0.1, 100, 10), weight_decay_rate=0.02)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, Lamb) and restored.weight_decay_rate == 0.02
    assert restored._learning_rate.get_config() == optimizer._learning_rate.get_config()
