"""The ALBERT SentencePiece tokenizer in Python: normalization, the digit-comma rule, ids, pair packing.

`albert_tf.text.tf_tokenizer.InGraphTokenizer` gives the same ids with TensorFlow ops (for exported models and
online pipelines); tests/text/test_tf_tokenizer.py checks the two agree.
"""

import dataclasses
import functools

import numpy as np
import sentencepiece

from albert_tf import file_io
from albert_tf.text.normalization import PIECE_PREFIX, preprocess_text

PAD, UNK, CLS, SEP, MASK = "<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"
# The ids the ALBERT recipe gives these pieces (train_tokenizer enforces them; released models have them).
SPECIAL_IDS = {PAD: 0, UNK: 1, CLS: 2, SEP: 3, MASK: 4}


class TokenizerError(ValueError):
    """A SentencePiece model that cannot serve as an ALBERT tokenizer."""


def load_sentencepiece(model_file):
    """Loads a SentencePiece model (a path, or the model's bytes) and checks it has the ALBERT special pieces
    at their ids."""
    processor = sentencepiece.SentencePieceProcessor()
    if isinstance(model_file, bytes):
        proto, model_file = model_file, "the SentencePiece model given as bytes"
    else:
        try:
            proto = file_io.read_bytes(model_file)  # any TensorFlow file system: gs:// too
        except FileNotFoundError:
            raise TokenizerError(f"{model_file}: no such file (a SentencePiece model was expected)") from None
        except IsADirectoryError:
            raise TokenizerError(f"{model_file}: a folder, not a SentencePiece model file") from None
    try:
        processor.Load(model_proto=proto)
    except (OSError, RuntimeError) as error:
        raise TokenizerError(f"{model_file}: not a readable SentencePiece model ({error})") from None
    for piece, expected in SPECIAL_IDS.items():
        found = processor.piece_to_id(piece)
        if found != expected or processor.id_to_piece(expected) != piece:
            raise TokenizerError(
                f"{model_file}: expected piece {piece!r} at id {expected}, found it at id {found}; "
                "train the model with `python -m albert_tf.train_tokenizer`"
            )
    return processor


def check_fits_vocabulary(model_file, vocab_size, config_file):
    """Raises TokenizerError when the SentencePiece model has more pieces than the config's vocab_size: an id
    past the embedding table fails the gather on a CPU, and reads zeros on a GPU or TPU (training on wrong
    inputs, silently). Returns the number of pieces."""
    pieces = load_sentencepiece(model_file).get_piece_size()
    if pieces > vocab_size:
        raise TokenizerError(
            f"{model_file} has {pieces:,} pieces but {config_file} has vocab_size {vocab_size:,}: its ids "
            f"past {vocab_size - 1:,} index no embedding; use the model's own tokenizer, or vocab_size "
            f">= {pieces:,}"
        )
    return pieces


def truncated_lengths(length_a, length_b, max_tokens):
    """Lengths after trimming the longer segment one token at a time (ties trim B) to fit max_tokens.

    The closed form of the original `_truncate_seq_pair`; the in-graph packer uses the same formula.
    """
    if length_a + length_b <= max_tokens:
        return length_a, length_b
    new_a = min(length_a, max(max_tokens - length_b, (max_tokens + 1) // 2))
    return new_a, min(length_b, max_tokens - new_a)


def needs_comma_split(piece):
    """The digit-comma rule's test: a piece that ends in a comma right after a digit."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def _split_comma_piece(processor, piece):
    """The pieces a piece ending in a digit and "," becomes: the original's rule (its tokenization.py
    encode_pieces): the piece re-encoded without the comma and its "▁", the first part's "▁" dropped when the
    piece had none, then ","."""
    parts = processor.encode(piece[:-1].replace(PIECE_PREFIX, ""), out_type=str)
    if not piece.startswith(PIECE_PREFIX) and parts and parts[0].startswith(PIECE_PREFIX):
        parts = parts[1:] if len(parts[0]) == 1 else [parts[0][1:], *parts[1:]]
    return [*parts, ","]


def comma_rewrites(processor):
    """{id: the ids the digit-comma rule turns it into} for the vocabulary's pieces the rule rewrites, or None
    when the model has no "," piece of its own.

    With a "," piece, SentencePiece never puts a comma in an unknown run, so the rule only ever rewrites these
    ids and works on ids alone: text becomes SentencePiece's ids, each of these replaced by its row. Without
    one, the rule must look at the text of unknown runs (see AlbertTokenizer.encode_batch).
    """
    comma = processor.piece_to_id(",")
    if processor.is_unknown(comma) or processor.is_control(comma) or processor.is_unused(comma):
        return None
    return {
        i: [processor.piece_to_id(part) for part in _split_comma_piece(processor, processor.id_to_piece(i))]
        for i in range(processor.get_piece_size())
        if needs_comma_split(processor.id_to_piece(i))
    }


@dataclasses.dataclass(frozen=True)
class PackedInputs:
    """Encoder inputs for one example, each a list of seq_length ints."""

    input_word_ids: list
    input_mask: list
    input_type_ids: list


class AlbertTokenizer:
    """Text → SentencePiece pieces and ids, with the original ALBERT normalization.

    Args:
      model_file: path of a SentencePiece model with <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4.
      do_lower_case: lowercase before SentencePiece (True for the released uncased models).
      keep_accents: keep combining marks and skip NFKD (False, the original's, for the released models).
    """

    def __init__(self, model_file, do_lower_case=True, keep_accents=False):
        self.model_file = str(model_file)
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self.sp = load_sentencepiece(model_file)
        self._rewrites = comma_rewrites(self.sp)
        # Ids whose piece the digit-comma rule rewrites: a line without them needs no rewriting.
        self._comma_ids = frozenset(
            i for i in range(self.sp.get_piece_size()) if needs_comma_split(self.sp.id_to_piece(i))
        )
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            SPECIAL_IDS[p] for p in (PAD, UNK, CLS, SEP, MASK)
        )

    @property
    def vocab_size(self):
        return self.sp.get_piece_size()

    def normalize(self, text):
        return preprocess_text(text, lower=self.do_lower_case, keep_accents=self.keep_accents)

    def tokenize(self, text):
        """Text → pieces (normalized first), with the original's digit-comma rule.

        SentencePiece may glue a comma to the number before it ("▁1990,"); the original re-encodes such a
        piece without the comma and emits the comma as its own piece, so numbers tokenize the same with or
        without a following comma.
        """
        return self._split_digit_commas(self.normalize(text))

    def _split_digit_commas(self, normalized):
        pieces = []
        for piece in self.sp.encode(normalized, out_type=str):
            pieces.extend(_split_comma_piece(self.sp, piece) if needs_comma_split(piece) else [piece])
        return pieces

    def encode(self, text):
        """Text → list of ids (pieces outside the vocabulary become <unk>)."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts):
        """Texts → lists of ids, SentencePiece encoding them in one call, on this thread.

        SentencePiece's own thread pool costs more to start than it saves on a few lines, and the builder
        already runs a worker process per core. The digit-comma rule then replaces the ids it rewrites
        (comma_rewrites); for a model without a "," piece, lines with <unk> (whose text may end in a digit
        and a comma) go through pieces again, as the original does.
        """
        normalized = [self.normalize(text) for text in texts]
        out = self.sp.encode(normalized, num_threads=1)
        for i, ids in enumerate(out):
            if self._rewrites is not None:
                if not self._comma_ids.isdisjoint(ids):
                    out[i] = [new for old in ids for new in self._rewrites.get(old, (old,))]
            elif not self._comma_ids.isdisjoint(ids) or (self.unk_id in ids and "," in normalized[i]):
                out[i] = self.piece_ids(self._split_digit_commas(normalized[i]))
        return out

    def piece_ids(self, pieces):
        """Pieces of text (tokenize's) → ids. A piece is looked up by its text, so an unknown run that spells
        a control piece ("[MASK]" where the model has no "[") would become that piece's id, as in the
        original: it is <unk> here, as SentencePiece's own ids have it. Text never becomes a control id."""
        ids = [self.sp.piece_to_id(piece) for piece in pieces]
        return [self.unk_id if self.sp.is_control(i) or self.sp.is_unused(i) else i for i in ids]

    def decode(self, ids):
        """Ids → text (special pieces dropped)."""
        return self.sp.decode([i for i in ids if i not in SPECIAL_IDS.values() or i == self.unk_id])

    def id_to_piece(self, token_id):
        return self.sp.id_to_piece(token_id)

    @functools.cached_property
    def surface_lengths(self):
        """int32 [vocab_size]: the characters of normalized text each piece stands for (its length without
        the "▁" that marks a word start); 0 for <unk> and the control pieces, which stand for no fixed text.
        """
        return np.array(
            [
                0 if self.sp.is_unknown(i) or self.sp.is_control(i) else len(piece.replace(PIECE_PREFIX, ""))
                for i, piece in enumerate(self.sp.id_to_piece(list(range(self.vocab_size))))
            ],
            np.int32,
        )

    def piece_to_id(self, piece):
        return self.sp.piece_to_id(piece)

    def pack(self, text_a, text_b=None, seq_length=128):
        """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, trimmed to seq_length and padded with 0.

        Returns:
          PackedInputs; input_type_ids are 0 up to the first [SEP] included, 1 after.
        """
        ids_a = self.encode(text_a)
        ids_b = self.encode(text_b) if text_b is not None else []
        specials = 3 if text_b is not None else 2
        if seq_length < specials:
            raise ValueError(f"seq_length {seq_length} leaves no room for text after the special tokens")
        length_a, length_b = truncated_lengths(len(ids_a), len(ids_b), seq_length - specials)
        ids = [self.cls_id, *ids_a[:length_a], self.sep_id]
        types = [0] * len(ids)
        if text_b is not None:
            ids += [*ids_b[:length_b], self.sep_id]
            types += [1] * (length_b + 1)
        padding = seq_length - len(ids)
        return PackedInputs(
            input_word_ids=ids + [0] * padding,
            input_mask=[1] * len(ids) + [0] * padding,
            input_type_ids=types + [0] * padding,
        )
