"""The memory estimate's per-layer counts are those of the traced training step; its arithmetic by hand."""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models import AlbertEncoder, AlbertPretrainer, memory_estimate, parameter_counts
from albert_tf.pretraining import losses
from tests.helpers import random_features, tiny_config

# Distinct sizes, so that a tensor's shape names its class: B 3, T 11, H 14, I 19, N 2 (head size 7).
B, T = 3, 11
SHAPE_CLASSES = {
    **dict.fromkeys([(B, T, 14), (B * T, 14), (B, 2, T, 7), (B, 2, 7, T), (B, T, 2, 7)], "BTH"),
    (B * T, 19): "BTI",
    (B, 2, T, T): "BNTT",
}
ALIASES = ("Reshape", "Identity", "IdentityN")  # share their input's buffer
WEIGHT_MATRICES = 4 * 14 * 14 + 2 * 14 * 19  # elements of a block's query, key, value, output and FFN kernels


def _kept_bytes(layers, remat):
    """{shape class: bytes per element summed} of the distinct buffers the backward pass of a tiny
    pretrainer's step reads from its forward pass; "W": bytes of the weights it reads cast."""
    config = tiny_config(num_hidden_layers=layers, max_position_embeddings=16)
    model = AlbertPretrainer(AlbertEncoder(config, remat=remat))
    batch = random_features(config, batch_size=B, length=T, padded=False)
    batch["masked_lm_ids"] = batch["masked_lm_positions"] + 5
    batch["masked_lm_weights"] = np.ones(batch["masked_lm_positions"].shape, np.float32)
    batch["sentence_order_label"] = np.zeros((B,), np.int32)
    inputs = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
    forward = set()

    @tf.function
    def step(batch):
        with tf.GradientTape() as tape:
            sums = losses.pretraining_sums(batch, model({k: batch[k] for k in inputs}, training=True))
            loss = losses.pretraining_loss(sums, sums[1], B)
        forward.update(op.name for op in tf.compat.v1.get_default_graph().get_operations())
        return tape.gradient(loss, model.trainable_variables)

    specs = {key: tf.TensorSpec(value.shape, value.dtype) for key, value in batch.items()}
    graph = step.get_concrete_function(specs).graph
    kept = {}
    for op in graph.get_operations():
        if op.name in forward:
            continue
        for tensor in op.inputs:
            if tensor.op.name in forward and tensor.op.type not in ("Const", "ReadVariableOp", "Placeholder"):
                while tensor.op.type in ALIASES:
                    tensor = tensor.op.inputs[tensor.value_index if tensor.op.type == "IdentityN" else 0]
                kept[tensor.name] = tensor
    counts = collections.Counter()
    for tensor in kept.values():
        name = SHAPE_CLASSES.get(tuple(tensor.shape.as_list()))
        if name:
            counts[name] += tensor.dtype.size
        elif tensor.op.type == "Cast" and tensor.op.inputs[0].op.type == "ReadVariableOp":  # a weight, cast
            counts["W"] += tensor.dtype.size * tensor.shape.num_elements()
    return counts


@pytest.mark.parametrize(
    "policy, remat, table",
    [
        ("float32", False, memory_estimate.KEPT_BYTES_PER_LAYER["float32"]),
        ("mixed_bfloat16", False, memory_estimate.KEPT_BYTES_PER_LAYER["mixed"]),
        ("float32", True, memory_estimate.REMAT_BYTES_PER_LAYER["float32"]),
        ("mixed_bfloat16", True, memory_estimate.REMAT_BYTES_PER_LAYER["mixed"]),
    ],
)
def test_what_a_layer_keeps_is_counted_from_the_traced_training_step(policy, remat, table):
    keras.config.set_dtype_policy(policy)
    one, two = _kept_bytes(1, remat), _kept_bytes(2, remat)
    per_layer = {name: two[name] - one[name] for name in ("BTH", "BTI", "BNTT", "W")}
    per_layer["W"] /= WEIGHT_MATRICES  # bytes per element of the block's weight matrices, as the table has it
    assert per_layer == {name: table.get(name, 0) for name in per_layer}


def test_the_estimate_adds_up_by_hand():
    config = tiny_config(num_hidden_layers=4)  # all shared: each sub-layer called 4 times
    counts = parameter_counts(AlbertPretrainer(AlbertEncoder(config)))
    settings = memory_estimate.MemorySettings(batch_size=3, max_seq_length=11, max_predictions_per_seq=2)
    e = memory_estimate.estimate(config, counts, settings)
    bth, bti, bntt = 3 * 11 * 14, 3 * 11 * 19, 3 * 2 * 11 * 11
    attention, feed_forward = 4 * (14 * 14 + 14) + 2 * 14, 2 * 14 * 19 + 19 + 14 + 2 * 14
    assert e["parameters"] == 4 * counts["total"] and e["optimizer_state"] == 8 * counts["total"]
    assert e["gradients"] == 4 * counts["total"]
    kept = 4 * (40 * bth + 20 * bti + 4 * bntt)
    in_flight = 4 * (bntt + 2 * bti + 2 * bth)
    heads, embeddings = 3 * 4 * 3 * 2 * 97, 2 * 4 * bth
    assert e["activations"] == kept + in_flight + heads + embeddings
    remat = memory_estimate.estimate(config, counts, memory_estimate.MemorySettings(3, 11, 2, remat=True))
    assert remat["activations"] == 4 * 4 * bth + kept // 4 + in_flight + heads + embeddings
    # Each of the 4 calls of the shared sub-layers returns its own gradient of their weights.
    assert remat["gradients"] == 4 * counts["total"] + 4 * 3 * (attention + feed_forward)
    assert e["serving_peak"] == 4 * counts["encoder"] + 8 * bntt + 4 * (2 * bti + 4 * bth)
    # Mixed bfloat16: float32 weights, slots and gradients; 2-byte activations where the table says so, and
    # each call's six weight matrices cast to bfloat16.
    settings = memory_estimate.MemorySettings(3, 11, 2, precision="bfloat16")
    mixed = memory_estimate.estimate(config, counts, settings)
    kept = 4 * ((6 * 4 + 4 * 2) * bth + 5 * 2 * bti + 6 * bntt + 2 * WEIGHT_MATRICES)
    in_flight, embeddings = 4 * bntt + 2 * (2 * bti + 2 * bth), 2 * 2 * bth
    assert mixed["activations"] == kept + in_flight + heads + embeddings
