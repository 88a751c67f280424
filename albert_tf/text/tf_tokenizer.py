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


class InGraphTokenizer(tf.Module):
    """Strings → ragged ids, with the original ALBERT normalization and digit-comma rule.

    Args:
      model_file: a SentencePiece model with the ALBERT special pieces (see tokenizer.load_sentencepiece).
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
        model = file_io.read_bytes(model_file)
        self.model_file = str(model_file)
        self.do_lower_case = do_lower_case
        self.cls_id, self.sep_id, self.unk_id = SPECIAL_IDS[CLS], SPECIAL_IDS[SEP], SPECIAL_IDS[UNK]
        with tf.device("/CPU:0"):
            self._sentencepiece = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
        self._whitespace = normalization.whitespace_class() + "+"
        self._combining = normalization.combining_class() + "+"
        self._comma_piece = "(?s).*" + normalization.digit_class() + ","

    def normalize(self, texts):
        """tf.string [batch] → normalized tf.string [batch] (invalid UTF-8 becomes U+FFFD)."""
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        texts = tf.strings.regex_replace(texts, self._whitespace, " ")
        texts = tf.strings.regex_replace(texts, "^ | $", "")
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        texts = tf_text.normalize_utf8(texts, "NFKD")
        texts = tf.strings.regex_replace(texts, self._combining, "")
        if self.do_lower_case:
            # StringLower stops at a NUL byte, and SentencePiece keeps NUL as a piece: lower the parts
            # between NULs and put the NULs back (a ragged reduce_join drops a NUL separator: use suffixes).
            parts = tf.strings.split(texts, "\x00")
            lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
            rows = parts.value_rowids()
            is_last = tf.range(tf.size(lowered, out_type=rows.dtype)) == tf.gather(
                parts.row_limits() - 1, rows
            )
            lowered = tf.where(is_last, lowered, lowered + "\x00")
            texts = tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1)
        return texts

    def tokenize_pieces(self, texts):
        """tf.string [batch] → tf.string RaggedTensor [batch, (pieces)]."""
        with tf.device("/CPU:0"):
            pieces = self._sentencepiece.tokenize(self.normalize(texts))
            return self._split_digit_commas(pieces)

    def tokenize(self, texts):
        """tf.string [batch] → int32 RaggedTensor [batch, (ids)]."""
        with tf.device("/CPU:0"):
            pieces = self.tokenize_pieces(texts)
            return tf.cast(self._sentencepiece.string_to_id(pieces), tf.int32)

    def detokenize(self, ids):
        """int32 RaggedTensor [batch, (ids)] → tf.string [batch], SentencePiece's decoding of the pieces."""
        with tf.device("/CPU:0"):
            return self._sentencepiece.detokenize(ids)

    def _split_digit_commas(self, pieces):
        """The digit-comma rule (see AlbertTokenizer.tokenize) on ragged pieces [batch, (pieces)]."""
        prefix = normalization.PIECE_PREFIX
        flat = pieces.flat_values  # [N]
        matches = tf.strings.regex_full_match(flat, self._comma_piece)  # [N]
        matched = tf.boolean_mask(flat, matches)  # [M]
        bare = tf.strings.regex_replace(tf.strings.regex_replace(matched, ",$", ""), prefix, "")
        parts = self._sentencepiece.tokenize(bare)  # [M, (K)]
        # A piece that did not start a word keeps not starting one: drop the re-encoding's leading "▁".
        values, rows = parts.flat_values, parts.value_rowids()
        is_first = tf.range(tf.size(values, out_type=rows.dtype)) == tf.gather(parts.row_starts(), rows)
        starts_word = tf.strings.regex_full_match(matched, prefix + "(?s).*")
        fix = (
            is_first & ~tf.gather(starts_word, rows) & tf.strings.regex_full_match(values, prefix + "(?s).*")
        )
        values = tf.where(fix, tf.strings.regex_replace(values, "^" + prefix, ""), values)
        keep = tf.strings.length(values) > 0
        parts = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(values, keep),
            tf.boolean_mask(rows, keep),
            nrows=tf.size(matched, out_type=rows.dtype),
        )
        commas = tf.RaggedTensor.from_tensor(tf.fill([tf.size(matched), 1], ","))
        parts = tf.concat([parts, tf.cast(commas, parts.dtype)], axis=1)
        # Row i of the result: [piece i] unless it matched, then its replacement parts.
        count = tf.size(flat, out_type=tf.int64)
        singles = tf.RaggedTensor.from_row_lengths(flat, tf.ones([count], tf.int64))
        rows_out = tf.where(
            matches, count + tf.cumsum(tf.cast(matches, tf.int64)) - 1, tf.range(count, dtype=tf.int64)
        )
        replaced = tf.gather(tf.concat([singles, parts.with_row_splits_dtype(tf.int64)], axis=0), rows_out)
        return pieces.with_flat_values(replaced).merge_dims(-2, -1)

    def pack(self, ids_a, ids_b=None, seq_length=128, pad_to_multiple=None):
        """`[CLS] A [SEP] (B [SEP])` from int32 ragged ids [batch, (len)], trimmed to seq_length and padded.

        Trimming is the original's (longer segment first, ties trim B), in closed form.

        Args:
          pad_to_multiple: None pads every row to seq_length; an int pads only to the batch's longest packed
            row rounded up to a multiple of it (at most seq_length): the outputs of real tokens are the same,
            short batches cost less, and few distinct widths means few traced shapes.

        Returns:
          dict of int32 [batch, width]: input_word_ids, input_mask, input_type_ids.
        """
        length_a = tf.cast(ids_a.row_lengths(), tf.int32)
        cls, sep = self._column(self.cls_id, length_a), self._column(self.sep_id, length_a)
        if ids_b is None:
            first, second = [cls, _take(ids_a, tf.minimum(length_a, seq_length - 2)), sep], []
        else:
            budget = seq_length - 3
            length_b = tf.cast(ids_b.row_lengths(), tf.int32)
            fits = length_a + length_b <= budget
            new_a = tf.where(
                fits, length_a, tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
            )
            new_b = tf.where(fits, length_b, tf.minimum(length_b, budget - new_a))
            first, second = [cls, _take(ids_a, new_a), sep], [_take(ids_b, new_b), sep]
        pieces = first + second
        types = [tf.zeros_like(p) for p in first] + [tf.ones_like(p) for p in second]
        word_ids = tf.concat(pieces, axis=1)
        type_ids = tf.concat(types, axis=1)
        if pad_to_multiple is None:
            shape = [None, seq_length]
        else:
            # The longest row, at least [CLS] [SEP] even for a batch of zero (the pooler reads position 0).
            width = tf.reduce_max(tf.concat([[2], tf.cast(word_ids.row_lengths(), tf.int32)], axis=0))
            width = tf.minimum((width + pad_to_multiple - 1) // pad_to_multiple * pad_to_multiple, seq_length)
            shape = tf.stack([tf.cast(word_ids.nrows(), tf.int32), width])
        return {
            "input_word_ids": word_ids.to_tensor(0, shape=shape),
            "input_mask": tf.ones_like(word_ids).to_tensor(0, shape=shape),
            "input_type_ids": type_ids.to_tensor(0, shape=shape),
        }

    @staticmethod
    def _column(token_id, like):
        """A ragged [batch, (1)] column holding token_id."""
        return tf.RaggedTensor.from_tensor(tf.fill([tf.size(like), 1], tf.constant(token_id, tf.int32)))


def _take(ragged, lengths):
    """The first lengths[i] values of each row of ragged [batch, (len)]."""
    keep = tf.ragged.range(tf.cast(ragged.row_lengths(), tf.int32)) < tf.expand_dims(lengths, -1)
    return tf.ragged.boolean_mask(ragged, keep)
