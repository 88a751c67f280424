"""The ALBERT tokenizer as TensorFlow ops: the same ids as `albert_tf.text.tokenizer.AlbertTokenizer`.

Used inside exported SavedModels and tf.data pipelines. It uses TensorFlow core ops and the
tensorflow_text ops `SentencepieceOp`, `SentencepieceTokenizeOp`, `SentencepieceStringToIdOp` and
`NormalizeUTF8`, all present in tensorflow-text 2.12 (what the stock TF Serving binary links), and pins them
to the CPU (SentencePiece has no GPU kernel). Pair packing uses a closed form instead of `RoundRobinTrimmer`,
whose op TF Serving lacks.
"""

import copy
import functools
import re

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from albert_tf import file_io
from albert_tf.text import normalization
from albert_tf.text.tokenizer import (
    CLS,
    SEP,
    SPECIAL_IDS,
    UNK,
    comma_rewrites,
    load_sentencepiece,
    needs_comma_split,
)

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
      keep_accents: skip NFKD and the removal of combining marks, as the Python tokenizer does.

    Create it after seeding: `tf.random.set_seed` (and `keras.utils.set_random_seed`) clears TensorFlow's
    eager kernel cache, which destroys the SentencePiece model resource tensorflow_text's kernel owns
    (tensorflow/text#570). Inside a loaded SavedModel the resource is rebuilt when the model loads.

    Characters that Unicode assigned after the version of this interpreter's `unicodedata` (14.0 for Python
    3.11) may normalize differently from the Python tokenizer without keep_accents: tensorflow-text's NFKD
    knows Unicode 15 and 16 (118 such code points decompose in-graph, e.g. U+1CCED; bench/tokenizer_parity.py
    lists them). Lowercasing agrees: the capitals TensorFlow's older case tables keep are lowered as Python
    lowers them (_lower_what_tensorflow_keeps).
    """

    def __init__(self, model_file, do_lower_case=True, keep_accents=False, name=None):
        super().__init__(name=name)
        processor = load_sentencepiece(model_file)  # Same checks and errors as the Python tokenizer.
        model = model_file if isinstance(model_file, bytes) else file_io.read_bytes(model_file)
        self.model_file = model_file if isinstance(model_file, bytes) else str(model_file)
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self.cls_id, self.sep_id, self.unk_id = SPECIAL_IDS[CLS], SPECIAL_IDS[SEP], SPECIAL_IDS[UNK]
        with tf.device("/CPU:0"):
            self._sentencepiece = tf_text.SentencepieceTokenizer(model=model, out_type=tf.string)
        # Whitespace runs other than a lone " " (rarely any: one pass finds no match).
        space = normalization.whitespace_class()
        self._spaces = f"{_without_space(space)}{space}*| {space}+"
        self._combining = normalization.combining_class() + "+"
        self._comma_piece = "(?s).*" + normalization.digit_class() + ","
        # ASCII text that normalization only lowercases: words (no whitespace) between single spaces, with no
        # `` or '' (a quote run alternates ` and ', and quote runs have other characters between them).
        other = "".join(f"\\x{{{c:x}}}" for c in range(128) if not chr(c).isspace() and chr(c) not in "`'")
        quotes = "(?:`(?:'`)*'?|'(?:`')*`?)"
        word = f"(?:(?:{quotes})?[{other}]+)+(?:{quotes})?|{quotes}"
        self._ascii_clean = f"(?:{word})(?: (?:{word}))*|"
        # Pieces the digit-comma rule rewrites, by id. tokenize_pieces looks at them and at <unk>, whose text
        # (a run of characters without a piece of their own) may end in a digit and "," when the model has
        # no "," piece.
        comma_ids = [i for i in range(len(processor)) if needs_comma_split(processor.id_to_piece(i))]
        self._rewrites = np.zeros(len(processor), bool)
        self._rewrites[comma_ids] = True
        self._may_split = self._rewrites.copy()
        self._may_split[self.unk_id] = True
        self._not_from_text = np.array(
            [processor.is_control(i) or processor.is_unused(i) for i in range(len(processor))]
        )
        # tokenize's table (with a "," piece): what each id becomes, the rewritten ids for those the rule
        # rewrites, the id itself for the others (a row per id: values and splits of a ragged tensor).
        rewrites = comma_rewrites(processor)
        self._ids_split = rewrites is not None
        rows = [(rewrites or {}).get(i, [i]) for i in range(len(processor))]
        self._replacement_splits = np.cumsum([0, *map(len, rows)], dtype=np.int64)
        self._replacements = np.array([i for row in rows for i in row], np.int32)

    @_plain_ops
    def normalize(self, texts):
        """tf.string [batch] (or any shape) → normalized tf.string, same shape (bad UTF-8 becomes U+FFFD).

        Texts that normalization only lowercases (ASCII words between single spaces, no `` or '': NFKD and
        combining marks leave ASCII as it is, and ASCII lowercasing is NUL-safe) take one byte-wise op; the
        others, if any in the batch, the full path.
        """
        texts = tf.convert_to_tensor(texts, tf.string)  # a list of str, as the eager methods take
        flat = texts if texts.shape.rank == 1 else tf.reshape(texts, [-1])
        clean = tf.strings.regex_full_match(flat, self._ascii_clean)
        lowered = tf.strings.lower(flat) if self.do_lower_case else flat

        def others():
            at = tf.where(~clean)
            return tf.tensor_scatter_nd_update(lowered, at, self._normalize_any(tf.gather_nd(flat, at)))

        flat = tf.cond(tf.reduce_all(clean), lambda: lowered, others)
        return flat if texts.shape.rank == 1 else tf.reshape(flat, tf.shape(texts))

    def _normalize_any(self, texts):
        """normalize's full path, for tf.string [N] of any text."""
        texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
        texts = tf.strings.strip(tf.strings.regex_replace(texts, self._spaces, " "))  # then " " is all
        texts = tf.strings.regex_replace(texts, "``|''", '"')
        if not self.keep_accents:
            texts = tf_text.normalize_utf8(texts, "NFKD")
            texts = tf.strings.regex_replace(texts, self._combining, "")
        if self.do_lower_case:
            has_nul = tf.reduce_any(~tf.strings.regex_full_match(texts, "[^\\x00]*"))
            texts = tf.cond(
                has_nul, lambda: _lower_around_nuls(texts), lambda: tf.strings.lower(texts, encoding="utf-8")
            )
            texts = _lower_what_tensorflow_keeps(texts)
        return texts

    @_plain_ops
    def tokenize_pieces(self, texts):
        """tf.string [batch] → tf.string RaggedTensor [batch, (pieces)]."""
        with tf.device("/CPU:0"):
            pieces = self._sentencepiece.tokenize(self.normalize(texts))
            flat = pieces.flat_values
            splits = pieces.nested_row_splits  # texts of any rank: rows of splits[-1]
            may_split = tf.gather(tf.constant(self._may_split), self._sentencepiece.string_to_id(flat))
            flat, last = tf.cond(
                tf.reduce_any(may_split),
                lambda: self._split_pieces(flat, may_split, splits[-1]),
                lambda: (flat, splits[-1]),
            )
            return tf.RaggedTensor.from_nested_row_splits(flat, (*splits[:-1], last), validate=False)

    @_plain_ops
    def tokenize(self, texts):
        """tf.string [batch] → int32 RaggedTensor [batch, (ids)].

        SentencePiece gives ids, and the digit-comma rule replaces each id by the ids its piece becomes (see
        _replacements): no pieces as strings, unless the model has no "," piece.
        """
        with tf.device("/CPU:0"):
            if not self._ids_split:
                pieces = self.tokenize_pieces(texts)
                ids = self._sentencepiece.string_to_id(pieces.flat_values)
                # An unknown run that spells a control piece ("[MASK]") stays <unk>: see piece_ids.
                not_text = tf.gather(tf.constant(self._not_from_text), ids)
                return pieces.with_flat_values(tf.where(not_text, self.unk_id, ids))
            ids = self._ids_tokenizer().tokenize(self.normalize(texts))
            flat, splits = ids.flat_values, ids.nested_row_splits  # texts of any rank: rows of splits[-1]

            def split():  # each id's row of the table
                replaced_splits, replaced = tf.raw_ops.RaggedGather(
                    params_nested_splits=[tf.constant(self._replacement_splits)],
                    params_dense_values=tf.constant(self._replacements),
                    indices=flat,
                    OUTPUT_RAGGED_RANK=1,
                )
                return replaced, tf.gather(replaced_splits[0], splits[-1])

            rewrites = tf.reduce_any(tf.gather(tf.constant(self._rewrites), flat))
            flat, last = tf.cond(rewrites, split, lambda: (flat, splits[-1]))
            return tf.RaggedTensor.from_nested_row_splits(flat, (*splits[:-1], last), validate=False)

    @_plain_ops
    def detokenize(self, ids):
        """int32 RaggedTensor [batch, (ids)] → tf.string [batch], SentencePiece's decoding of the pieces."""
        with tf.device("/CPU:0"):
            return self._sentencepiece.detokenize(ids)

    def _ids_tokenizer(self):
        """The SentencePiece tokenizer with int32 ids out: a copy of the one for pieces, the same model
        resource (made per call, not an attribute, so that a SavedModel holds the tokenizer once)."""
        tokenizer = copy.copy(self._sentencepiece)
        tokenizer.out_type = tf.int32
        return tokenizer

    def _split_pieces(self, flat, may_split, row_splits):
        """The digit-comma rule (see AlbertTokenizer.tokenize) on flat pieces [N] in rows (row_splits [R+1]);
        may_split: bool [N], the pieces the rule may rewrite (by id: see _may_split).

        Returns (pieces [N'], row_splits [R+1]). Written with index arithmetic on the flat values rather
        than ragged ops: the same pieces from a graph a fraction of the size, and graph size is what
        tracing, tf.data's start and the model server's optimizer spend their time on.
        """
        prefix = normalization.PIECE_PREFIX
        candidate_at = tf.where(may_split)[:, 0]
        candidates = tf.gather(flat, candidate_at)
        picked = tf.where(tf.strings.regex_full_match(candidates, self._comma_piece))[:, 0]
        matched_at = tf.gather(candidate_at, picked)  # [M]: the pieces to split
        matched = tf.gather(candidates, picked)
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
        # Piece i becomes one piece, or its kept parts and then ",": where each output piece goes.
        lengths = tf.tensor_scatter_nd_update(tf.ones_like(flat, tf.int64), matched_at[:, None], kept + 1)
        ends = tf.concat([[0], tf.cumsum(lengths)], 0)  # [N+1]: piece i's output is ends[i]:ends[i+1]
        kept_at = tf.where(keep)[:, 0]
        kept_rows = tf.gather(rows, kept_at)
        rank = tf.gather(kept_before, kept_at) - tf.gather(kept_before, tf.gather(part_starts, kept_rows))
        comma_at = tf.gather(ends, matched_at) + kept
        # Each piece at its first output position, then a split piece's parts and comma over it.
        out = tf.scatter_nd(ends[:-1, None], flat, ends[-1:])
        out = tf.tensor_scatter_nd_update(
            out,
            tf.concat([tf.gather(comma_at - kept, kept_rows) + rank, comma_at], 0)[:, None],
            tf.concat([tf.gather(values, kept_at), tf.fill(tf.shape(matched), ",")], 0),
        )
        return out, tf.gather(ends, row_splits)

    @_plain_ops
    def pack(self, ids_a, ids_b=None, seq_length=128, pad_to_multiple=None, keep_b_tail=None):
        """`[CLS] A [SEP] (B [SEP])` from int32 ragged ids [batch, (len)], trimmed to seq_length and padded.

        Trimming is the original's (longer segment first, ties trim B), in closed form; with keep_b_tail, the
        original RACE's: B keeps its last keep_b_tail tokens (its question and option; max_qa_length there)
        and A (the article) is cut to the room left. Each output column is read from the segment it falls
        in, by index arithmetic on the flat ids (a small graph, see _split_pieces).

        Args:
          pad_to_multiple: None pads every row to seq_length; an int pads only to the batch's longest packed
            row rounded up to a multiple of it (at most seq_length): the outputs of real tokens are the same,
            short batches cost less, and few distinct widths means few traced shapes.

        Returns:
          dict of int32 [batch, width]: input_word_ids, input_mask, input_type_ids.
        """
        # Row starts and lengths as int32 [batch, 1], as pack_rows works on them.
        splits_a = tf.cast(ids_a.row_splits, tf.int32)
        starts_a, length_a = splits_a[:-1, None], splits_a[1:, None] - splits_a[:-1, None]
        skip_b = 0  # B's leading tokens left out
        if ids_b is None:
            new_a, new_b, specials = tf.minimum(length_a, max(seq_length - 2, 0)), 0, 2
        else:
            splits_b = tf.cast(ids_b.row_splits, tf.int32)
            starts_b, length_b = splits_b[:-1, None], splits_b[1:, None] - splits_b[:-1, None]
            specials = 3
            if keep_b_tail is not None:
                budget = max(seq_length - 3, 0)
                new_b = tf.minimum(length_b, min(keep_b_tail, budget))
                new_a, skip_b = tf.minimum(length_a, budget - new_b), length_b - new_b
            else:
                # truncated_lengths' closed form, which leaves rows that fit as they are.
                budget = seq_length - 3
                new_a = tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
                new_b = tf.minimum(length_b, budget - new_a)
                if budget < 0:  # too short for the specials: no tokens (the rows are cut to seq_length below)
                    new_a, new_b = tf.maximum(new_a, 0), tf.maximum(new_b, 0)
            # pack_rows would broadcast one row of B over every row of A: refuse it, as row-wise ops do.
            check = assert_same_batch(tf.size(starts_a), tf.size(starts_b), "pack: text and text_b")
            with tf.control_dependencies([check]):
                new_a = tf.identity(new_a)
        if pad_to_multiple is None:
            width = seq_length
        else:
            # The longest row, at least [CLS] [SEP] even for a batch of zero (the pooler reads position 0).
            # (A batch of 0: reduce_max gives int32's least value.)
            width = tf.maximum(tf.reduce_max(new_a + new_b + specials), 2)
            width = tf.minimum((width + pad_to_multiple - 1) // pad_to_multiple * pad_to_multiple, seq_length)
        first = (ids_a.flat_values, starts_a, new_a)
        second = None if ids_b is None else (ids_b.flat_values, starts_b + skip_b, new_b)
        features, _ = pack_rows(self.cls_id, self.sep_id, width, first, second)
        return features


def _without_space(re2_class):
    """An RE2 class `[...]` of normalization's (code points \\x{...} and ranges) less " "."""
    ranges = []
    for first, last in re.findall(r"\\x\{([0-9a-f]+)\}(?:-\\x\{([0-9a-f]+)\})?", re2_class):
        first, last = int(first, 16), int(last or first, 16)
        ranges += (
            [(first, min(last, 0x1F)), (max(first, 0x21), last)] if first <= 0x20 <= last else [(first, last)]
        )
    return "[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges if a <= b) + "]"


@functools.cache
def _capitals_tensorflow_keeps():
    """(int32 [K] sorted, int32 [K]): the code points Python's str.lower changes and StringLower leaves as
    they are (capitals its older Unicode tables lack, such as U+2C2F and U+10570-10595), and Python's lower
    case of each. Measured on this TensorFlow once per process; every such case is one code point."""
    capitals = [c for c in map(chr, range(0x110000)) if not 0xD800 <= ord(c) < 0xE000 and c.lower() != c]
    with tf.init_scope():  # eagerly, even while a function is traced
        kept = tf.strings.lower([c.encode() for c in capitals], encoding="utf-8").numpy()
    pairs = [
        (ord(c), ord(c.lower())) for c, lowered in zip(capitals, kept, strict=True) if lowered.decode() == c
    ]
    return np.array([a for a, _ in pairs], np.int32), np.array([b for _, b in pairs], np.int32)


def _lower_what_tensorflow_keeps(texts):
    """tf.string [N] lowercased by StringLower → lowercased as Python's str.lower does (see
    _capitals_tensorflow_keeps); texts without such capitals pass through one regex match."""
    capitals, lowers = _capitals_tensorflow_keeps()
    if not len(capitals):
        return texts
    found = "(?s).*[" + "".join(f"\\x{{{c:x}}}" for c in capitals) + "].*"

    def lower():
        codes = tf.strings.unicode_decode(texts, "UTF-8")  # [N, (code points)]
        flat = codes.flat_values
        at = tf.minimum(tf.searchsorted(capitals, flat), len(capitals) - 1)
        flat = tf.where(tf.gather(capitals, at) == flat, tf.gather(lowers, at), flat)
        return tf.strings.unicode_encode(codes.with_flat_values(flat), "UTF-8")

    return tf.cond(tf.reduce_any(tf.strings.regex_full_match(texts, found)), lower, lambda: texts)


def _lower_around_nuls(texts):
    """UTF-8 lowercasing of tf.string [N] that may hold NUL bytes.

    StringLower stops at a NUL byte, and SentencePiece keeps NUL as a piece: lower the parts between NULs and
    put the NULs back (a ragged reduce_join drops a NUL separator: use suffixes).
    """
    parts = tf.strings.split(texts, "\x00")  # [texts, (parts)]
    lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
    rows = parts.value_rowids()
    is_last = tf.range(tf.size(lowered, out_type=rows.dtype)) == tf.gather(parts.row_limits() - 1, rows)
    lowered = tf.where(is_last, lowered, lowered + "\x00")
    return tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1)


def pack_rows(cls_id, sep_id, width, first, second=None):
    """Rows `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` of width columns, the segments read from flat values.

    Each column is read from the segment it falls in by index arithmetic, not built with ragged concat and
    padding: the same rows from a graph a fraction of the size (see InGraphTokenizer._split_pieces).

    Args:
      cls_id, sep_id: the special ids.
      width: scalar, at least each row's length (3 + A's + B's length; 2 + A's without B).
      first, second: segments A and B, each (values [N], starts [rows] or [rows, 1], lengths, the same):
        row r's segment is values[starts[r] : starts[r] + lengths[r]]; second None: no B and no second
        [SEP]. Starts, lengths and width are of one integer type.

    Returns:
      (dict of int32 [rows, width]: input_word_ids, input_mask, input_type_ids; [rows, width] of the
      starts' type: each column's index into B's values, -1 where the column is not in B; None without B).
    """
    values_a, starts_a, length_a = first
    starts_a, length_a = _column(starts_a), _column(length_a)
    dtype = length_a.dtype
    column = tf.range(tf.cast(width, dtype))[None, :]  # [1, width]
    sep_a = length_a + 1  # [rows, 1]: the column of A's [SEP]
    # Each column's index into [<pad>, [CLS], [SEP], A's values, B's values] (one gather): a token's is its
    # column plus its segment's offset in the row.
    values = [tf.constant([0, cls_id, sep_id], values_a.dtype), values_a]
    offset = starts_a + 2
    if second is None:
        end, is_sep = sep_a, column == sep_a  # end: the row's last column
    else:
        values_b, starts_b, length_b = second
        values.append(values_b)
        end = sep_a + _column(length_b) + 1
        after_a = column > sep_a
        start_b = _column(starts_b) - length_a - 2  # B's index in values_b, less the column
        offset = tf.where(after_a, start_b + 3 + tf.size(values_a, out_type=dtype), offset)
        is_sep = (column == sep_a) | (column == end)
    is_token = (column >= 1) & (column < end)  # or a [SEP]
    index = tf.where(is_token, column + offset, tf.where(column == 0, tf.constant(1, dtype), 0))
    in_mask = column <= end
    features = {
        "input_word_ids": tf.gather(
            tf.concat(values, axis=0), tf.where(is_sep, tf.constant(2, dtype), index)
        ),
        "input_mask": tf.cast(in_mask, tf.int32),
    }
    if second is None:
        return {**features, "input_type_ids": tf.zeros_like(features["input_mask"])}, None
    features["input_type_ids"] = tf.cast(after_a & in_mask, tf.int32)
    return features, tf.where(after_a & is_token, start_b + column, -1)


def _column(vector):
    """[rows] or [rows, 1] → [rows, 1]."""
    return vector if vector.shape.rank == 2 else vector[:, None]


def gather_or(values, index, otherwise):
    """values [N] (N may be 0) at int32 index [...] where index >= 0, else otherwise (broadcast)."""
    inside = index >= 0
    padded = tf.concat([values, tf.zeros([1], values.dtype)], axis=0)  # where the other indices read
    return tf.where(inside, tf.gather(padded, tf.where(inside, index, tf.size(values))), otherwise)


def assert_same_batch(size_a, size_b, what):
    """An op that fails (InvalidArgument, through any loader) naming both batch sizes when they differ."""
    # int32 data: Assert is one op (with other types it builds a cond around it).
    size_a, size_b = tf.cast(size_a, tf.int32), tf.cast(size_b, tf.int32)
    return tf.debugging.Assert(
        tf.equal(size_a, size_b), [f"{what} have different batch sizes:", size_a, "and", size_b]
    )
