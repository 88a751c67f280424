"""The ALBERT tokenizer as TensorFlow ops: the same ids as `albert_tf.text.tokenizer.AlbertTokenizer`.

Used inside exported SavedModels and tf.data pipelines. It uses TensorFlow core ops and the
tensorflow_text ops `SentencepieceOp`, `SentencepieceTokenizeOp`, `SentencepieceStringToIdOp` and
`NormalizeUTF8`, all present in tensorflow-text 2.12 (what the stock TF Serving binary links), and pins them
to the CPU (SentencePiece has no GPU kernel). Pair packing uses a closed form instead of `RoundRobinTrimmer`,
whose op TF Serving lacks.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf import file_io
from albert_tf.text import normalization
from albert_tf.text.tokenizer import CLS, SEP, SPECIAL_IDS, UNK, load_sentencepiece

# The tokenizer's public methods (and all they call) are straight-line TensorFlow ops whose Python branches
# test Python values, so autograph's conversion would give the same graph: skipping it makes the first trace
# in a process faster.
_plain_ops = tf.autograph.experimental.do_not_convert


# Multiple choice (RACE): a choice (question and option) keeps its last this many tokens and the article is
# cut to the room left, as the original's race_utils does with max_qa_length.
CHOICE_TOKENS = 128


class InGraphTokenizer(tf.Module):
    """Strings → ragged ids, with the original ALBERT normalization and digit-comma rule.

    Args:
      model_file: a SentencePiece model with the ALBERT special pieces (see tokenizer.load_sentencepiece):
        its path, or its bytes.
      do_lower_case: lowercase after removing accents, as the Python tokenizer does.

    Create it after seeding: `tf.random.set_seed` (and `keras.utils.set_random_seed`) clears TensorFlow's
    eager kernel cache, which destroys the SentencePiece model resource tensorflow_text's kernel owns
    (tensorflow/text#570). Inside a loaded SavedModel the resource is rebuilt when the model loads.

    Characters that Unicode assigned after the version of this interpreter's `unicodedata` (14.0 for Python
    3.11) may normalize differently from the Python tokenizer: TensorFlow's ICU tables are of another version.
    """

    def __init__(self, model_file, do_lower_case=True, name=None):
        super().__init__(name=name)
        load_sentencepiece(model_file)  # Same checks and errors as the Python tokenizer.
        model = model_file if isinstance(model_file, bytes) else file_io.read_bytes(model_file)
        self.model_file = model_file if isinstance(model_file, bytes) else str(model_file)
        self.do_lower_case = do_lower_case
        self.cls_id, self.sep_id, self.unk_id = SPECIAL_IDS[CLS], SPECIAL_IDS[SEP], SPECIAL_IDS[UNK]
        with tf.device("/CPU:0"):
            self._sentencepiece = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
        self._whitespace = normalization.whitespace_class() + "+"
        self._combining = normalization.combining_class() + "+"
        self._comma_piece = "(?s).*" + normalization.digit_class() + ","

    @_plain_ops
    def normalize(self, texts):
        """tf.string [batch] (or any shape) → normalized tf.string, same shape (bad UTF-8 becomes U+FFFD)."""
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        texts = tf.strings.regex_replace(texts, self._whitespace, " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        texts = tf_text.normalize_utf8(texts, "NFKD")
        texts = tf.strings.regex_replace(texts, self._combining, "")
        if self.do_lower_case:
            # StringLower stops at a NUL byte, and SentencePiece keeps NUL as a piece: lower the parts
            # between NULs and put the NULs back (a ragged reduce_join drops a NUL separator: use suffixes).
            parts = tf.strings.split(tf.reshape(texts, [-1]), "\x00")  # [texts, (parts)]
            lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
            rows = parts.value_rowids()
            is_last = tf.range(tf.size(lowered, out_type=rows.dtype)) == tf.gather(
                parts.row_limits() - 1, rows
            )
            lowered = tf.where(is_last, lowered, lowered + "\x00")
            texts = tf.reshape(
                tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1), tf.shape(texts)
            )
        return texts

    @_plain_ops
    def tokenize_pieces(self, texts):
        """tf.string [batch] → tf.string RaggedTensor [batch, (pieces)]."""
        with tf.device("/CPU:0"):
            pieces = self._sentencepiece.tokenize(self.normalize(texts))
            return self._split_digit_commas(pieces)

    @_plain_ops
    def tokenize(self, texts):
        """tf.string [batch] → int32 RaggedTensor [batch, (ids)]."""
        with tf.device("/CPU:0"):
            pieces = self.tokenize_pieces(texts)
            return tf.cast(self._sentencepiece.string_to_id(pieces), tf.int32)

    @_plain_ops
    def detokenize(self, ids):
        """int32 RaggedTensor [batch, (ids)] → tf.string [batch], SentencePiece's decoding of the pieces."""
        with tf.device("/CPU:0"):
            return self._sentencepiece.detokenize(ids)

    def _split_digit_commas(self, pieces):
        """The digit-comma rule (see AlbertTokenizer.tokenize) on ragged pieces [batch, (pieces)].

        Written with index arithmetic on the flat values rather than ragged ops: the same pieces from a graph
        a fraction of the size, and graph size is what tracing, tf.data's start and the model server's
        optimizer spend their time on.
        """
        prefix = normalization.PIECE_PREFIX
        flat = pieces.flat_values  # [N]
        matches = tf.strings.regex_full_match(flat, self._comma_piece)  # [N]
        matched_at = tf.where(matches)[:, 0]  # [M]: the pieces to split
        matched = tf.gather(flat, matched_at)
        bare = tf.strings.regex_replace(tf.strings.regex_replace(matched, ",$", ""), prefix, "")
        parts = self._sentencepiece.tokenize(bare)  # [M, (K)]
        values, part_starts = parts.flat_values, parts.row_splits  # [V], [M+1]
        rows = parts.value_rowids()  # [V]: the matched piece each part comes from
        # A piece that did not start a word keeps not starting one: drop the re-encoding's leading "▁".
        is_first = tf.range(tf.size(values, out_type=tf.int64)) == tf.gather(part_starts, rows)
        starts_word = tf.strings.regex_full_match(matched, prefix + "(?s).*")
        fix = (
            is_first & ~tf.gather(starts_word, rows) & tf.strings.regex_full_match(values, prefix + "(?s).*")
        )
        values = tf.where(fix, tf.strings.regex_replace(values, "^" + prefix, ""), values)
        keep = tf.strings.length(values) > 0  # [V]
        kept_before = tf.concat([[0], tf.cumsum(tf.cast(keep, tf.int64))], 0)  # [V+1]: kept parts before each
        kept = tf.gather(kept_before, part_starts[1:]) - tf.gather(kept_before, part_starts[:-1])  # [M]
        # Piece i becomes one piece, or its kept parts and then ",": where each output piece comes from.
        lengths = tf.tensor_scatter_nd_update(tf.ones_like(flat, tf.int64), matched_at[:, None], kept + 1)
        starts = tf.cumsum(lengths, exclusive=True)  # [N]: piece i's first output position
        unmatched_at = tf.where(~matches)[:, 0]
        kept_at = tf.where(keep)[:, 0]
        kept_rows = tf.gather(rows, kept_at)
        rank = tf.gather(kept_before, kept_at) - tf.gather(kept_before, tf.gather(part_starts, kept_rows))
        comma_at = tf.gather(starts, matched_at) + kept
        sources = tf.concat(
            [tf.gather(flat, unmatched_at), tf.gather(values, kept_at), tf.fill(tf.shape(matched), ",")], 0
        )
        targets = tf.concat(
            [tf.gather(starts, unmatched_at), tf.gather(comma_at - kept, kept_rows) + rank, comma_at], 0
        )
        out = tf.gather(sources, tf.math.invert_permutation(targets))
        ends = tf.concat([[0], tf.cumsum(lengths)], 0)  # [N+1]
        splits = pieces.nested_row_splits  # texts of any rank: only the innermost splits change
        return tf.RaggedTensor.from_nested_row_splits(
            out, (*splits[:-1], tf.gather(ends, splits[-1])), validate=False
        )

    @_plain_ops
    def pack(self, ids_a, ids_b=None, seq_length=128, pad_to_multiple=None, keep_b_tail=None):
        """`[CLS] A [SEP] (B [SEP])` from int32 ragged ids [batch, (len)], trimmed to seq_length and padded.

        Trimming is the original's (longer segment first, ties trim B), in closed form; with keep_b_tail, the
        original RACE's: B keeps its last keep_b_tail tokens (its question and option; max_qa_length there)
        and A (the article) is cut to the room left. Each output column is read from the segment it falls
        in, by index arithmetic on the flat ids (a small graph, see _split_digit_commas).

        Args:
          pad_to_multiple: None pads every row to seq_length; an int pads only to the batch's longest packed
            row rounded up to a multiple of it (at most seq_length): the outputs of real tokens are the same,
            short batches cost less, and few distinct widths means few traced shapes.

        Returns:
          dict of int32 [batch, width]: input_word_ids, input_mask, input_type_ids.
        """
        length_a = tf.cast(ids_a.row_lengths(), tf.int32)  # [batch]
        skip_b = 0  # B's leading tokens left out
        if ids_b is None:
            new_a, new_b, specials = tf.minimum(length_a, max(seq_length - 2, 0)), 0, 2
        elif keep_b_tail is not None:
            budget = max(seq_length - 3, 0)
            length_b = tf.cast(ids_b.row_lengths(), tf.int32)
            new_b = tf.minimum(length_b, min(keep_b_tail, budget))
            new_a, specials, skip_b = tf.minimum(length_a, budget - new_b), 3, length_b - new_b
            check = assert_same_batch(ids_a.nrows(), ids_b.nrows(), "pack: text and text_b")
            with tf.control_dependencies([check]):
                new_a = tf.identity(new_a)
        else:
            budget = seq_length - 3
            length_b = tf.cast(ids_b.row_lengths(), tf.int32)
            fits = length_a + length_b <= budget
            new_a = tf.where(
                fits, length_a, tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
            )
            new_b, specials = tf.where(fits, length_b, tf.minimum(length_b, budget - new_a)), 3
            # A seq_length too short for the specials keeps no tokens (the rows are cut to seq_length below).
            new_a, new_b = tf.maximum(new_a, 0), tf.maximum(new_b, 0)
            # pack_rows would broadcast one row of B over every row of A: refuse it, as row-wise ops do.
            check = assert_same_batch(ids_a.nrows(), ids_b.nrows(), "pack: text and text_b")
            with tf.control_dependencies([check]):
                new_a = tf.identity(new_a)
        if pad_to_multiple is None:
            width = seq_length
        else:
            # The longest row, at least [CLS] [SEP] even for a batch of zero (the pooler reads position 0).
            width = tf.reduce_max(tf.concat([[2], new_a + new_b + specials], axis=0))
            width = tf.minimum((width + pad_to_multiple - 1) // pad_to_multiple * pad_to_multiple, seq_length)
        first = (ids_a.flat_values, tf.cast(ids_a.row_starts(), tf.int32), new_a)
        second = None
        if ids_b is not None:
            second = (ids_b.flat_values, tf.cast(ids_b.row_starts(), tf.int32) + skip_b, new_b)
        features, _ = pack_rows(self.cls_id, self.sep_id, width, first, second)
        return features


def pack_rows(cls_id, sep_id, width, first, second=None):
    """Rows `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` of width columns, the segments read from flat values.

    Each column is read from the segment it falls in by index arithmetic, not built with ragged concat and
    padding: the same rows from a graph a fraction of the size (see InGraphTokenizer._split_digit_commas).

    Args:
      cls_id, sep_id: the special ids.
      width: int32 scalar, at least each row's length (3 + A's + B's length; 2 + A's without B).
      first, second: segments A and B, each (values [N], starts int32 [rows], lengths int32 [rows]): row r's
        segment is values[starts[r] : starts[r] + lengths[r]]. second None: no B and no second [SEP].

    Returns:
      (dict of int32 [rows, width]: input_word_ids, input_mask, input_type_ids; int32 [rows, width]: each
      column's index into B's values, -1 where the column is not in B; None without B).
    """
    column = tf.range(width)[None, :]  # [1, width]
    values_a, starts_a, length_a = first
    length_a = length_a[:, None]  # [rows, 1]
    a_index = tf.where((column >= 1) & (column <= length_a), starts_a[:, None] + column - 1, -1)
    word_ids = tf.where(column == 0, cls_id, tf.where(column == length_a + 1, sep_id, 0))
    word_ids = gather_or(values_a, a_index, word_ids)
    b_start = end = length_a + 2  # [rows, 1]: B's first column; the row's end
    b_index = None
    if second is not None:
        values_b, starts_b, length_b = second
        end = b_start + length_b[:, None] + 1
        b_index = tf.where((column >= b_start) & (column < end - 1), starts_b[:, None] + column - b_start, -1)
        word_ids = gather_or(values_b, b_index, tf.where(column == end - 1, sep_id, word_ids))
    features = {
        "input_word_ids": word_ids,
        "input_mask": tf.cast(column < end, tf.int32),
        "input_type_ids": tf.cast((column >= b_start) & (column < end), tf.int32),
    }
    return features, b_index


def gather_or(values, index, otherwise):
    """values [N] (N may be 0) at int32 index [...] where index >= 0, else otherwise (broadcast)."""
    inside = index >= 0
    padded = tf.concat([values, tf.zeros([1], values.dtype)], axis=0)  # where the other indices read
    return tf.where(inside, tf.gather(padded, tf.where(inside, index, tf.size(values))), otherwise)


def assert_same_batch(size_a, size_b, what):
    """An op that fails (InvalidArgument, through any loader) naming both batch sizes when they differ."""
    return tf.debugging.Assert(
        tf.equal(size_a, size_b), [f"{what} have different batch sizes:", size_a, "and", size_b]
    )
