"""`Preprocessing`: how raw text becomes a task model's inputs, kept in the model (its Keras config, so in
task_model.keras) so that whatever feeds it text later (fine-tuning continued, the export) packs text as
it was trained on.

    >>> Preprocessing(max_seq_length=256, text_pair=True)      # sentence pairs, 256 tokens
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Preprocessing:
    """Args:
    max_seq_length: tokens per packed example ([CLS] and [SEP]s included); longer text is truncated
      (a span model's contexts: windowed). None until known (a model freshly put on an encoder).
    text_pair: whether an example is two texts (text, text_b) packed as segments A and B; None until
      known.
    do_lower_case: whether text is lowercased before SentencePiece (False: a cased model).
    keep_accents: whether text keeps its combining marks (True: no NFKD, no mark removal).
    """

    max_seq_length: int | None = None
    text_pair: bool | None = None
    do_lower_case: bool = True
    keep_accents: bool = False

    def __post_init__(self):
        length = self.max_seq_length
        if length is not None and (not isinstance(length, int) or isinstance(length, bool)):
            raise ValueError(f"max_seq_length must be a whole number, not {length!r}")
        if length is not None and length < 3:
            raise ValueError(f"max_seq_length={self.max_seq_length} leaves no room for text ([CLS], [SEP])")
        booleans = (self.do_lower_case, self.keep_accents)
        if self.text_pair not in (None, True, False) or any(value not in (True, False) for value in booleans):
            raise ValueError(f"text_pair, do_lower_case and keep_accents must be booleans: {self}")

    @classmethod
    def from_config(cls, config):
        """From `to_config()`'s dict, or None for None (a model saved without preprocessing)."""
        if config is None or isinstance(config, cls):
            return config
        unknown = set(config) - {field.name for field in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown preprocessing settings {sorted(unknown)} in {config}")
        return cls(**config)

    def to_config(self):
        return dataclasses.asdict(self)

    def agreeing(self, where, changeable=(), **given):
        """These settings with given's values that are not None; ValueError naming both values (and `where`,
        what holds these settings) when a given value contradicts a known one, unless its name is in
        changeable (fine-tuning further may change the length: the model takes any length up to its
        position embeddings)."""
        changes = {}
        for name, value in given.items():
            if value is None:
                continue
            known = getattr(self, name)
            if name not in changeable and known is not None and known != value:
                raise ValueError(f"{where} was trained with {name}={known}; {name}={value} contradicts it")
            changes[name] = value
        return dataclasses.replace(self, **changes)
