import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given, settings
from hypothesis import strategies as st

from albert_tf.text import spm_training
from albert_tf.text.tf_tokenizer import InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM, spm_without_commas
from tests.text.text_samples import MARKED_LINES, varied_lines


def _model_proto_class():
    """SentencePiece's ModelProto cut to its pieces (field 1: piece, score, type); the rest of a model
    (trainer and normalizer specs) round-trips as unknown fields. Not sentencepiece's own
    sentencepiece_model_pb2: from sentencepiece 0.2.3 that module needs protobuf 7, which apache-beam (the
    [beam] extra) forbids, and a test file that fails to import would hide what these tests check."""
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="spm_pieces.proto", package="spm_pieces", syntax="proto2")
    model = file.message_type.add(name="ModelProto")
    model.field.add(
        name="pieces", number=1, type=field.TYPE_MESSAGE, label=field.LABEL_REPEATED,
        type_name=".spm_pieces.ModelProto.SentencePiece",
    )  # fmt: skip
    piece = model.nested_type.add(name="SentencePiece")
    piece.field.add(name="piece", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    piece.field.add(name="score", number=2, type=field.TYPE_FLOAT, label=field.LABEL_OPTIONAL)
    # An enum on the wire is a varint like int32; 1 is NORMAL.
    piece.field.add(name="type", number=3, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("spm_pieces.ModelProto"))


@pytest.fixture
def tokenizers():
    # Per test: conftest reseeds every test, which destroys an eager SentencePiece resource
    # (tensorflow/text#570).
    return AlbertTokenizer(SAMPLE_SPM), InGraphTokenizer(str(SAMPLE_SPM))


def _assert_same_ids(tokenizers, lines):
    python, graph = tokenizers
    ids = graph.tokenize(tf.constant([line.encode("utf-8", "surrogatepass") for line in lines]))
    for line, got in zip(lines, ids.to_list(), strict=True):
        assert got == python.encode(line), repr(line)


def test_in_graph_ids_equal_python_ids_on_varied_lines(tokenizers):
    _assert_same_ids(tokenizers, varied_lines(3000, seed=7))


def test_in_graph_ids_equal_python_ids_on_the_whole_sample_corpus(tokenizers):
    lines = [line for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines() if line]
    assert len(lines) == 14_215
    _assert_same_ids(tokenizers, lines)


def test_exact_score_ties_break_the_same_way(tmp_path):
    # The sample model with "w", "ww", "www" (and their word-initial forms) scored -1, -2, -3: every
    # segmentation of a run of w's then scores the same (-4 for "wwww": w+www, www+w, ww+ww, w+w+ww, ...),
    # so the ids depend on how each SentencePiece build breaks ties.
    model = _model_proto_class().FromString(SAMPLE_SPM.read_bytes())
    pieces = {piece.piece: piece for piece in model.pieces}
    for text, score in (("w", -1.0), ("ww", -2.0), ("www", -3.0)):
        for piece in (text, "\u2581" + text):
            if piece not in pieces:
                pieces[piece] = model.pieces.add(piece=piece, type=1)
            pieces[piece].score = score
    path = tmp_path / "ties.model"
    path.write_bytes(model.SerializeToString())
    python, graph = AlbertTokenizer(path), InGraphTokenizer(str(path))
    lines = ["wwww", "xwwww", "a wwwww b", "wwwwwww, ww-www", "kiwwwi"]
    run = python.tokenize("xwwww")[1:]  # after "▁x": one of the segmentations that all score -4
    assert "".join(run) == "wwww" and set(run) <= {"w", "ww", "www"}
    _assert_same_ids((python, graph), lines)


def test_in_graph_pieces_equal_python_pieces(tokenizers):
    python, graph = tokenizers
    lines = ["in 1990, the 3,5 and 1,000,000,", "12,", "a1,b2,", ""]
    pieces = graph.tokenize_pieces(tf.constant(lines)).to_list()
    assert [[p.decode() for p in row] for row in pieces] == [python.tokenize(line) for line in lines]


def test_invalid_utf8_is_replaced_like_python(tokenizers):
    python, graph = tokenizers
    raw = [b"caf\xc3 ok", b"\xff\xfe bad start", b"tail \xe2\x82"]
    got = graph.tokenize(tf.constant(raw)).to_list()
    assert got == [python.encode(text) for text in raw]


def test_in_graph_pack_equals_python_pack(tokenizers):
    python, graph = tokenizers
    lines = varied_lines(60, seed=3)
    pairs = list(zip(lines[:30], lines[30:], strict=True))
    for seq_length in (5, 16, 64):
        got = graph.pack(
            graph.tokenize(tf.constant([a for a, _ in pairs])),
            graph.tokenize(tf.constant([b for _, b in pairs])),
            seq_length=seq_length,
        )
        single = graph.pack(graph.tokenize(tf.constant([a for a, _ in pairs])), seq_length=seq_length)
        for index, (a, b) in enumerate(pairs):
            expected = python.pack(a, b, seq_length=seq_length)
            assert got["input_word_ids"][index].numpy().tolist() == expected.input_word_ids
            assert got["input_mask"][index].numpy().tolist() == expected.input_mask
            assert got["input_type_ids"][index].numpy().tolist() == expected.input_type_ids
            assert (
                single["input_word_ids"][index].numpy().tolist()
                == python.pack(a, seq_length=seq_length).input_word_ids
            )


def test_works_inside_tf_function_and_tf_data(tokenizers):
    python, graph = tokenizers
    lines = ["Hello, World 1,000", "Ελληνικά και Русский"]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(2).map(graph.tokenize)
    (ids,) = list(dataset)
    assert ids.to_list() == [python.encode(line) for line in lines]
    packed = tf.function(lambda t: graph.pack(graph.tokenize(t), seq_length=12))(tf.constant(lines))
    assert packed["input_word_ids"].dtype == tf.int32
    assert np.all(packed["input_word_ids"][:, 0] == 2)


# Capitals Python 3.11's str.lower lowers and TensorFlow's StringLower (older Unicode tables) does not.
NEWER_CAPITALS = "Ⱟ Ꟁ Ꟑ Ꟗ Ꟙ \U00010570\U00010571\U00010595 ⱟ"


@pytest.fixture(scope="module")
def marked_model(tmp_path_factory):
    """A model trained on marked text of several scripts with their marks kept (cased), so that marks,
    precomposed letters and their NFKD forms have pieces of their own."""
    folder = tmp_path_factory.mktemp("marked")
    corpus = folder / "corpus.txt"
    lines = [*MARKED_LINES * 20, *varied_lines(300, seed=3), *[NEWER_CAPITALS.lower()] * 20]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm_training.train(
        [str(corpus)], str(folder / "m"), vocab_size=400, do_lower_case=False, keep_accents=True,
        character_coverage=1.0,
    )  # fmt: skip
    return str(folder / "m.model")


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("keep_accents", [True, False])
def test_in_graph_ids_equal_python_ids_on_marked_scripts_with_and_without_keep_accents(
    marked_model, lower, keep_accents
):
    python = AlbertTokenizer(marked_model, do_lower_case=lower, keep_accents=keep_accents)
    graph = InGraphTokenizer(marked_model, do_lower_case=lower, keep_accents=keep_accents)
    lines = [*MARKED_LINES, *varied_lines(1000, seed=11), NEWER_CAPITALS, f"x{NEWER_CAPITALS}\x00Ⱟ"]
    _assert_same_ids((python, graph), lines)
    # The marks are kept (or dropped) as asked: a Vietnamese tone and a kana voicing mark survive only with
    # keep_accents, and then as pieces of the model, not <unk>.
    pieces = graph.tokenize_pieces(tf.constant(["Tiếng がぎ"])).to_list()[0]
    text = "".join(piece.decode() for piece in pieces)
    assert ("ế" in text and "が" in text) == keep_accents, pieces
    assert ("e" in text and "か" in text) == (not keep_accents), pieces


@pytest.mark.parametrize("commas", [True, False])
def test_text_never_becomes_a_control_id_even_where_the_model_lacks_its_characters(tmp_path, commas):
    # A cased model that has no "[" piece reads "[MASK]" in text as one unknown run: <unk>, in every
    # tokenizer, with or without a digit-comma piece in the line (the original would look its text up). A
    # model without a "," piece (from elsewhere: train_tokenizer's have one) takes the pieces path in both
    # tokenizers.
    lines = [*MARKED_LINES, "In 1990, 2000, 3,5 and 1,000,"] * 20
    if commas:
        corpus = tmp_path / "corpus.txt"
        corpus.write_text("\n".join(lines) + "\n", "utf-8")
        spm_training.train(
            [str(corpus)], str(tmp_path / "m"), vocab_size=260, do_lower_case=False, keep_accents=True
        )
        model = str(tmp_path / "m.model")
    else:
        model = spm_without_commas(tmp_path / "m", lines, vocab_size=260, hard_vocab_limit=False)
    python, graph = AlbertTokenizer(model, False, True), InGraphTokenizer(model, False, True)
    assert python.sp.piece_to_id("[") == python.unk_id
    assert (python.sp.piece_to_id(",") != python.unk_id) == commas
    lines = ["Das [MASK] x", "Das [MASK] x, in 1990, y", "[CLS] 1990, [SEP]", "<pad> 3,5 <unk>"]
    _assert_same_ids((python, graph), lines)
    assert all(python.unk_id in python.encode(line) for line in lines)
    assert not {python.cls_id, python.sep_id, python.mask_id, python.pad_id} & {
        i for line in lines for i in python.encode(line)
    }


# Any assigned code point but surrogates (a request's strings are UTF-8): code points unassigned in this
# interpreter's tables may be assigned in TensorFlow's ICU (see InGraphTokenizer). Marks, spaces and controls
# are drawn often.
_CHARACTERS = st.one_of(
    st.characters(exclude_categories=("Cs", "Cn")),
    st.characters(categories=("Mn", "Mc", "Me", "Zs", "Cc")),
    st.sampled_from(" ,0123456789`'\u2581"),
)


@pytest.mark.parametrize("keep_accents", [True, False])
def test_in_graph_ids_equal_python_ids_on_random_unicode(marked_model, keep_accents):
    settings_ = [(marked_model, lower, keep_accents) for lower in (True, False)]
    tokenizers = [(AlbertTokenizer(*each), InGraphTokenizer(*each)) for each in settings_]

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(st.text(_CHARACTERS, max_size=40), min_size=1, max_size=8))
    def same_ids(lines):
        for pair in tokenizers:
            _assert_same_ids(pair, lines)

    same_ids()


@pytest.mark.parametrize("lower", [True, False])
def test_texts_of_rank_two_tokenize_row_by_row(lower):
    graph = InGraphTokenizer(str(SAMPLE_SPM), do_lower_case=lower)
    texts = [["In 1990, 3,5 and", "B\x00C"], ["c 1,000,", "Dd ee"]]
    got = graph.tokenize(tf.constant(texts)).to_list()
    assert got == [graph.tokenize(tf.constant(row)).to_list() for row in texts]


def test_pack_refuses_batches_of_different_sizes(tokenizers):
    _, graph = tokenizers
    with pytest.raises(tf.errors.InvalidArgumentError, match="different batch sizes"):
        graph.pack(graph.tokenize(tf.constant(["a", "b"])), graph.tokenize(tf.constant(["c"])), seq_length=8)


def test_pack_keeping_the_tail_of_the_second_segment_cuts_the_first(tokenizers):
    # The original RACE (race_utils): the choice (question and option) keeps its last max_qa_length tokens,
    # the article is cut to what is left of seq_length - 3. Ids by hand: A = 100.., B = 200...
    _, graph = tokenizers
    firsts = [list(range(100, 100 + n)) for n in (0, 3, 12, 12, 12)]
    seconds = [list(range(200, 200 + n)) for n in (2, 2, 2, 6, 14)]
    got = graph.pack(
        tf.ragged.constant(firsts, tf.int32),
        tf.ragged.constant(seconds, tf.int32),
        seq_length=12,
        keep_b_tail=4,
    )
    for index, (a, b) in enumerate(zip(firsts, seconds, strict=True)):
        kept_b = b[-4:]  # at most 4 of B, from its end
        kept_a = a[: 12 - 3 - len(kept_b)]
        ids = [2, *kept_a, 3, *kept_b, 3]
        padding = [0] * (12 - len(ids))
        assert got["input_word_ids"][index].numpy().tolist() == ids + padding, index
        assert (
            got["input_type_ids"][index].numpy().tolist()
            == [0] * (len(kept_a) + 2) + [1] * (len(kept_b) + 1) + padding
        ), index
        assert got["input_mask"][index].numpy().tolist() == [1] * len(ids) + padding, index


def test_eager_calls_take_a_list_of_str(tokenizers):
    # As docs/data.md calls it: graph_tokenizer.tokenize([text]).
    python, graph = tokenizers
    text = "The café's ``quoted'' price rose 1,000 times."
    assert graph.tokenize([text]).to_list()[0] == python.encode(text)
    normalized = [python.normalize(t).encode() for t in (text, "Ça")]
    assert graph.normalize([text, "Ça"]).numpy().tolist() == normalized
