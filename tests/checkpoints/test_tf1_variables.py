import numpy as np
import pytest

from albert_tf.checkpoints.tf1_variables import TRANSPOSED, assign_tf1_weights, tf1_variable_map
from albert_tf.models import AlbertEncoder, AlbertPretrainer
from tests.helpers import tiny_config
from tests.models.test_goldens import GOLDENS, load_golden


def pretrainer_for(**changes):
    return AlbertPretrainer(AlbertEncoder(tiny_config(**changes)))


@pytest.mark.parametrize(
    "changes",
    [
        dict(),
        dict(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
        dict(sharing="none"),
        dict(embedding_size=14),
    ],
)
def test_every_weight_has_exactly_one_name(changes):
    pretrainer = pretrainer_for(**changes)
    names = tf1_variable_map(pretrainer)
    assert len({id(v) for v in names.values()}) == len(names) == len(pretrainer.weights)
    assert ("bert/encoder/embedding_hidden_mapping_in/kernel" in names) == (
        pretrainer.encoder.config.embedding_size != 14
    )


def test_group_names_follow_the_schedule():
    # 2 groups of 3 inner layers: a name with the group and inner indices swapped would name group 2.
    names = tf1_variable_map(pretrainer_for(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=3))
    groups = {name.split("/")[3] + "/" + name.split("/")[4] for name in names if "/transformer/" in name}
    assert groups == {f"group_{g}/inner_group_{k}" for g in (0, 1) for k in (0, 1, 2)}


def test_partial_sharing_has_no_original_names():
    with pytest.raises(ValueError, match="sharing='attention' has no counterpart"):
        tf1_variable_map(pretrainer_for(sharing="attention"))


def test_assign_reports_missing_names_and_shape_mismatches():
    pretrainer = pretrainer_for()
    arrays = {name: np.asarray(v) for name, v in tf1_variable_map(pretrainer).items()}
    arrays["cls/seq_relationship/output_weights"] = arrays["cls/seq_relationship/output_weights"].T  # [2, H]
    before = [w.numpy().copy() for w in pretrainer.weights]

    broken = dict(arrays)
    del broken["bert/pooler/dense/bias"], broken["cls/predictions/output_bias"]
    with pytest.raises(
        ValueError, match="missing variables: bert/pooler/dense/bias, cls/predictions/output_bias"
    ):
        assign_tf1_weights(pretrainer, broken)

    broken = dict(arrays, **{"bert/embeddings/word_embeddings": np.zeros((98, 5), "float32")})
    with pytest.raises(
        ValueError,
        match=r"bert/embeddings/word_embeddings: the checkpoint has shape \[98, 5\], "
        r"the model expects \[97, 5\]",
    ):
        assign_tf1_weights(pretrainer, broken)
    for weight, value in zip(pretrainer.weights, before, strict=True):  # nothing was assigned
        np.testing.assert_array_equal(weight.numpy(), value)

    arrays = {name: value + 1.0 for name, value in arrays.items()}
    assign_tf1_weights(pretrainer, arrays)
    for weight, value in zip(pretrainer.weights, before, strict=True):
        np.testing.assert_allclose(weight.numpy(), value + 1.0)


@pytest.mark.parametrize("name", GOLDENS)
def test_the_names_are_those_of_the_original_checkpoints(name):
    """The goldens hold their weights under the original TF1 names (as Google's releases store them):
    the pretrainer has exactly those, the encoder those under `bert/`, each of the golden's shape
    (transposed where the original stores [out, in])."""
    config, _, weights, _ = load_golden(name)
    pretrainer = AlbertPretrainer(AlbertEncoder(config))
    names = tf1_variable_map(pretrainer)
    assert set(names) == set(weights)
    for tf1, variable in names.items():
        shape = tuple(variable.shape)
        assert (shape[::-1] if tf1 in TRANSPOSED else shape) == weights[tf1].shape, tf1
    encoder_names = tf1_variable_map(pretrainer.encoder)
    assert set(encoder_names) == {tf1 for tf1 in weights if tf1.startswith("bert/")}


def test_models_of_other_kinds_and_partial_sharing_are_named_in_the_errors():
    with pytest.raises(TypeError) as error:
        tf1_variable_map(object())
    assert str(error.value) == "expected an AlbertEncoder or AlbertPretrainer, got object"
    with pytest.raises(ValueError) as error:
        tf1_variable_map(AlbertEncoder(tiny_config(sharing="ffn")))
    assert str(error.value) == (
        "sharing='ffn' has no counterpart in the original checkpoint layout, which shares whole blocks only"
    )
