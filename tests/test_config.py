import dataclasses
import json
import os

import pytest

from albert_tf.config import IGNORED_KEYS, AlbertConfig
from tests.helpers import tiny_config

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "albert_tf", "configs")
SHIPPED = (
    "albert_base",
    "albert_large",
    "albert_xlarge",
    "albert_xxlarge",
    "bert_base",
    "bert_large",
    "albert_tiny",
)


def write_json(tmp_path, values, name="albert_config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return str(path)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load(name):
    config = AlbertConfig.from_json_file(os.path.join(CONFIGS, f"{name}.json"))
    assert config.vocab_size > 0 and config.hidden_size % config.num_attention_heads == 0


# The key sets of Google's released albert_config.json files (albert_{base,large,xlarge,xxlarge}, v1 and
# v2), with albert_base's values: every v2 file and the v1 base, large and xlarge files carry these 18
# keys; the v1 xxlarge file also carries "layers_to_keep": []. The v1 base, large and xlarge files set both
# dropouts to 0.1, the others to 0.
RELEASED_V2 = {
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}
RELEASED_V1 = {**RELEASED_V2, "attention_probs_dropout_prob": 0.1, "hidden_dropout_prob": 0.1}
RELEASED_V1_XXLARGE = {**RELEASED_V2, "layers_to_keep": []}


@pytest.mark.parametrize(
    "released", [RELEASED_V2, RELEASED_V1, RELEASED_V1_XXLARGE], ids=["v2", "v1", "v1-xxl"]
)
def test_released_configs_load_with_their_unused_keys(tmp_path, released):
    config = AlbertConfig.from_json_file(write_json(tmp_path, released))
    assert (config.embedding_size, config.hidden_size, config.num_hidden_layers) == (128, 768, 12)
    assert config.hidden_dropout_prob == released["hidden_dropout_prob"]
    assert config.sharing is None and config.head_size == 64
    assert set(config.to_dict()) == set(released) - IGNORED_KEYS


@pytest.mark.parametrize("spelling", ["GELU", "Gelu", "gelu"])
def test_hidden_act_is_read_in_any_case(spelling):
    config = tiny_config(hidden_act=spelling)
    assert config.hidden_act == "gelu"
    assert AlbertConfig.from_dict({**config.to_dict(), "hidden_act": spelling.swapcase()}) == config


def test_json_round_trip(tmp_path):
    config = AlbertConfig(vocab_size=97, hidden_size=14, num_attention_heads=2, sharing="ffn")
    path = tmp_path / "out.json"
    config.to_json_file(path)
    assert AlbertConfig.from_json_file(path) == config
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no temporary file left behind
    # A value that is falsy but set (False, not unset) comes back as itself.
    unprojected = AlbertConfig(
        vocab_size=97, hidden_size=14, num_attention_heads=2, embedding_size=14, embedding_projection=False
    )
    unprojected.to_json_file(path)
    assert AlbertConfig.from_json_file(path) == unprojected


def test_sharing_key_is_omitted_when_unset():
    assert "sharing" not in AlbertConfig(vocab_size=97, hidden_size=14, num_attention_heads=2).to_dict()


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            dict(hidden_size=770, num_attention_heads=12),
            "hidden_size=770 is not divisible by num_attention_heads=12",
        ),
        (
            dict(num_hidden_layers=3, num_hidden_groups=4),
            "num_hidden_groups=4 is larger than num_hidden_layers=3",
        ),
        (dict(hidden_act="swish"), "hidden_act='swish' is not one of"),
        (dict(sharing="layers"), "sharing='layers' is not one of"),
        (
            dict(sharing="all", num_hidden_groups=2),
            "sharing='all' replaces the group schedule, but num_hidden_groups=2",
        ),
        (dict(embedding_size=0), "embedding_size=0 must be a positive integer"),
        (dict(num_hidden_layers=2.5), "num_hidden_layers=2.5 must be a positive integer"),
        (dict(hidden_dropout_prob=1.0), "hidden_dropout_prob=1.0 must be a number in [0, 1)"),
        (
            dict(attention_probs_dropout_prob=1.0),
            "attention_probs_dropout_prob=1.0 must be a number in [0, 1)",
        ),
        (dict(initializer_range=0), "initializer_range=0 must be a positive number"),
    ],
)
def test_invalid_values_name_key_and_value(changes, message):
    values = dict(vocab_size=97, hidden_size=14, num_attention_heads=2, num_hidden_layers=4)
    with pytest.raises(ValueError) as error:
        AlbertConfig(**{**values, **changes})
    assert message in str(error.value)


def test_file_errors_name_the_file(tmp_path):
    path = write_json(tmp_path, {"vocab_size": 97, "hidden_szie": 14})
    with pytest.raises(ValueError, match=r"albert_config\.json: unknown key\(s\) 'hidden_szie'"):
        AlbertConfig.from_json_file(path)
    path = write_json(tmp_path, {"hidden_size": 14}, "no_vocab.json")
    with pytest.raises(ValueError, match=r"no_vocab\.json: required key 'vocab_size' is missing"):
        AlbertConfig.from_json_file(path)
    path = write_json(tmp_path, {"vocab_size": 97, "hidden_size": 770, "num_attention_heads": 12}, "bad.json")
    with pytest.raises(ValueError, match=r"bad\.json: hidden_size=770 is not divisible"):
        AlbertConfig.from_json_file(path)
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "vocab_size": 97,\n  "hidden_size": \n}')
    with pytest.raises(ValueError, match=r"broken\.json: line 4: not valid JSON"):
        AlbertConfig.from_json_file(broken)
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such config file"):
        AlbertConfig.from_json_file(tmp_path / "missing.json")
    listed = write_json(tmp_path, [1, 2], "list.json")
    with pytest.raises(ValueError, match=r"list\.json: expected a JSON object"):
        AlbertConfig.from_json_file(listed)


def test_embedding_projection_defaults_to_the_original_rule_and_can_be_forced():
    assert not tiny_config(embedding_size=14).uses_embedding_projection
    assert tiny_config().uses_embedding_projection
    forced = tiny_config(embedding_size=14, embedding_projection=True)
    assert forced.uses_embedding_projection
    assert AlbertConfig.from_dict(forced.to_dict()) == forced
    assert "embedding_projection" not in tiny_config().to_dict()
    with pytest.raises(ValueError, match="embedding_projection=false needs embedding_size == hidden_size"):
        tiny_config(embedding_projection=False)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(hidden_dropout_prob=False), "hidden_dropout_prob=False must be a number in [0, 1)"),
        (dict(attention_probs_dropout_prob="0.1"), "attention_probs_dropout_prob='0.1' must be a number"),
        (dict(initializer_range=True), "initializer_range=True must be a positive number"),
        (dict(initializer_range="0.02"), "initializer_range='0.02' must be a positive number"),
        (dict(embedding_projection="yes"), "embedding_projection='yes' must be true, false or null"),
        (
            dict(hidden_act="swish"),
            "hidden_act='swish' is not one of gelu, gelu_new, gelu_exact, relu, tanh, linear",
        ),
        (dict(sharing="layers"), "sharing='layers' is not one of all, attention, ffn, none (or null)"),
    ],
)
def test_values_of_the_wrong_type_are_refused_with_the_choices(changes, message):
    """A JSON boolean or string where a number belongs is a ValueError naming the key (not a TypeError from a
    comparison, nor accepted as 0 or 1); a name outside a list gives the whole list."""
    with pytest.raises(ValueError) as error:
        tiny_config(**changes)
    assert message in str(error.value)


def test_dict_errors_name_the_source_and_list_the_keys():
    with pytest.raises(ValueError) as error:
        AlbertConfig.from_dict({"vocab_size": 97, "hidden_szie": 14, "layers": 2})
    known = sorted(field.name for field in dataclasses.fields(AlbertConfig))
    assert str(error.value) == (
        f"config: unknown key(s) 'hidden_szie', 'layers'; expected some of {', '.join(known)}"
    )
    with pytest.raises(ValueError, match=r"^config: required key 'vocab_size' is missing$"):
        AlbertConfig.from_dict({"hidden_size": 14})


def test_a_file_of_another_json_type_names_the_type(tmp_path):
    with pytest.raises(ValueError, match=r"list\.json: expected a JSON object of config keys, got list$"):
        AlbertConfig.from_json_file(write_json(tmp_path, [1, 2], "list.json"))


def test_replace_applies_the_changes_and_validates_them():
    config = tiny_config()
    assert config.replace(sharing="attention", hidden_dropout_prob=0.1) == AlbertConfig(
        **{**config.to_dict(), "sharing": "attention", "hidden_dropout_prob": 0.1}
    )
    assert config.sharing is None  # a copy
    with pytest.raises(ValueError, match="hidden_size=15 is not divisible by num_attention_heads=2"):
        config.replace(hidden_size=15)


def test_the_json_file_has_the_original_layout(tmp_path):
    """One key per line, sorted, indented by two spaces, a final newline: the original BertConfig's
    `to_json_string`, so a written albert_config.json diffs cleanly against a released one."""
    config = AlbertConfig(vocab_size=97, hidden_size=14, num_attention_heads=2, intermediate_size=19)
    config.to_json_file(tmp_path / "albert_config.json")
    text = (tmp_path / "albert_config.json").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "{" and text.endswith("\n}\n")
    assert [line.split('"')[1] for line in lines[1:-1]] == sorted(config.to_dict())
    assert all(line.startswith('  "') for line in lines[1:-1])
    assert lines[1] == '  "attention_probs_dropout_prob": 0.0,'
