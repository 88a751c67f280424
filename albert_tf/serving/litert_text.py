"""The ALBERT tokenizer inside a LiteRT (TFLite) model: the ids of `AlbertTokenizer` from ops a device has.

`InGraphTokenizer`'s ops (regex_replace, NormalizeUTF8, SentencepieceOp) have no TFLite kernels.
DeviceTokenizer gives the same ids from TFLite builtins and two tensorflow_text custom ops (CUSTOM_OPS),
whose kernels come with `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` (Python) and TF Text's TFLite
registrars (apps):

1. FastBertNormalize with a model built here: a map from each code point to its text, which is the original
   ALBERT `preprocess_text` of that character alone (NFKD, combining marks dropped unless keep_accents,
   lowercase when do_lower_case), whitespace to " ", and each maximal ill-formed UTF-8 subpart (the unit
   Python's errors="replace" turns into one U+FFFD) to U+FFFD.
2. FastSentencepieceTokenize with the user's SentencePiece model whose normalizer (precompiled_charsmap: the
   longest-match rewrites SentencePiece applies to its input, NFKC for the usual models) is the model's own
   plus the rules that need context: `` and '' to ", the final sigma, and markers (below). The kernel then
   collapses spaces and adds the word-start "▁", as SentencePiece does with the normalized text.
3. The digit-comma rule by id with a table of fixed width, and [CLS]/[SEP] packing as `InGraphTokenizer.pack`.

What a character becomes can depend on its neighbours in three places, which step 1 marks with the
noncharacter U+FDD0 (MARK) and a designator for step 2:
- A character that normalizes to nothing (a combining mark without keep_accents) must still keep apart a `
  before it and one after it (the original pairs quotes before dropping marks): it becomes MARK "1", which
  step 2 deletes.
- The fullwidth ` and ' (and U+1FEF) normalize to ` and ' that must not pair: MARK "2" and MARK "3".
- A capital sigma (and the sigmas NFKD turns into one) lowercases to "ς" at a word's end: MARK "4", which
  step 2 reads with its neighbours (_sigma_rules).
A U+FDD0 in the text becomes MARK "0".

Where the ids can still differ from Python's (rare; bench/litert_parity.py counts them):
- Final sigma: the original looks past any case-ignorable characters (apostrophes, marks, modifier letters)
  on either side; here only the next character is read, and a sigma after a character that is neither cased
  nor " " nor common punctuation or digits is taken as word-final.
- A character that step 1 deletes between two that the model's normalizer composes (Hangul jamo, the two
  halves of some Indic vowel signs) keeps them apart.
- Ties between orders of the same pieces in a run of one repeated character or string ("00" "0" against
  "0" "00" in "64.000", "ll" "ll" "l" against "l" "ll" "ll"): both encoders keep path scores in float, but
  SentencePiece (unigram_model.cc, EncodeOptimized) forms each candidate in double (its `auto score` is a
  double: the conditional's other arm is `length * max_score_ - 0.1`) and takes a later piece when that
  exact sum exceeds the float best, where the fast kernel (optimized_encoder.cc) rounds the candidate to
  float first and keeps the earlier piece on equality. The same pieces sum to the same score in any order,
  so no rewrite of the scores can break these ties; the winner is set by the rounding of the sum before the
  run (and the fast kernel's unknown penalty per byte, not per character, shifts that sum after a
  multi-byte <unk>). About 3 in 10,000 lines: 56 of 192,000 held-out rows, 10 of 32,000 random strings.
- SentencePiece's user-defined pieces are protected from its normalizer; here they are too where the
  normalizer has a rule starting with one of them (step_two_rules), but not inside a longer rule.
- The model must have a "," piece: the digit-comma rule works on ids (DeviceTokenizer refuses others;
  train_tokenizer adds one to every model it makes).
"""

import functools
import io
import itertools
import os
import struct
import sys
import tempfile
import unicodedata

import numpy as np
import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from albert_tf import file_io
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tf_tokenizer import pack_rows
from albert_tf.text.tokenizer import CLS, SEP, SPECIAL_IDS, UNK, comma_rewrites, load_sentencepiece

# The tensorflow_text custom ops a converted DeviceTokenizer uses, as the flatbuffer names them.
CUSTOM_OPS = ("FastBertNormalize", "TFText>FastSentencepieceTokenize")

MARK = "\ufdd0"  # a noncharacter: text does not carry it (and where it does, it becomes MARK "0")
_LITERAL_MARK, _VANISHED, _GRAVE, _APOSTROPHE, _SIGMA = (MARK + d for d in "01234")
_REPLACEMENT = "\ufffd"

# SentencePiece's user-defined pieces score (bytes * FLT_MIN - 0.1) in its own encoder, about -0.1 for any
# length: the fast encoder reads the score from the model.
_USER_DEFINED_SCORE = -0.1
_CONTROL, _USER_DEFINED, _UNUSED = 3, 4, 5  # SentencePiece's piece types


class DeviceTokenizer(tf.Module):
    """Strings → packed encoder inputs, from TFLite builtins and tensorflow_text's TFLite custom ops.

    Args:
      model_file: a SentencePiece model with the ALBERT special pieces: its path, or its bytes.
      do_lower_case, keep_accents: as `AlbertTokenizer`'s.

    The model must have a "," piece (every model train_tokenizer makes has one, from text with commas or
    without): the digit-comma rule then works on ids alone. Building takes a few seconds (a pass over every
    code point and the model's normalizer rules).
    """

    def __init__(self, model_file, do_lower_case=True, keep_accents=False, name=None):
        super().__init__(name=name)
        processor = load_sentencepiece(model_file)  # the same checks and errors as the Python tokenizer
        model = model_file if isinstance(model_file, bytes) else file_io.read_bytes(model_file)
        rewrites = comma_rewrites(processor)
        if rewrites is None:
            raise ValueError(
                "DeviceTokenizer needs a SentencePiece model with a ',' piece (the digit-comma rule by id); "
                "`python -m albert_tf.train_tokenizer` gives every model one, even from text without commas"
            )
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self.cls_id, self.sep_id, self.unk_id = SPECIAL_IDS[CLS], SPECIAL_IDS[SEP], SPECIAL_IDS[UNK]
        self.normalizer_model = normalizer_model(do_lower_case, keep_accents)
        self.sentencepiece_model = sentencepiece_model(model, do_lower_case, keep_accents)
        self._normalizer = tf_text.FastBertNormalizer(model_buffer=self.normalizer_model)
        self._sentencepiece = tf_text.FastSentencepieceTokenizer(self.sentencepiece_model)
        # The digit-comma rule: row i holds what id i becomes (itself, or its rewrite), -1 past its length.
        rows = [rewrites.get(i, [i]) for i in range(len(processor))]
        width = max(map(len, rows))
        self._replacements = np.array([row + [-1] * (width - len(row)) for row in rows], np.int32)
        self._replacement_lengths = np.array([len(row) for row in rows], np.int32)

    @tf.autograph.experimental.do_not_convert  # straight-line ops: autograph's conversion changes nothing
    def tokenize(self, text):
        """tf.string [batch] → (int32 ids [N], int32 row_splits [batch + 1]): each text's ids, no specials."""
        pieces = self._sentencepiece.tokenize(self._normalizer.normalize(text))
        ids, splits = pieces.flat_values, tf.cast(pieces.row_splits, tf.int32)
        lengths = tf.gather(tf.constant(self._replacement_lengths), ids)  # [N]
        ends = tf.concat([[0], tf.cumsum(lengths)], 0)  # [N + 1]: where each id's output ends
        rows = tf.gather(tf.constant(self._replacements), ids)  # [N, width]
        filled = tf.range(self._replacements.shape[1])[None, :] < lengths[:, None]
        # The filled cells in row-major order are the output in order.
        return tf.gather_nd(rows, tf.where(filled)), tf.gather(ends, splits)

    @tf.autograph.experimental.do_not_convert
    def pack(self, text, text_b=None, seq_length=128):
        """`[CLS] A [SEP] (B [SEP])` from raw text, trimmed as `InGraphTokenizer.pack` trims and padded.

        Args:
          text, text_b: tf.string [batch] (text_b: None, or the same batch size: a row of text_b for each).
          seq_length: the width of the outputs (a Python int).

        Returns:
          dict of int32 [batch, seq_length]: input_word_ids, input_mask, input_type_ids.
        """
        ids_a, splits_a = self.tokenize(text)
        starts_a, length_a = splits_a[:-1, None], splits_a[1:, None] - splits_a[:-1, None]  # [batch, 1]
        if text_b is None:
            new_a = tf.minimum(length_a, max(seq_length - 2, 0))
            features, _ = pack_rows(self.cls_id, self.sep_id, seq_length, (ids_a, starts_a, new_a))
            return features
        # A batch of text_b of another size fails here (TFLite has no Assert: a reshape checks it).
        ids_b, splits_b = self.tokenize(tf.reshape(text_b, tf.shape(text)))
        starts_b, length_b = splits_b[:-1, None], splits_b[1:, None] - splits_b[:-1, None]
        budget = seq_length - 3  # the original's truncation (longer segment first, ties trim B), closed form
        new_a = tf.minimum(length_a, tf.maximum(budget - length_b, (budget + 1) // 2))
        new_b = tf.minimum(length_b, budget - new_a)
        if budget < 0:
            new_a, new_b = tf.maximum(new_a, 0), tf.maximum(new_b, 0)
        features, _ = pack_rows(
            self.cls_id, self.sep_id, seq_length, (ids_a, starts_a, new_a), (ids_b, starts_b, new_b)
        )
        return features


# ------------------------------------------------------------------------------------------------------------
# Step 1: the per-character normalizer


@functools.cache
def character_map(do_lower_case, keep_accents):
    """{code point's UTF-8 bytes (or an ill-formed subpart): its text after step 1} for those that change."""
    mapping = {}
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        if char.isspace():
            out = " "
        elif char == MARK:
            out = _LITERAL_MARK
        elif _unchanged(char, do_lower_case):
            continue
        else:
            out = preprocess_text(char, lower=do_lower_case, keep_accents=keep_accents)
            if do_lower_case and "Σ" in _decomposed(char, keep_accents):
                out = _SIGMA
            elif not out:
                out = _VANISHED
            else:
                out = out.replace("`", _GRAVE).replace("'", _APOSTROPHE)
        if out != char:
            mapping[char.encode()] = out
    for subpart in _ill_formed_subparts():
        mapping[subpart] = _REPLACEMENT
    return mapping


def _unchanged(char, do_lower_case):
    """Whether preprocess_text leaves the character as it is in any setting (a quick test: no
    decomposition, no combining class, no lower case; Hangul syllables decompose without a listed one)."""
    return (
        not unicodedata.decomposition(char)
        and not unicodedata.combining(char)
        and not "\uac00" <= char <= "\ud7a3"
        and (not do_lower_case or char.lower() == char)
    )


def _decomposed(char, keep_accents):
    """The character as lowercasing sees it in preprocess_text (after NFKD and dropping marks)."""
    if keep_accents:
        return char
    return "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))


def _ill_formed_subparts():
    """Every maximal ill-formed UTF-8 subpart (Unicode's "best practice", which Python's errors="replace"
    and ICU's U8_FWD_1, FastBertNormalize's step, both follow): bytes that start no sequence, and the valid
    beginnings of 2-, 3- and 4-byte sequences that end too soon."""
    trail = range(0x80, 0xC0)
    second = {
        0xE0: range(0xA0, 0xC0),
        0xED: range(0x80, 0xA0),
        0xF0: range(0x90, 0xC0),
        0xF4: range(0x80, 0x90),
    }
    subparts = [bytes([b]) for b in range(0x80, 0x100)]  # a trail byte, C0/C1/F5-FF, or a lone lead
    for lead in range(0xE0, 0xF5):
        for t1 in second.get(lead, trail):
            subparts.append(bytes([lead, t1]))
            if lead >= 0xF0:
                subparts += [bytes([lead, t1, t2]) for t2 in trail]
    return subparts


@functools.cache
def normalizer_model(do_lower_case, keep_accents):
    """The FastBertNormalizerModel flatbuffer (tensorflow_text's fast_bert_normalizer_model.fbs) of
    character_map: a darts-clone trie from each key to (1 << 30 | offset << 6 | length) into a string pool."""
    import flatbuffers

    pool, offsets, keys = bytearray(), {}, {}
    for key, text in character_map(do_lower_case, keep_accents).items():
        data = text.encode()
        if data not in offsets:
            offsets[data] = len(pool)
            pool += data
        assert len(data) < 64
        keys[key] = 1 << 30 | offsets[data] << 6 | len(data)
    trie = _darts(keys)
    builder = flatbuffers.Builder(len(trie) * 4 + len(pool) + 1024)
    trie_vector = builder.CreateNumpyVector(trie)
    pool_vector = builder.CreateByteVector(bytes(pool))
    builder.StartObject(4)
    builder.PrependBoolSlot(0, not keep_accents and do_lower_case, False)
    builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
    builder.PrependInt32Slot(2, 0, 0)  # NUL stays NUL
    builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
    builder.Finish(builder.EndObject())
    return bytes(builder.Output())


def _darts(entries):
    """A darts-clone double array (uint32 units) from {key bytes (no NUL): value < 2**31}.

    A plain trie laid out breadth-first: node at p with children base b has child c at b ^ label(c), the leaf
    (label 0) at b; each unit holds its label, a has-leaf bit and the offset p ^ b (below 2**21 here)."""
    root = {}
    for key, value in entries.items():
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        node[0] = value
    size = 1 << 16
    units, used, is_base = np.zeros(size, np.uint32), np.zeros(size, bool), np.zeros(size, bool)
    used[0] = True
    queue, head = [(0, root)], 0
    free = 1  # every position before it is taken, as a child or as a base
    last_many = 0
    window = np.arange(4096)
    while head < len(queue):
        position, node = queue[head]
        head += 1
        labels = np.array(sorted(node))
        while used[free] or is_base[free]:
            free += 1
        # A node of many children rarely fits among the holes that small ones leave: it searches on from
        # where the last one fitted (quadratic otherwise).
        many = len(labels) > 16
        start, width = (max(free, last_many) if many else free) & ~0xFF, 256
        while True:  # the first base, from free's block on, whose children's positions are all free
            if start + width + 256 >= size:
                units, used, is_base = (np.resize(a, 2 * size) for a in (units, used, is_base))
                units[size:], used[size:], is_base[size:] = 0, False, False
                size *= 2
            bases = start + window[:width]
            fits = ~is_base[bases]
            for label in labels.tolist():
                fits &= ~used[bases ^ label]
            if fits.any():
                base = int(bases[np.argmax(fits)])
                break
            start, width = start + width, 4096
        is_base[base] = True
        last_many = base if many else last_many
        offset = position ^ base
        assert offset < 1 << 21, "the trie outgrew darts-clone's short offsets"
        units[position] |= offset << 10
        for label in labels.tolist():
            child = base ^ label
            used[child] = True
            if label == 0:
                units[child] = 1 << 31 | node[0]
                units[position] |= 1 << 8
            else:
                units[child] = label
                queue.append((child, node[label]))
    return units[: (int(np.flatnonzero(used).max()) | 0xFF) + 1]


# ------------------------------------------------------------------------------------------------------------
# Step 2: the SentencePiece model with the normalizer that finishes step 1's work


def _darts_entries(units):
    """{key bytes: value} of a darts-clone double array (uint32 units), read a level of the trie at a time.

    A unit of label c (bits 0-7; a leaf's bit 31 keeps it from matching) at position i is a child of every
    node whose base is i ^ c: darts-clone shares the subtrees of equal suffixes (several nodes, one base), so
    each level groups its nodes by base and one pass over the units finds every group's children."""
    units = np.asarray(units, np.uint32).astype(np.int64)
    labels = units & 0x800000FF
    children = np.flatnonzero((labels > 0) & (labels < 256))
    child_bases = children ^ labels[children]
    keep = child_bases < len(units)
    children, child_bases = children[keep], child_bases[keep]
    group_of_base = np.full(len(units), -1, np.int64)
    entries = {}
    positions, prefixes = np.zeros(1, np.int64), [b""]  # the nodes of this level
    while len(positions):
        found = units[positions]
        bases = positions ^ ((found >> 10) << ((found & 0x200) >> 6))
        for index in np.flatnonzero((found & 0x100) != 0).tolist():
            if prefixes[index]:
                entries[prefixes[index]] = int(units[bases[index]] & 0x7FFFFFFF)
        unique, group = np.unique(bases, return_inverse=True)
        group_of_base[unique] = np.arange(len(unique))
        hit = np.flatnonzero(group_of_base[child_bases] >= 0)
        hit_group = group_of_base[child_bases[hit]]
        group_of_base[unique] = -1
        # Every (node of a group, child of that group): the nodes of each group in order, repeated.
        members = np.argsort(group, kind="stable")
        counts = np.bincount(group, minlength=len(unique))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        repeats = counts[hit_group]
        first = np.repeat(starts[hit_group], repeats)
        within = np.arange(repeats.sum()) - np.repeat(np.cumsum(repeats) - repeats, repeats)
        parents = members[first + within]
        positions = np.repeat(children[hit], repeats)
        order = np.lexsort((labels[positions], parents))
        parents, positions = parents[order], positions[order]
        steps = zip(parents.tolist(), labels[positions].tolist(), strict=True)
        prefixes = [prefixes[parent] + bytes([label]) for parent, label in steps]
    return entries


@functools.cache
def _charsmap_rules(precompiled):
    """A SentencePiece precompiled_charsmap (uint32 trie size, darts-clone trie, NUL-terminated texts) →
    {source: replacement} as str."""
    if not precompiled:
        return {}
    (size,) = struct.unpack("<I", precompiled[:4])
    units = np.frombuffer(precompiled[4 : 4 + size], np.uint32)
    texts = precompiled[4 + size :]
    return {
        key.decode(): texts[at : texts.index(b"\0", at)].decode() for key, at in _darts_entries(units).items()
    }


def _rewrite(rules, text, longest):
    """text rewritten as SentencePiece's normalizer does: at each place the longest source of rules."""
    out, at = [], 0
    while at < len(text):
        for length in range(min(longest, len(text) - at), 0, -1):
            if text[at : at + length] in rules:
                out.append(rules[text[at : at + length]])
                at += length
                break
        else:
            out.append(text[at])
            at += 1
    return "".join(out)


def _compile_charsmap(rules):
    """{source: replacement} → a precompiled_charsmap, by SentencePiece's own builder (a model trained for
    nothing else on one character, with the rules as its normalization_rule_tsv)."""

    def hexadecimal(text):  # the code points as 8 hexadecimal digits each, separated by spaces
        return text.encode("utf-32-be").hex(" ", 4)

    lines = [hexadecimal(source) + "\t" + hexadecimal(target) for source, target in sorted(rules.items())]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "rules.tsv")
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        written = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(["a"]), model_writer=written, model_type="char", vocab_size=4,
            hard_vocab_limit=False, normalization_rule_tsv=path, minloglevel=2,
        )  # fmt: skip
    return _model_proto_class().FromString(written.getvalue()).normalizer_spec.precompiled_charsmap


def step_two_rules(precompiled, do_lower_case, keep_accents, user_defined=()):
    """The rules of step 2's normalizer: the model's (precompiled, its precompiled_charsmap), then the
    markers', the quote pairs' and the final sigma's, each replacement already rewritten by the model's."""
    model = _charsmap_rules(precompiled)
    longest = max(map(len, model), default=1)

    def normalize(text):
        return _rewrite(model, text, longest)

    rules = dict(model)
    rules.update({
        _LITERAL_MARK: normalize(MARK), _VANISHED: "", _GRAVE: normalize("`"), _APOSTROPHE: normalize("'"),
        "``": normalize('"'), "''": normalize('"'),
    })  # fmt: skip
    if do_lower_case:
        rules.update(_sigma_rules(normalize, do_lower_case, keep_accents))
    if user_defined:
        # SentencePiece leaves a user-defined piece as it is written: no rule may start with one.
        pieces = tuple(user_defined)
        rules = {source: target for source, target in rules.items() if not source.startswith(pieces)}
        rules.update((piece, piece) for piece in pieces)
    return rules


def _sigma_rules(normalize, do_lower_case, keep_accents):
    """The final sigma: Python lowercases Σ to "ς" after a cased letter unless a cased letter follows
    (both past case-ignorable characters), else to "σ". Step 1 writes _SIGMA; these rules read the next
    character (what step 1 writes first for a cased one) and the previous: " " (a word's start, and the
    text's: the fast encoder puts its " " before the normalizer runs), digits and ASCII punctuation."""
    rules = {_SIGMA: normalize("ς"), _SIGMA + _SIGMA: normalize("σς")}
    for char in _cased_starts(do_lower_case, keep_accents):
        rules[_SIGMA + char] = normalize("σ" + char)
        rules[_SIGMA + _SIGMA + char] = normalize("σσ" + char)
    for before in ' 0123456789!"#$%&()*+,-/;<=>?@[\\]_{|}~':
        rules[before + _SIGMA] = normalize(before + "σ")
    return rules


@functools.cache
def _cased_starts(do_lower_case, keep_accents):
    """The cased characters (Python's Cased and not Case_Ignorable) that step 1 writes first for some
    character: each character it leaves as it is, and the first of each text it writes (not a marker)."""
    cased = _cased_characters()
    mapped = {}
    for key, text in character_map(do_lower_case, keep_accents).items():
        try:
            mapped[key.decode()] = text
        except UnicodeDecodeError:  # an ill-formed subpart, not a character
            continue
    starts = {char for char in cased if char not in mapped}
    starts.update(text[0] for text in mapped.values() if text and text[0] in cased)
    return starts


@functools.cache
def _cased_characters():
    """Every character that lowercasing counts as cased before a final sigma: c is when "1" + c + "Σ"
    lowercases to end in "ς". One str.lower for all: "1" lowercases to itself, no lowercase holds one, and
    Σ lowercases to one character."""
    every = itertools.chain(range(0xD800), range(0xE000, sys.maxunicode + 1))
    chars = "".join(map(chr, every)).replace("1", "")
    lowered = ("1" + "Σ1".join(chars) + "Σ").lower().split("1")[1:]
    return {char for char, text in zip(chars, lowered, strict=True) if text[-1] == "ς"}


def sentencepiece_model(model, do_lower_case, keep_accents):
    """The user's SentencePiece model (bytes) with step 2's normalizer, for FastSentencepieceTokenizer.

    The fast encoder skips control and unknown pieces but refuses unused ones: those become control pieces
    (SentencePiece never gives an unused piece for text either). User-defined pieces get the score
    SentencePiece's encoder gives them. Other scores stay as they are: rounding them to a grid (exact float
    sums) or adding a constant per byte leaves every tie above in place and moves a near tie elsewhere."""
    proto = _model_proto_class().FromString(model)
    user_defined = []
    for piece in proto.pieces:
        if piece.type == _UNUSED:
            piece.type = _CONTROL
        elif piece.type == _USER_DEFINED:
            piece.score = _USER_DEFINED_SCORE
            user_defined.append(piece.piece)
    spec = proto.normalizer_spec
    rules = step_two_rules(bytes(spec.precompiled_charsmap), do_lower_case, keep_accents, tuple(user_defined))
    spec.precompiled_charsmap = _compile_charsmap(rules)
    return proto.SerializeToString()


@functools.cache
def _model_proto_class():
    """SentencePiece's ModelProto cut to what this module reads and writes (pieces, the normalizer spec); the
    rest round-trips as unknown fields. Not sentencepiece_model_pb2, whose protobuf needs vary by release
    (see tests/text/test_tf_tokenizer.py)."""
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="litert_spm.proto", package="litert_spm", syntax="proto2")
    model = file.message_type.add(name="ModelProto")
    model.field.add(
        name="pieces", number=1, type=field.TYPE_MESSAGE, label=field.LABEL_REPEATED,
        type_name=".litert_spm.ModelProto.SentencePiece",
    )  # fmt: skip
    model.field.add(
        name="normalizer_spec", number=3, type=field.TYPE_MESSAGE, label=field.LABEL_OPTIONAL,
        type_name=".litert_spm.ModelProto.NormalizerSpec",
    )  # fmt: skip
    piece = model.nested_type.add(name="SentencePiece")
    piece.field.add(name="piece", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    piece.field.add(name="score", number=2, type=field.TYPE_FLOAT, label=field.LABEL_OPTIONAL)
    piece.field.add(name="type", number=3, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    spec = model.nested_type.add(name="NormalizerSpec")
    spec.field.add(name="precompiled_charsmap", number=2, type=field.TYPE_BYTES, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("litert_spm.ModelProto"))
