import numpy as np
import pytest

from albert_tf.models import (
    AlbertClassifier,
    AlbertEncoder,
    AlbertMultipleChoice,
    AlbertPretrainer,
    AlbertSpanLabeler,
    parameter_counts,
)
from tests.helpers import encoder_inputs, random_features, tiny_config

V, E, H, FFN, P, T = 97, 5, 14, 19, 16, 2
EMBEDDINGS = V * E + P * E + T * E + 2 * E + (E * H + H)
ATTENTION = 4 * (H * H + H) + 2 * H
FEED_FORWARD = H * FFN + FFN + FFN * H + H + 2 * H
POOLER = H * H + H


def test_outputs():
    config = tiny_config(num_hidden_layers=3)
    out = AlbertEncoder(config)(encoder_inputs(random_features(config)))
    assert out["sequence_output"].shape == (2, 7, H)
    assert out["pooled_output"].shape == (2, H)
    assert len(out["encoder_outputs"]) == 3
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])


def test_all_shared_weight_count_does_not_grow_with_depth():
    shallow = AlbertEncoder(tiny_config(num_hidden_layers=2)).count_params()
    deep = AlbertEncoder(tiny_config(num_hidden_layers=9)).count_params()
    assert shallow == deep == EMBEDDINGS + ATTENTION + FEED_FORWARD + POOLER


@pytest.mark.parametrize(
    "changes, attention_copies, feed_forward_copies",
    [
        (dict(sharing="all"), 1, 1),
        (dict(sharing="none"), 3, 3),
        (dict(sharing="attention"), 1, 3),
        (dict(sharing="ffn"), 3, 1),
        (dict(num_hidden_groups=3), 3, 3),
        (dict(inner_group_num=2), 2, 2),
        (dict(sharing="attention", inner_group_num=2), 2, 6),
    ],
)
def test_weight_counts_by_layout(changes, attention_copies, feed_forward_copies):
    config = tiny_config(num_hidden_layers=3, **changes)
    encoder = AlbertEncoder(config)
    assert len(encoder.attention_blocks) == attention_copies
    assert len(encoder.feed_forward_blocks) == feed_forward_copies
    expected = EMBEDDINGS + attention_copies * ATTENTION + feed_forward_copies * FEED_FORWARD + POOLER
    assert encoder.count_params() == expected
    counts = parameter_counts(AlbertPretrainer(encoder))
    assert counts["encoder"] == expected
    assert counts["embedding_projection"] == E * H + H
    assert counts["masked_lm_head"] == H * E + E + 2 * E + V
    assert counts["sentence_order_head"] == 2 * H + 2
    assert counts["total"] == expected + counts["masked_lm_head"] + counts["sentence_order_head"]


def test_shared_attention_is_one_object():
    encoder = AlbertEncoder(tiny_config(num_hidden_layers=3, sharing="attention"))
    assert len(encoder.blocks) == 3
    assert len({id(block.attention) for block in encoder.blocks}) == 1
    assert len({id(block.feed_forward) for block in encoder.blocks}) == 3


def test_layers_run_the_scheduled_blocks_in_order():
    config = tiny_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    encoder = AlbertEncoder(config)
    features = random_features(config)
    out = encoder(encoder_inputs(features))
    x = encoder.embeddings(features["input_word_ids"], features["input_type_ids"])
    bias = ((1.0 - features["input_mask"]) * -10000.0)[:, None, None, :].astype("float32")
    by_name = {block.name: block for block in encoder.blocks}
    # Hand schedule: layers 0-1 run group 0 (blocks 0 then 1), layers 2-3 run group 1 (blocks 2 then 3).
    for layer, names in enumerate([("block_0_0", "block_1_1")] * 2 + [("block_2_2", "block_3_3")] * 2):
        for name in names:
            x = by_name[name](x, bias)
        np.testing.assert_allclose(out["encoder_outputs"][layer], x, atol=1e-6)


def test_padding_does_not_change_real_positions():
    config = tiny_config(num_hidden_layers=2, inner_group_num=2)
    encoder = AlbertEncoder(config)
    features = random_features(config, batch_size=1, length=5, padded=False)
    short = encoder(encoder_inputs(features))
    padded = {name: np.pad(value, ((0, 0), (0, 4))) for name, value in encoder_inputs(features).items()}
    padded["input_word_ids"][0, 5:] = [7, 8, 9, 10]  # garbage behind the mask must not leak in
    padded["input_type_ids"][0, 5:] = 1
    long = encoder(padded)
    np.testing.assert_allclose(long["sequence_output"][:, :5], short["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_sequence_length_is_dynamic_up_to_max_positions():
    config = tiny_config()
    encoder = AlbertEncoder(config)
    for length in (3, 11, config.max_position_embeddings):
        features = random_features(config, length=length)
        assert encoder(encoder_inputs(features))["sequence_output"].shape == (2, length, H)


def test_too_long_sequences_are_refused_by_name():
    config = tiny_config()
    features = random_features(config, length=config.max_position_embeddings + 1)
    with pytest.raises(ValueError, match="sequence length 17 is longer than max_position_embeddings=16"):
        AlbertEncoder(config)(encoder_inputs(features))


def test_accepts_a_config_dict():
    encoder = AlbertEncoder(tiny_config().to_dict())
    assert encoder.config == tiny_config()


def test_e_equal_h_has_no_projection():
    encoder = AlbertEncoder(tiny_config(embedding_size=14))
    assert encoder.embeddings.projection is None


def test_every_weight_starts_from_its_own_random_draw():
    # An unseeded Keras initializer called for two weights draws the same values: a shared one started the
    # token-type table and the projection as copies of the word table, and the FFN's output kernel as its
    # input kernel reshaped; with the study's seed, pretraining then learned nothing but token frequencies.
    encoder = AlbertEncoder(tiny_config(sharing="none"))
    models = [
        AlbertPretrainer(encoder),
        AlbertClassifier(encoder, num_classes=3),
        AlbertSpanLabeler(encoder, answerability=True),
        AlbertMultipleChoice(encoder, num_choices=3),
    ]
    drawn = {}
    for model in models:
        for weight in model.weights:
            values = np.asarray(weight).ravel()
            if values.std() > 0:  # not a constant (zeros, ones) initializer
                drawn[weight.path] = tuple(values[:6])
    assert len(drawn) > 20
    first_of = {}
    for path, prefix in drawn.items():
        assert prefix not in first_of, f"{path} starts with the values of {first_of[prefix]}"
        first_of[prefix] = path
