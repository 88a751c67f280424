import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from albert_tf.text.tf_tokenizer import InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_CORPUS, SAMPLE_SPM
from tests.text.text_samples import varied_lines


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
