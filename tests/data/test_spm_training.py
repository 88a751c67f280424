import re

import pytest

from albert_tf.data import spm_training
from albert_tf.data.tokenizer import load_sentencepiece
from tests.helpers import SAMPLE_CORPUS


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
