"""Questions and contexts → the windows `run_squad` builds, in TensorFlow ops (for the span SavedModel).

The same windows as `albert_tf.finetuning.squad.squad_features`: `[CLS] question [SEP] window [SEP]`,
the question cut to max_query_length tokens, the context split into windows of what is left of seq_length,
doc_stride tokens apart, each context token mapped to the characters of the context it stands for
(`squad.tokenize_with_spans`' rule) and marked in the window where it has the most context. Only TensorFlow
core ops and the tokenizer's.
"""

import sys

import tensorflow as tf

from albert_tf.text import span_settings
from albert_tf.text.tf_tokenizer import gather_or, pack_rows

# Characters `str.split()` splits on (str.isspace), by code point.
WHITESPACE = tuple(code for code in range(sys.maxunicode + 1) if chr(code).isspace())


def _words(contexts):
    """Valid UTF-8 tf.string [B] → the whitespace-separated words of each context, in order: (words
    tf.string [N], word_row int64 [N], first char and end char int32 [N]), chars counted in code points."""
    chars = tf.strings.unicode_decode(contexts, "UTF-8")  # [B, (C)]; contexts are valid UTF-8
    codes, rows = chars.flat_values, chars.value_rowids()
    space = tf.reduce_any(codes[:, None] == tf.constant(WHITESPACE, tf.int32)[None, :], axis=1)
    index = tf.range(tf.size(codes, out_type=rows.dtype))
    first_of_row = index == tf.gather(chars.row_starts(), rows)
    last_of_row = index == tf.gather(chars.row_limits() - 1, rows)
    after_space = tf.concat([[True], space], axis=0)[:-1]
    before_space = tf.concat([space, [True]], axis=0)[1:]
    firsts = tf.boolean_mask(index, ~space & (first_of_row | after_space))  # [N] flat char index
    lasts = tf.boolean_mask(index, ~space & (last_of_row | before_space))  # [N]
    word_row = tf.gather(rows, firsts)
    word_chars = tf.gather(codes, tf.ragged.range(firsts, lasts + 1))  # [N, (chars)]
    words = tf.strings.unicode_encode(word_chars, "UTF-8")
    offset = tf.gather(chars.row_starts(), word_row)
    return words, word_row, tf.cast(firsts - offset, tf.int32), tf.cast(lasts + 1 - offset, tf.int32)


@tf.autograph.experimental.do_not_convert  # straight-line ops (see tf_tokenizer)
def context_tokens(tokenizer, surface_lengths, contexts):
    """Valid UTF-8 tf.string [B] → (ids, char_starts, char_ends), each int32 RaggedTensor [B, (tokens)].

    Args:
      tokenizer: an InGraphTokenizer.
      surface_lengths: int32 [vocab_size] tensor, `AlbertTokenizer.surface_lengths`.
    """
    words, word_row, first, end = _words(contexts)
    ids = tokenizer.tokenize(words)  # [N, (pieces)]
    piece_word = ids.value_rowids()
    lengths = tf.gather(surface_lengths, ids.flat_values)
    count = tf.size(words)
    length_sum = tf.math.unsorted_segment_sum(lengths, piece_word, count)  # [N]
    unknown = tf.cast(ids.flat_values == tokenizer.unk_id, tf.int32)
    has_unknown = tf.math.unsorted_segment_sum(unknown, piece_word, count)
    word_length = end - first
    normalized_length = tf.strings.length(tokenizer.normalize(words), unit="UTF8_CHAR")
    fits = (has_unknown == 0) & (length_sum == word_length) & (normalized_length == word_length)
    before = tf.cumsum(lengths, exclusive=True)
    before -= tf.gather(before, tf.gather(ids.row_starts(), piece_word))  # within the word
    piece_fits = tf.gather(fits, piece_word)
    word_first = tf.gather(first, piece_word)
    starts = tf.where(piece_fits, word_first + before, word_first)
    ends = tf.where(piece_fits, word_first + before + lengths, tf.gather(end, piece_word))
    piece_row = tf.gather(word_row, piece_word)
    nrows = tf.shape(contexts, out_type=piece_row.dtype)[0]
    return tuple(
        tf.RaggedTensor.from_value_rowids(values, piece_row, nrows=nrows, validate=False)
        for values in (ids.flat_values, starts, ends)
    )


@tf.autograph.experimental.do_not_convert  # straight-line ops (see tf_tokenizer)
def windows(tokenizer, surface_lengths, questions, contexts, seq_length, doc_stride, max_query_length):
    """Questions and contexts tf.string [B] (contexts valid UTF-8) → the model's windows.

    Returns:
      dict: input_word_ids, input_mask, input_type_ids int32 [W, width] (width: the longest window);
      char_starts, char_ends int32 [W, width] (-1 outside the context); max_context bool [W, width];
      window_example int32 [W] (each example has one window or more, in order).

    Raises:
      ValueError: settings that leave a window no room for the question and the context (as run_squad).
    """
    span_settings.check_window_settings(seq_length, doc_stride, max_query_length)
    query = tokenizer.tokenize(questions)
    query_length = tf.minimum(tf.cast(query.row_lengths(), tf.int32), min(max_query_length, seq_length - 4))
    ids, starts, ends = context_tokens(tokenizer, surface_lengths, contexts)
    length = tf.cast(ids.row_lengths(), tf.int32)  # [B]
    room = seq_length - 3 - query_length  # context tokens per window
    step = tf.minimum(room, doc_stride)
    count = 1 + tf.maximum(0, (length - room + step - 1) // step)  # windows per example
    window_example = tf.repeat(tf.range(tf.size(count)), count)  # [W]
    window_start = tf.ragged.range(count).flat_values * tf.gather(step, window_example)
    window_size = tf.minimum(
        tf.gather(length, window_example) - window_start, tf.gather(room, window_example)
    )
    doc_offset = tf.gather(tf.cast(ids.row_starts(), tf.int32), window_example)
    # Each window's context tokens, flat [T]: its window and its index into the batch's context tokens.
    within = tf.ragged.range(window_size)  # [W, (size)]
    window = tf.cast(within.value_rowids(), tf.int32)  # [T]
    left = within.flat_values  # [T]: the token's position in its window (its window's tokens before it)
    token = tf.gather(doc_offset + window_start, window) + left
    # Max context: score 100 * min(tokens left, tokens right) + size (squad._max_context_windows), the
    # first window of the highest score owns a token.
    size = tf.gather(window_size, window)
    score = 100 * tf.minimum(left, size - 1 - left) + size
    tokens = tf.size(ids.flat_values)
    best = tf.gather(tf.math.unsorted_segment_max(score, token, tokens), token)
    owner = tf.math.unsorted_segment_min(
        tf.where(score == best, window, tf.size(window_example)), token, tokens
    )  # [tokens]: the window that has the most context for each token

    window_query = tf.gather(query_length, window_example)
    width = tf.reduce_max(tf.concat([[2], window_query + window_size + 3], axis=0))
    features, context_at = pack_rows(
        tokenizer.cls_id, tokenizer.sep_id, width,
        (query.flat_values, tf.gather(tf.cast(query.row_starts(), tf.int32), window_example), window_query),
        (ids.flat_values, doc_offset + window_start, window_size),
    )  # fmt: skip
    window_index = tf.range(tf.size(window_example))[:, None]  # [W, 1]
    return {
        **features,
        "char_starts": gather_or(starts.flat_values, context_at, -1),
        "char_ends": gather_or(ends.flat_values, context_at, -1),
        "max_context": gather_or(owner, context_at, -1) == window_index,
        "window_example": window_example,
    }
