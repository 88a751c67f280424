"""Span logits of context windows → each question's best answer span, in TensorFlow ops.

The one decoder behind both `run_squad`'s predictions and the `span` SavedModel's answers, so a question
gets the same answer from either. It is the original ALBERT/BERT SQuAD decoding:

- in each window, the `n_best_size` highest start logits and end logits (ties: the lower position first);
- a span is valid when start and end are context tokens, start ≤ end < start + max_answer_length, and the
  start lies in the window where its token has the most context;
- its score is start logit + end logit; a question's answer is its best valid span over its windows (the
  first window, then the first start, then the first end among equal scores);
- with an answerability head (SQuAD v2.0), a question's answerable logit is the highest of its windows'.

The settings of windows and decoding: albert_tf/text/span_settings.py.
"""

import tensorflow as tf

NO_SPAN = -1  # the character offsets of a question without a valid span


def best_spans(
    start_logits, end_logits, char_starts, char_ends, max_context, window_example, num_examples,
    n_best_size=20, max_answer_length=30, answerable_logits=None,
):  # fmt: skip
    """The best valid span of each example.

    Args:
      start_logits, end_logits: float32 [windows, width].
      char_starts, char_ends: int32 [windows, width], each position's [start, end) characters in its
        example's context; negative outside the context (question, special tokens, padding).
      max_context: bool [windows, width], whether the window is where the position's token has the most
        context.
      window_example: int32 [windows], the example each window belongs to (windows in order).
      num_examples: int32 scalar; every example has at least one window.
      answerable_logits: optional float32 [windows].

    Returns:
      dict of [num_examples] tensors: `score` (float32, start + end logit; 0 without a valid span),
      `char_start`, `char_end` (int32 [start, end) characters, NO_SPAN without a valid span), and with
      answerable_logits, `answerable_logit` (float32, the highest of the example's windows).
    """
    start_logits = tf.convert_to_tensor(start_logits, tf.float32)
    end_logits = tf.convert_to_tensor(end_logits, tf.float32)
    char_starts = tf.convert_to_tensor(char_starts, tf.int32)
    char_ends = tf.convert_to_tensor(char_ends, tf.int32)
    window_example = tf.convert_to_tensor(window_example, tf.int32)
    windows = tf.shape(start_logits)[0]
    count = tf.minimum(n_best_size, tf.shape(start_logits)[1])
    top_start_logits, top_starts = tf.math.top_k(start_logits, count)  # [W, n]
    top_end_logits, top_ends = tf.math.top_k(end_logits, count)  # [W, n]
    in_context = char_starts >= 0
    start_ok = tf.gather(in_context & max_context, top_starts, batch_dims=1)  # [W, n]
    end_ok = tf.gather(in_context, top_ends, batch_dims=1)  # [W, n]
    starts, ends = top_starts[:, :, None], top_ends[:, None, :]  # [W, n, 1], [W, 1, n]
    valid = start_ok[:, :, None] & end_ok[:, None, :] & (starts <= ends) & (ends < starts + max_answer_length)
    scores = top_start_logits[:, :, None] + top_end_logits[:, None, :]  # [W, n (start), n (end)]
    scores = tf.reshape(tf.where(valid, scores, float("-inf")), [windows, -1])  # [W, n * n], start-major
    window_best = tf.reduce_max(scores, axis=1)  # [W]; -inf: no valid span
    window_pair = tf.argmax(scores, axis=1, output_type=tf.int32)  # the first best pair
    example_best = tf.math.unsorted_segment_max(window_best, window_example, num_examples)  # [B]
    # The first window reaching its example's best (windows without a valid span never do).
    reaches = (window_best == tf.gather(example_best, window_example)) & (window_best > float("-inf"))
    candidates = tf.where(reaches, tf.range(windows), windows)
    chosen = tf.math.unsorted_segment_min(candidates, window_example, num_examples)  # [B]; W: none
    found = chosen < windows
    chosen = tf.minimum(chosen, tf.maximum(windows - 1, 0))
    pair = tf.gather(window_pair, chosen)
    start = tf.gather(tf.gather(top_starts, chosen), pair // count, batch_dims=1)
    end = tf.gather(tf.gather(top_ends, chosen), pair % count, batch_dims=1)
    result = {
        "score": tf.where(found, example_best, 0.0),
        "char_start": tf.where(
            found, tf.gather(tf.gather(char_starts, chosen), start, batch_dims=1), NO_SPAN
        ),
        "char_end": tf.where(found, tf.gather(tf.gather(char_ends, chosen), end, batch_dims=1), NO_SPAN),
    }
    if answerable_logits is not None:
        answerable_logits = tf.convert_to_tensor(answerable_logits, tf.float32)
        result["answerable_logit"] = tf.math.unsorted_segment_max(
            answerable_logits, window_example, num_examples
        )
    return result
