"""`AlbertConfig`: the model hyperparameters, in the original `albert_config.json` keys.

A released `albert_config.json` (v1 or v2) loads unchanged: its keys that the original modeling code never
reads (`net_structure_type`, `layers_to_keep`, `gap_size`, `num_memory_blocks`, `down_scale_factor`) are
accepted and ignored, and `hidden_act` is read in any case, as the original's `get_activation` lowercases it.
A key no release has is refused, naming it: it is most likely a typo. Two keys are ours: `sharing`, the
paper's named cross-layer sharing strategies (Lan et al. 2020, Table 4), and `embedding_projection`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from albert_tf import file_io

# Keys of Google's released config files that the original modeling code never uses (`layers_to_keep`,
# e.g. `[]`, appears in the v1 xxlarge release).
IGNORED_KEYS = frozenset(
    {"net_structure_type", "layers_to_keep", "gap_size", "num_memory_blocks", "down_scale_factor"}
)

# The paper's sharing strategies. `None` means: follow `num_hidden_groups` / `inner_group_num`.
SHARING_STRATEGIES = ("all", "attention", "ffn", "none")

# "gelu" in ALBERT and BERT config files is the tanh approximation (the original `modeling.gelu`);
# "gelu_new" is Hugging Face's name for the same function; "gelu_exact" is the erf form.
ACTIVATIONS = ("gelu", "gelu_new", "gelu_exact", "relu", "tanh", "linear")


# Original keys holding positive integers.
POSITIVE_INT_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "inner_group_num",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Hyperparameters of an ALBERT (or BERT) encoder.

    Args:
        vocab_size: int. Rows of the word-embedding table.
        embedding_size: int, default 128. E, the width of the factorized embeddings.
        hidden_size: int, default 4096. H, the width of the transformer blocks.
        num_hidden_layers: int, default 12. Layers L; each runs `inner_group_num` blocks.
        num_hidden_groups: int, default 1. Distinct groups of weights; layer `i` uses group
            `int(i / num_hidden_layers * num_hidden_groups)` (the original schedule).
        inner_group_num: int, default 1. Distinct blocks run one after another inside each layer.
        num_attention_heads: int, default 64. Must divide `hidden_size`.
        intermediate_size: int, default 16384. Width of the feed-forward layer.
        hidden_act: str, default "gelu". One of `ACTIVATIONS` in any case (stored lowercased); "gelu"
            is the tanh approximation.
        hidden_dropout_prob: float, default 0.0. Dropout on embeddings and sub-layer outputs.
        attention_probs_dropout_prob: float, default 0.0. Dropout on attention probabilities.
        max_position_embeddings: int, default 512. Longest sequence the model accepts.
        type_vocab_size: int, default 2. Segment types.
        initializer_range: float, default 0.02. Stddev of the truncated-normal initializer.
        sharing: str or None, default None. "all", "attention" (attention shared, FFN per layer),
            "ffn" (FFN shared, attention per layer) or "none"; replaces the group schedule, so it
            requires `num_hidden_groups=1`.
        embedding_projection: bool or None, default None. Whether a dense E→H layer follows the
            embeddings; None means "when E ≠ H", the original's rule. Hugging Face models always have
            it, so converted ones set True to keep computing what their source computed.

    Example:
        >>> config = AlbertConfig.from_json_file("albert_tf/configs/albert_base.json")
        >>> config.replace(sharing="attention").hidden_size
        768
    """

    vocab_size: int
    embedding_size: int = 128
    hidden_size: int = 4096
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 64
    intermediate_size: int = 16384
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    sharing: str | None = None
    embedding_projection: bool | None = None

    def __post_init__(self):
        if isinstance(self.hidden_act, str):
            object.__setattr__(self, "hidden_act", self.hidden_act.lower())
        self._validate()

    def _validate(self):
        for key in POSITIVE_INT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}={value!r} must be a positive integer")
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{key}={value!r} must be a number in [0, 1)")
        if (
            isinstance(self.initializer_range, bool)
            or not isinstance(self.initializer_range, (int, float))
            or self.initializer_range <= 0
        ):
            raise ValueError(f"initializer_range={self.initializer_range!r} must be a positive number")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} is not divisible by "
                f"num_attention_heads={self.num_attention_heads}"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ValueError(
                f"num_hidden_groups={self.num_hidden_groups} is larger than "
                f"num_hidden_layers={self.num_hidden_layers}: some groups would never run"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act={self.hidden_act!r} is not one of {', '.join(ACTIVATIONS)}")
        if self.embedding_projection not in (None, True, False):
            raise ValueError(
                f"embedding_projection={self.embedding_projection!r} must be true, false or null"
            )
        if self.embedding_projection is False and self.embedding_size != self.hidden_size:
            raise ValueError(
                f"embedding_projection=false needs embedding_size == hidden_size, got "
                f"{self.embedding_size} and {self.hidden_size}"
            )
        if self.sharing is not None:
            if self.sharing not in SHARING_STRATEGIES:
                raise ValueError(
                    f"sharing={self.sharing!r} is not one of {', '.join(SHARING_STRATEGIES)} (or null)"
                )
            if self.num_hidden_groups != 1:
                raise ValueError(
                    f"sharing={self.sharing!r} replaces the group schedule, but "
                    f"num_hidden_groups={self.num_hidden_groups}; set num_hidden_groups to 1"
                )

    @property
    def uses_embedding_projection(self) -> bool:
        """Whether the encoder has the E→H projection (see `embedding_projection`)."""
        if self.embedding_projection is None:
            return self.embedding_size != self.hidden_size
        return self.embedding_projection

    @property
    def head_size(self) -> int:
        """Width of one attention head, `hidden_size // num_attention_heads`."""
        return self.hidden_size // self.num_attention_heads

    def replace(self, **changes: Any) -> AlbertConfig:
        """Returns a copy with `changes` applied (and validated)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The config as a JSON-ready dict; our extra keys are left out when unset, as in released files."""
        values = dataclasses.asdict(self)
        for key in ("sharing", "embedding_projection"):
            if values[key] is None:
                del values[key]
        return values

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "config") -> AlbertConfig:
        """Builds a config from a dict of original keys; `source` names it in errors."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known - IGNORED_KEYS)
        if unknown:
            raise ValueError(
                f"{source}: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        if "vocab_size" not in values:
            raise ValueError(f"{source}: required key 'vocab_size' is missing")
        try:
            return cls(**{key: value for key, value in values.items() if key in known})
        except ValueError as error:
            raise ValueError(f"{source}: {error}") from None

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> AlbertConfig:
        """Reads an `albert_config.json` (ours or a released one)."""
        path = os.fspath(path)
        if not file_io.exists(path):
            raise FileNotFoundError(f"{path}: no such config file")
        try:
            values = json.loads(file_io.read_text(path))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
        if not isinstance(values, dict):
            raise ValueError(f"{path}: expected a JSON object of config keys, got {type(values).__name__}")
        return cls.from_dict(values, source=path)

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str | os.PathLike) -> None:
        """Writes the config atomically: a temporary file in the same folder, then a rename."""
        file_io.write_atomically(path, self.to_json_string().encode("utf-8"))
