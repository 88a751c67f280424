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


def test_character_classes_are_the_python_predicates_as_ranges():
    """The in-graph tokenizer's RE2 classes: every code point the predicate holds for, consecutive ones as one
    range, single ones alone, up to the last plane (the fullwidth and mathematical digits and the Glagolitic
    combining marks lie above the surrogates)."""
    assert normalization.whitespace_class() == (
        r"[\x{9}-\x{d}\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}-\x{2029}\x{202f}\x{205f}"
        r"\x{3000}]"
    )
    assert r"\x{30}-\x{39}" in normalization.digit_class()
    assert r"\x{ff10}-\x{ff19}" in normalization.digit_class()
    assert normalization.combining_class().startswith(r"[\x{300}-\x{34e}\x{350}-\x{36f}")
    assert r"\x{1e000}-\x{1e006}" in normalization.combining_class()


@pytest.mark.parametrize(
    "text, pieces",
    [
        ("in 1990, the", ["▁in", "▁199", "0", ",", "▁the"]),  # "0," inside a word: no "▁" added
        ("a65, b", ["▁a", "65", ",", "▁b"]),  # "65" alone encodes as "▁" "65": the "▁" goes
        ("x32, y", ["▁x", "32", ",", "▁y"]),
        ("[1, 2]", ["▁", "[", "1", ",", "▁", "2]"]),
        ("{0, 1}", ["▁{", "0", ",", "▁", "1}"]),  # "▁{0," starts a word: it keeps its "▁"
        ("1, 2", ["▁", "1", ",", "▁2"]),
    ],
)
def test_digit_comma_pieces_inside_and_at_the_start_of_words(tokenizer, text, pieces):
    """Pieces the sample model glues to a comma after a digit ("0,", "65,", "32,", "[1,", "▁{0,", "1,"),
    re-encoded without the comma: the same pieces join back to the text, and encode gives their ids."""
    assert tokenizer.tokenize(text) == pieces
    assert "".join(pieces).replace("▁", " ").strip() == text
    assert tokenizer.encode(text) == [tokenizer.piece_to_id(piece) for piece in pieces]
    assert tokenizer.unk_id not in tokenizer.encode(text)


def test_a_tokenizer_from_bytes_and_its_casing(tmp_path):
    """From the model's bytes (what a SavedModel keeps) as from its file; uncased unless told, and it keeps
    the file and the casing it was made with (to make the same tokenizer again)."""
    model = SAMPLE_SPM.read_bytes()
    from_bytes, from_file = AlbertTokenizer(model), AlbertTokenizer(SAMPLE_SPM)
    assert from_bytes.encode("The Python 3, 1990.") == from_file.encode("The Python 3, 1990.")
    assert from_file.tokenize("Hello World") == from_file.tokenize("hello world")
    assert (from_file.model_file, from_file.do_lower_case) == (str(SAMPLE_SPM), True)
    cased = AlbertTokenizer(SAMPLE_SPM, do_lower_case=False)
    assert cased.normalize("Héllo World") == "Hello World" and cased.do_lower_case is False
    assert cased.tokenize("Hello") != from_file.tokenize("Hello")
    with pytest.raises(TokenizerError, match=r"^the SentencePiece model given as bytes: not a readable"):
        AlbertTokenizer(b"not a model")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter([f"line {i} of some words here" for i in range(200)]),
        model_prefix=str(tmp_path / "plain"), vocab_size=40, minloglevel=2,
    )  # fmt: skip
    with pytest.raises(TokenizerError) as error:
        AlbertTokenizer((tmp_path / "plain.model").read_bytes())
    assert str(error.value).startswith(
        "the SentencePiece model given as bytes: expected piece '<pad>' at id 0"
    )
    assert str(error.value).endswith("; train the model with `python -m albert_tf.train_tokenizer`")


def test_pack_single_texts_truncation_padding_and_the_shortest_length(tokenizer):
    ids = tokenizer.encode("one two three four five six seven eight")
    single = tokenizer.pack("one two three four five six seven eight", seq_length=8)
    assert single.input_word_ids == [2, *ids[:6], 3]  # a single text keeps seq_length - 2 tokens
    assert single.input_type_ids == [0] * 8
    assert len(tokenizer.pack("one").input_word_ids) == 128  # the default length
    assert tokenizer.pack("one", seq_length=2).input_word_ids == [2, 3]  # room for the specials only
    assert tokenizer.pack("one", "two", seq_length=3).input_word_ids == [2, 3, 3]
    with pytest.raises(ValueError, match="^seq_length 1 leaves no room for text after the special tokens$"):
        tokenizer.pack("one", seq_length=1)
    with pytest.raises(ValueError, match="^seq_length 2 leaves no room"):
        tokenizer.pack("one", "two", seq_length=2)
    pair = tokenizer.pack("one", "two", seq_length=10)
    a, b = tokenizer.encode("one"), tokenizer.encode("two")
    padding = 10 - len(a) - len(b) - 3
    assert pair.input_type_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * padding


def test_decode_drops_the_special_pieces_and_padding_and_keeps_unknown_text(tokenizer):
    packed = tokenizer.pack("The interpreter prints 1,000 times.", "A second text.", seq_length=32)
    assert tokenizer.decode(packed.input_word_ids) == tokenizer.normalize(
        "The interpreter prints 1,000 times. A second text."
    )
    unknown = tokenizer.encode("x \u2603 y")
    assert tokenizer.unk_id in unknown
    assert tokenizer.decode(unknown).split() == ["x", "\u2047", "y"]  # SentencePiece's mark for <unk>
