"""Training a SentencePiece model with the ALBERT recipe (used by `python -m albert_tf.train_tokenizer`)."""

import io
import itertools
import re

import sentencepiece

from albert_tf import file_io
from albert_tf.file_systems import LocalFiles
from albert_tf.text import corpus
from albert_tf.text.normalization import preprocess_text
from albert_tf.text.tokenizer import CLS, MASK, PIECE_PREFIX, SEP, AlbertTokenizer, load_sentencepiece


class TrainingError(ValueError):
    """SentencePiece refused the corpus or the settings; the message says which."""


# SentencePiece's own words when the corpus has fewer distinct pieces than asked for (it states the bound).
_TOO_FEW_PIECES = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")


def train(
    paths,
    model_prefix,
    *,
    vocab_size,
    do_lower_case=True,
    keep_accents=False,
    add_dummy_prefix=True,
    model_type="unigram",
    character_coverage=0.99995,
    input_sentence_size=10_000_000,
    user_defined_symbols=(),
    num_threads=1,
    random_seed=12345,
    errors="strict",
    files=LocalFiles,
):
    """Trains on the normalized lines of paths; writes model_prefix.model and model_prefix.vocab.

    files: what reads the paths (file_systems.LocalFiles, or TensorFlowFiles for gs:// and the like);
    model_prefix may be on any TensorFlow file system (file_io).
    add_dummy_prefix: SentencePiece's word-start mark "▁" before each line (the original's models have it).
      The model file records the setting, and every tokenizer (SentencePiece, tensorflow-text, transformers'
      AlbertTokenizer) follows it.

    Returns:
      A one-line summary (lines read, vocabulary size, output path).
    """
    if not model_prefix.rstrip().split("/")[-1]:  # "spm/" would write the hidden files spm/.model, .vocab
        raise TrainingError(
            f"--model_prefix={model_prefix} ends in a folder: add the files' name (e.g. spm/albert)"
        )
    reserved = 5 + len(user_defined_symbols)  # <pad> <unk> [CLS] [SEP] [MASK], and the user-defined pieces
    if vocab_size <= reserved:
        raise TrainingError(
            f"--vocab_size={vocab_size} leaves no room for learned pieces: the special and user-defined ones "
            f"take {reserved}"
        )
    reader = corpus.LineReader(paths, errors=errors, files=files)
    counts = {"lines": 0}
    unreadable = []

    def sentences():
        # SentencePiece does not pass on an exception raised by its sentence iterator (it trains on the
        # lines read so far, or fails with an error of its own): keep the reader's error and raise it below.
        try:
            for lines in reader.files():
                for line in lines:
                    text = preprocess_text(line, lower=do_lower_case, keep_accents=keep_accents)
                    if text:
                        counts["lines"] += 1
                        yield text
        except corpus.CorpusError as error:
            unreadable.append(error)

    # The folder of the outputs is made first (a bad path fails before the training does) and removed again,
    # if it was made here, when the training fails.
    with file_io.output_folders([f"{model_prefix}.model", f"{model_prefix}.vocab"], "--model_prefix"):
        model = io.BytesIO()
        sentencepiece.set_random_generator_seed(random_seed)
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=sentences(),
                model_writer=model,
                vocab_size=vocab_size,
                model_type=model_type,
                character_coverage=character_coverage,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=[CLS, SEP, MASK],
                add_dummy_prefix=add_dummy_prefix,
                user_defined_symbols=list(user_defined_symbols),
                # A "," piece even from a corpus without commas (Thai writes few): the on-device
                # tokenizer applies the digit-comma rule by id and needs one (serving/litert_text.py).
                # Where the corpus has commas the pieces and scores are the same with or without it; a
                # user-defined "," is a piece already (SentencePiece refuses it twice).
                required_chars="" if "," in user_defined_symbols else ",",
                num_threads=num_threads,
                minloglevel=2,
            )
        except RuntimeError as error:
            if unreadable:
                raise unreadable[0] from None
            if counts["lines"] == 0:
                raise TrainingError(
                    f"{', '.join(paths)}: no text to train on (every line is blank)"
                ) from None
            too_few = _TOO_FEW_PIECES.search(str(error))
            if too_few:
                raise TrainingError(
                    f"--vocab_size={vocab_size} is too large for {', '.join(paths)}: "
                    f"its {counts['lines']:,} lines support a vocabulary of at most "
                    f"{int(too_few.group(2)):,} pieces; pass "
                    f"--vocab_size={too_few.group(2)} or less, or train on more text"
                ) from None
            raise TrainingError(f"SentencePiece: {error}") from None
        if unreadable:
            raise unreadable[0]
        file_io.write_atomically(f"{model_prefix}.model", model.getvalue())
        processor = load_sentencepiece(f"{model_prefix}.model")
        vocab = "".join(
            f"{processor.id_to_piece(i)}\t{processor.get_score(i):g}\n"
            for i in range(processor.get_piece_size())
        )
        file_io.write_atomically(f"{model_prefix}.vocab", vocab.encode("utf-8"))
        return (
            f"train_tokenizer: {counts['lines']} lines ({reader.replaced_lines} with invalid UTF-8 "
            f"replaced), {processor.get_piece_size()} pieces → {model_prefix}.model, {model_prefix}.vocab"
        )


def lone_prefix_share(model_file, lines, do_lower_case, keep_accents, sample=5000):
    """The share of the first `sample` non-blank lines whose first piece is a lone "▁" (SentencePiece's
    word-start mark with no word to join: text without spaces)."""
    tokenizer = AlbertTokenizer(model_file, do_lower_case=do_lower_case, keep_accents=keep_accents)
    firsts = [
        pieces[0] for pieces in map(tokenizer.tokenize, itertools.islice(filter(str.strip, lines), sample))
    ]
    return sum(piece == PIECE_PREFIX for piece in firsts) / max(1, len(firsts))
