"""train_tokenizer's SentencePiece training: the ALBERT recipe, and clear errors for bad corpora."""

import re

import pytest

from albert_tf import file_io
from albert_tf.text import corpus, spm_training
from albert_tf.text.tokenizer import AlbertTokenizer, load_sentencepiece
from tests.helpers import SAMPLE_CORPUS


def _corpus(path, last_line=b"the last line\n"):
    lines = [f"line {i} of a small corpus, with words to learn pieces from".encode() for i in range(300)]
    path.write_bytes(b"\n".join(lines) + b"\n" + last_line)
    return str(path)


def test_trains_the_albert_special_pieces(tmp_path):
    summary = spm_training.train([_corpus(tmp_path / "text.txt")], str(tmp_path / "spm"), vocab_size=60)
    assert "301 lines" in summary and "60 pieces" in summary
    tokenizer = AlbertTokenizer(tmp_path / "spm.model")  # checks <pad>=0 ... [MASK]=4
    assert tokenizer.vocab_size == 60


def test_invalid_utf8_names_the_line_and_writes_nothing(tmp_path):
    # The bad line comes last: SentencePiece would train on the 300 good lines before it and succeed.
    path = _corpus(tmp_path / "text.txt", last_line=b"caf\xe9\n")
    with pytest.raises(corpus.CorpusError, match=r"text\.txt:301: invalid UTF-8"):
        spm_training.train([path], str(tmp_path / "spm"), vocab_size=60)
    assert not list(tmp_path.glob("spm*"))
    spm_training.train([path], str(tmp_path / "spm"), vocab_size=60, errors="replace")
    assert (tmp_path / "spm.model").exists()


def test_too_large_vocabulary_names_the_largest_the_corpus_supports(tmp_path):
    text = tmp_path / "small.txt"
    text.write_text("\n".join(SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()[:80]) + "\n")
    with pytest.raises(spm_training.TrainingError) as error:
        spm_training.train([str(text)], str(tmp_path / "spm"), vocab_size=8000)
    message = str(error.value)
    match = re.fullmatch(
        r"--vocab_size=8000 is too large for .*small\.txt: its [\d,]+ lines support a vocabulary of at most "
        r"([\d,]+) pieces; pass --vocab_size=(\d+) or less, or train on more text",
        message,
    )
    assert match, message
    largest = int(match.group(2))
    assert int(match.group(1).replace(",", "")) == largest and 97 < largest < 8000
    assert not list(tmp_path.glob("spm*"))  # nothing written
    # The size it names is the largest that trains.
    spm_training.train([str(text)], str(tmp_path / "spm"), vocab_size=largest)
    assert load_sentencepiece(str(tmp_path / "spm.model")).get_piece_size() == largest


def test_missing_folders_of_the_prefix_are_made_and_removed_again_when_training_fails(tmp_path):
    text = _corpus(tmp_path / "text.txt")
    spm_training.train([text], str(tmp_path / "spm" / "new" / "albert"), vocab_size=60)
    assert sorted(p.name for p in (tmp_path / "spm" / "new").iterdir()) == ["albert.model", "albert.vocab"]
    with pytest.raises(spm_training.TrainingError, match="--vocab_size=8000 is too large"):
        spm_training.train([text], str(tmp_path / "other" / "albert"), vocab_size=8000)
    with pytest.raises(file_io.FolderError, match=r"--model_prefix: .*text\.txt, the folder of .* is a file"):
        spm_training.train([text], f"{text}/albert", vocab_size=60)
    with pytest.raises(spm_training.TrainingError, match=r"--vocab_size=5 leaves no room .* take 5"):
        spm_training.train([text], str(tmp_path / "small" / "albert"), vocab_size=5)
    with pytest.raises(spm_training.TrainingError, match=r"--model_prefix=.*spm/ ends in a folder"):
        spm_training.train([text], f"{tmp_path}/spm/", vocab_size=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spm", "text.txt"]  # other/ is gone again
    assert sorted(p.name for p in (tmp_path / "spm").iterdir()) == ["new"]


def test_every_model_has_a_comma_piece_even_from_text_without_commas(tmp_path):
    # The on-device tokenizer applies the digit-comma rule by id (serving/litert_text.py): it needs a ","
    # piece, and a corpus of a script that writes few commas (Thai) may have none to learn one from.
    text = tmp_path / "text.txt"
    text.write_text("\n".join(f"line {i} of a small corpus and no comma in it" for i in range(300)) + "\n")
    spm_training.train([str(text)], str(tmp_path / "spm"), vocab_size=60)
    tokenizer = AlbertTokenizer(tmp_path / "spm.model")
    assert tokenizer.sp.piece_to_id(",") != tokenizer.unk_id
    ids = tokenizer.encode("line 12, 3")  # the digit-comma rule splits "2," into "2" and ","
    assert tokenizer.sp.piece_to_id(",") in ids and tokenizer.unk_id not in ids
    # "," among the user-defined pieces: one piece still (SentencePiece refuses a piece defined twice).
    spm_training.train([str(text)], str(tmp_path / "own"), vocab_size=60, user_defined_symbols=[",", "."])
    tokenizer = AlbertTokenizer(tmp_path / "own.model")
    assert tokenizer.sp.piece_to_id(",") == 5 and tokenizer.sp.piece_to_id(",") in tokenizer.encode("12, 3")
