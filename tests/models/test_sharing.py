import pytest

from albert_tf.models import block_schedule
from tests.helpers import tiny_config


def test_original_groups_with_inner_blocks():
    config = tiny_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    # Layers 0, 1 -> group 0 (blocks 0, 1); layers 2, 3 -> group 1 (blocks 2, 3).
    assert block_schedule(config) == [(0, 0), (1, 1), (0, 0), (1, 1), (2, 2), (3, 3), (2, 2), (3, 3)]


def test_uneven_groups_follow_the_original_formula():
    config = tiny_config(num_hidden_layers=12, num_hidden_groups=5)
    # int(i / 12 * 5) for i = 0..11, computed by hand.
    assert [a for a, _ in block_schedule(config)] == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4]


@pytest.mark.parametrize(
    "sharing, expected",
    [
        ("all", [(0, 0), (1, 1), (0, 0), (1, 1), (0, 0), (1, 1)]),
        ("none", [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]),
        ("attention", [(0, 0), (1, 1), (0, 2), (1, 3), (0, 4), (1, 5)]),
        ("ffn", [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0), (5, 1)]),
    ],
)
def test_paper_strategies(sharing, expected):
    assert block_schedule(tiny_config(num_hidden_layers=3, inner_group_num=2, sharing=sharing)) == expected


def test_released_layout_is_one_block():
    assert set(block_schedule(tiny_config(num_hidden_layers=12))) == {(0, 0)}
