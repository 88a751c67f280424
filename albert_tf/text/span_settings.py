"""How contexts are windowed and answers chosen (`SpanSettings`), and what a window needs room for, in plain
Python: `run_squad` checks its flags with them before TensorFlow starts, and a span model keeps them
(`AlbertSpanLabeler.span_settings`). Windowing: albert_tf/text/span_windows.py (in-graph) and
albert_tf/finetuning/squad.py; decoding: albert_tf/text/span_decoding.py.
"""

import dataclasses


def check_window_settings(seq_length, doc_stride, max_query_length):
    """Raises ValueError unless every window has room for a question token and a context token."""
    if seq_length - 3 - 1 < 1 or max_query_length < 1 or doc_stride < 1:
        raise ValueError(
            f"seq_length {seq_length}, max_query_length {max_query_length} and doc_stride {doc_stride} "
            "leave no room for the question and the context"
        )


def check_answer_settings(n_best_size, max_answer_length):
    """Raises ValueError naming the flag unless answers can be chosen: at least one candidate position and
    answers of at least one token."""
    for name, value in (("n_best_size", n_best_size), ("max_answer_length", max_answer_length)):
        if value < 1:
            raise ValueError(f"--{name} must be at least 1, got {value}")


@dataclasses.dataclass(frozen=True)
class SpanSettings:
    """How contexts are windowed and answers chosen; `run_squad` keeps its settings in the model
    (`AlbertSpanLabeler.span_settings`) so its `predict` on raw text and the span export answer the same.

    Args:
      max_seq_length: tokens per window.
      doc_stride: tokens between the starts of a context's windows.
      max_query_length: question tokens kept.
      n_best_size: top start and end positions considered per window.
      max_answer_length: longest answer, in tokens.
      null_score_threshold: SQuAD v2.0: no answer when the answerable logit is below it.
    """

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_threshold: float = 0.0

    def __post_init__(self):
        check_answer_settings(self.n_best_size, self.max_answer_length)

    @classmethod
    def of(cls, model, max_seq_length=None, **given):
        """A span model's settings: its `span_settings` (AlbertSpanLabeler, what run_squad used) at its
        preprocessing's length, with the values given (None: not given) replacing them; None while the
        length is not known. ValueError naming a setting that does not exist."""
        kept = {**getattr(model, "span_settings", {}), **{k: v for k, v in given.items() if v is not None}}
        names = {field.name for field in dataclasses.fields(cls)} - {"max_seq_length"}
        unknown = sorted(set(kept) - names)
        if unknown:
            raise ValueError(f"unknown span settings {unknown}; the settings are {sorted(names)}")
        length = max_seq_length or getattr(getattr(model, "preprocessing", None), "max_seq_length", None)
        return cls(max_seq_length=length, **kept) if length else None

    def decoding(self):
        """What a span model keeps (its `span_settings`): all but the length, which its preprocessing has."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "max_seq_length"}
