import pytest
import sentencepiece

from albert_tf.text import normalization
from albert_tf.text.tokenizer import AlbertTokenizer, TokenizerError, check_fits_vocabulary, truncated_lengths
from tests.helpers import SAMPLE_SPM


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(SAMPLE_SPM)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("  Hello \t\u3000 World\n", "hello world"),  # str.split() whitespace, incl. ideographic space
        ("``quoted'' text", '"quoted" text'),
        ("Café Ångström naïve", "cafe angstrom naive"),
        ("ＡＢＣ１２３ ﬁ", "abc123 fi"),  # NFKD: full width and ligatures
        ("Straße ΟΔΟΣ", "straße οδος"),  # str.lower: ß stays, final sigma
        ("x\u00a8y", "x y"),  # NFKD gives a space + combining mark after whitespace collapsing
    ],
)
def test_preprocess_text_matches_the_original_steps(text, expected):
    assert normalization.preprocess_text(text) == expected


def test_preprocess_keeps_case_when_asked():
    assert normalization.preprocess_text("Café", lower=False) == "Cafe"


def test_special_ids(tokenizer):
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (
        0,
        1,
        2,
        3,
        4,
    )
    assert [tokenizer.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.vocab_size == 8000


def test_digit_comma_rule_splits_the_comma_off(tokenizer):
    sp = tokenizer.sp
    # Find a number SentencePiece glues to its comma, so the rule has something to do.
    glued = [
        text
        for text in ("in 1990, the", "12, 13", "2, 3", "1,000")
        if any(len(p) > 1 and p.endswith(",") and p[-2].isdigit() for p in sp.encode(text, out_type=str))
    ]
    assert glued, "the sample model glues no digit to a comma: pick other examples"
    for text in glued:
        pieces = tokenizer.tokenize(text)
        assert not any(len(p) > 1 and p.endswith(",") and p[-2].isdigit() for p in pieces)
        assert "".join(pieces).replace("▁", " ").strip() == text
    assert tokenizer.tokenize("in 1990, the")[-2:] == [",", "▁the"]


def test_encode_is_pieces_to_ids_and_decodes_back(tokenizer):
    text = "The interpreter prints an error message, 1,000 times."
    ids = tokenizer.encode(text)
    assert ids == [tokenizer.piece_to_id(p) for p in tokenizer.tokenize(text)]
    assert tokenizer.decode(ids) == tokenizer.normalize(text)


def test_pack_pair_layout_and_truncation(tokenizer):
    a = tokenizer.encode("one two three four five six seven eight")
    b = tokenizer.encode("nine ten")
    packed = tokenizer.pack("one two three four five six seven eight", "nine ten", seq_length=9)
    keep_a, keep_b = truncated_lengths(len(a), len(b), 6)
    assert packed.input_word_ids == [2, *a[:keep_a], 3, *b[:keep_b], 3]
    assert packed.input_type_ids == [0] * (keep_a + 2) + [1] * (keep_b + 1)
    assert packed.input_mask == [1] * 9
    single = tokenizer.pack("nine ten", seq_length=8)
    assert single.input_word_ids == [2, *b, 3] + [0] * (8 - len(b) - 2)
    assert single.input_mask == [1] * (len(b) + 2) + [0] * (8 - len(b) - 2)


def _truncate_by_popping(length_a, length_b, max_tokens):
    """The original `_truncate_seq_pair`, written out."""
    while length_a + length_b > max_tokens:
        if length_a > length_b:
            length_a -= 1
        else:
            length_b -= 1
    return length_a, length_b


def test_truncated_lengths_is_the_original_loop():
    for a in range(12):
        for b in range(12):
            for budget in range(1, 14):
                assert truncated_lengths(a, b, budget) == _truncate_by_popping(a, b, budget), (a, b, budget)


def test_a_model_file_missing_a_folder_unreadable_or_without_albert_pieces_is_refused(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("\n".join(f"line {i} of some words here" for i in range(200)))
    sentencepiece.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(tmp_path / "plain"), vocab_size=40, minloglevel=2
    )
    with pytest.raises(TokenizerError, match=r"plain\.model: expected piece '<pad>' at id 0"):
        AlbertTokenizer(tmp_path / "plain.model")
    with pytest.raises(TokenizerError, match="not a readable SentencePiece model"):
        AlbertTokenizer(text)
    with pytest.raises(
        TokenizerError, match=r"nope\.model: no such file \(a SentencePiece model was expected"
    ):
        AlbertTokenizer(tmp_path / "nope.model")
    with pytest.raises(TokenizerError, match=r": a folder, not a SentencePiece model file"):
        AlbertTokenizer(tmp_path)


def test_a_tokenizer_fits_a_vocabulary_at_least_its_size():
    assert check_fits_vocabulary(SAMPLE_SPM, 8000, "config.json") == 8000
    assert check_fits_vocabulary(SAMPLE_SPM, 30000, "config.json") == 8000  # unused rows are harmless
    refused = r"spm_8k\.model has 8,000 pieces but config\.json has vocab_size 7,999: its ids past 7,998 "
    with pytest.raises(TokenizerError, match=refused):
        check_fits_vocabulary(SAMPLE_SPM, 7999, "config.json")
