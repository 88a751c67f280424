"""The span decoder shared by run_squad and the span SavedModel: hand-computed cases."""

import numpy as np

from albert_tf.text import span_decoding


def decode(start, end, spans, max_context, window_example, num_examples, n_best=20, max_length=30, **kw):
    result = span_decoding.best_spans(
        np.asarray(start, np.float32), np.asarray(end, np.float32), np.asarray(spans)[..., 0],
        np.asarray(spans)[..., 1], np.asarray(max_context), window_example, num_examples,
        n_best_size=n_best, max_answer_length=max_length, **kw,
    )  # fmt: skip
    return {name: value.numpy().tolist() for name, value in result.items()}


SPANS = [[-1, -1], [0, 3], [4, 9], [10, 12], [13, 20], [-1, -1]]
MAX_CONTEXT = [False, True, True, False, True, False]
START = [9.0, 1.0, 6.0, 8.0, 3.0, 9.0]  # 0 and 5 are outside the context, 3 not max-context
END = [9.0, 5.0, 0.0, 1.0, 0.0, 9.0]


def test_best_span_keeps_start_before_end_and_the_length_limit():
    one = dict(spans=[SPANS], max_context=[MAX_CONTEXT], window_example=[0], num_examples=1)
    # Start 2 + end 1 (11) ends before it starts and start 3 + end 3 (9) is not max-context: 2 to 3 wins.
    best = decode([START], [END], **one)
    assert (best["score"], best["char_start"], best["char_end"]) == ([7.0], [4], [12])
    best = decode([START], [END], max_length=1, **one)  # one token: 2 to 2
    assert (best["score"], best["char_start"], best["char_end"]) == ([6.0], [4], [9])
    best = decode([START], [END], n_best=1, **one)  # the top start is outside the context: no span
    assert (best["score"], best["char_start"], best["char_end"]) == ([0.0], [-1], [-1])


def test_the_best_window_wins_and_the_first_of_equal_ones():
    # Example 0 has windows 0 and 1; window 1 holds the better span. Example 1 has windows 2 and 3 with
    # equal best scores: the first (window 2) gives the answer. Answerable logits: the highest window's.
    spans = [SPANS, [[-1, -1], [30, 33], [34, 39], [40, 42], [43, 50], [-1, -1]], SPANS,
             [[-1, -1], [60, 63], [64, 69], [70, 72], [73, 80], [-1, -1]]]  # fmt: skip
    start = [START, [0.0, 0.0, 9.0, 0.0, 0.0, 0.0], START, START]
    end = [END, [0.0, 0.0, 0.0, 0.0, 9.0, 0.0], END, END]
    best = decode(start, end, spans, [MAX_CONTEXT] * 4, [0, 0, 1, 1], 2, answerable_logits=[-1, 2, -3, -4])
    assert best["score"] == [18.0, 7.0]  # 9 + 9 in window 1; 6 + 1 in window 2
    assert (best["char_start"], best["char_end"]) == ([34, 4], [50, 12])
    assert best["answerable_logit"] == [2.0, -3.0]


def test_an_empty_batch_decodes_to_nothing():
    empty = np.zeros((0, 4))
    best = decode(empty, empty, np.zeros((0, 4, 2), int), np.zeros((0, 4), bool), np.zeros(0, np.int32), 0)
    assert best == {"score": [], "char_start": [], "char_end": []}


def test_an_answer_at_the_first_character_and_in_the_last_window():
    # Example 0: the best span is the context's first token (characters 0 to 3). Example 1 has windows 1 and
    # 2; window 2, the batch's last, holds its better span.
    start = [[0.0, 9.0, 1.0, 0.0, 0.0, 0.0], START, [0.0, 0.0, 0.0, 0.0, 8.0, 0.0]]
    end = [[0.0, 9.0, 0.0, 1.0, 0.0, 0.0], END, [0.0, 0.0, 0.0, 0.0, 8.0, 0.0]]
    best = decode(start, end, [SPANS] * 3, [MAX_CONTEXT] * 3, [0, 1, 1], 2)
    assert best["score"] == [18.0, 16.0]
    assert (best["char_start"], best["char_end"]) == ([0, 13], [3, 20])


def test_the_default_settings_are_the_originals():
    """n_best_size 20 and max_answer_length 30, as run_squad's flags: an answer of 31 tokens is too long, and
    a start ranked 21st is not considered."""
    width = 40
    offsets = np.asarray([[[2 * i, 2 * i + 1] for i in range(width)]])  # token i: characters 2i to 2i + 1

    def answer(start, end, max_context, **settings):
        best = span_decoding.best_spans(
            start, end, offsets[..., 0], offsets[..., 1], max_context, [0], 1, **settings
        )
        return int(best["char_start"][0]), int(best["char_end"][0])

    start, end = np.zeros((1, width), np.float32), np.zeros((1, width), np.float32)
    start[0, 1], end[0, 31], end[0, 30] = 10.0, 10.0, 9.0  # tokens 1 to 31: 31 tokens; 1 to 30: 30
    assert answer(start, end, [[True] * width]) == (2, 61)  # token 1 to token 30
    # The 20 highest starts (tokens 0 to 19) are not where their tokens have the most context; token 20,
    # ranked 21st, is.
    start = np.concatenate([np.arange(40, 20, -1), np.ones(20)]).astype(np.float32)[None]
    end = np.zeros((1, width), np.float32)
    end[0, 20] = 5.0
    max_context = [[i >= 20 for i in range(width)]]
    assert answer(start, end, max_context) == (-1, -1)
    assert answer(start, end, max_context, n_best_size=21) == (40, 41)


def test_inputs_of_other_numeric_types_give_float32_scores_and_int32_offsets():
    """NumPy's defaults (float64, int64) in, the documented types out (the span export's signature)."""
    spans = np.asarray([SPANS], np.int64)
    best = span_decoding.best_spans(
        np.asarray([START], np.float64), np.asarray([END], np.float64), spans[..., 0], spans[..., 1],
        np.asarray([MAX_CONTEXT]), np.asarray([0], np.int64), 1, answerable_logits=np.asarray([0.5]),
    )  # fmt: skip
    dtypes = {name: value.dtype for name, value in best.items()}
    assert dtypes == {
        "score": "float32",
        "char_start": "int32",
        "char_end": "int32",
        "answerable_logit": "float32",
    }
    assert (best["score"].numpy().tolist(), best["char_start"].numpy().tolist()) == ([7.0], [4])
