"""Rematerialization (`AlbertEncoder(remat=True)`, `encoder.remat`): layers recomputed, the same updates."""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.models import AlbertClassifier, AlbertEncoder
from tests.helpers import encoder_inputs, random_features, tiny_config

DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def _classifier(remat):
    keras.utils.set_random_seed(5)
    model = AlbertClassifier(AlbertEncoder(tiny_config(**DROPOUT)), num_classes=3, dropout_rate=0.1)
    model.encoder.remat = remat
    return model


def _fitted_weights(remat):
    model = _classifier(remat)
    features = encoder_inputs(random_features(model.encoder.config, batch_size=12, length=9, seed=3))
    labels = np.arange(12) % 3
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(True))
    model.fit(features, labels, batch_size=4, epochs=1, shuffle=False, verbose=0)  # 3 updates
    return [weight.numpy() for weight in model.weights]


def test_a_remat_fit_updates_the_weights_as_one_without_it_with_dropout_on():
    # Dropout draws the same masks when a layer is recomputed, so the gradients are the same up to float32
    # rounding; other masks in the backward pass would move some weights by ~1e-3 here.
    plain, remat = _fitted_weights(False), _fitted_weights(True)
    start = [weight.numpy() for weight in _classifier(False).weights]
    assert max(np.abs(a - b).max() for a, b in zip(plain, start, strict=True)) > 1e-2  # the fit moved them
    for a, b in zip(plain, remat, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def _softmaxes_in_the_gradient_graph(model):
    features = encoder_inputs(random_features(model.encoder.config))

    @tf.function
    def gradients():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(features, training=True))
        return tape.gradient(loss, model.trainable_variables)

    graph = gradients.get_concrete_function().graph.as_graph_def()
    nodes = [*graph.node, *(node for function in graph.library.function for node in function.node_def)]
    return sum(node.op == "Softmax" for node in nodes)


def test_remat_runs_each_layer_again_in_the_backward_pass():
    layers = tiny_config().num_hidden_layers
    assert _softmaxes_in_the_gradient_graph(_classifier(False)) == layers
    assert _softmaxes_in_the_gradient_graph(_classifier(True)) == 2 * layers
