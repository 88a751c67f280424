"""Which weights run where: ALBERT's cross-layer sharing schedule, in plain Python."""

from albert_tf.config import AlbertConfig


def block_schedule(config: AlbertConfig) -> list[tuple[int, int]]:
    """The blocks an encoder runs, in order, as `(attention index, feed-forward index)` pairs.

    There are `num_hidden_layers * inner_group_num` entries: layer `i` runs `inner_group_num` blocks in
    sequence. Equal indices mean the same weights (the same layer object).

    - `sharing=None` (the original): layer `i` uses group `g = int(i / num_hidden_layers *
      num_hidden_groups)`, and its inner block `k` uses the weights `g * inner_group_num + k` for both
      sub-layers. `num_hidden_groups=1` is the released all-shared layout; `= num_hidden_layers` shares
      nothing.
    - `"all"`: every layer runs the same `inner_group_num` blocks.
    - `"none"`: every block has its own weights.
    - `"attention"`: attention shared across layers, feed-forward per layer.
    - `"ffn"`: feed-forward shared across layers, attention per layer.

    Example:
        >>> block_schedule(AlbertConfig(vocab_size=97, num_hidden_layers=4, num_hidden_groups=2,
        ...                             hidden_size=14, num_attention_heads=2))
        [(0, 0), (0, 0), (1, 1), (1, 1)]
    """
    layers, inner = config.num_hidden_layers, config.inner_group_num
    schedule = []
    for i in range(layers):
        # The original's float expression, kept as is so that uneven group sizes match its checkpoints.
        group = int(i / layers * config.num_hidden_groups)
        for k in range(inner):
            shared, own = k, i * inner + k
            if config.sharing is None:
                schedule.append((group * inner + k, group * inner + k))
            elif config.sharing == "all":
                schedule.append((shared, shared))
            elif config.sharing == "none":
                schedule.append((own, own))
            elif config.sharing == "attention":
                schedule.append((shared, own))
            else:  # "ffn"
                schedule.append((own, shared))
    return schedule
