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
