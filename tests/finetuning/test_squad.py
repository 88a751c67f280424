"""SQuAD JSON → examples → windowed features, and logits → answer text."""

import json
import logging
import os

import numpy as np
import pytest

from albert_tf.finetuning import metrics, squad
from albert_tf.finetuning.glue import DataError
from albert_tf.text.tokenizer import AlbertTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPM = os.path.join(ROOT, "albert_tf", "sample", "spm_8k.model")


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(SPM)


@pytest.fixture(scope="module")
def corpus_lines():
    with open(os.path.join(ROOT, "data", "sample", "sample_corpus.txt"), encoding="utf-8") as file:
        return [line.strip() for line in file if len(line.split()) > 6][:400]


def squad_file(path, paragraphs, version="v2.0"):
    path.write_text(json.dumps({"version": version, "data": [{"title": "T", "paragraphs": paragraphs}]}))
    return str(path)


def question(qas_id, text, answers=(), impossible=None):
    record = {"id": qas_id, "question": text, "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    if impossible is not None:
        record["is_impossible"] = impossible
    return record


CONTEXT = "Python was created by Guido van Rossum. It was released in 1991, in the Netherlands."


def test_reads_answers_unanswerable_and_unlabelled_questions(tmp_path):
    path = squad_file(tmp_path / "v2.json", [{"context": CONTEXT, "qas": [
        question("q1", "Who created Python?", [("Guido van Rossum", 22), ("Guido", 22)], impossible=False),
        question("q2", "Who created Java?", impossible=True),
        question("q3", "Where was it released?"),  # a question to predict: no answers given
    ]}])  # fmt: skip
    q1, q2, q3 = squad.read_squad(path)
    assert (q1.qas_id, q1.answers, q1.answer_start, q1.is_impossible) == (
        "q1",
        ("Guido van Rossum", "Guido"),
        22,
        False,
    )
    assert (q2.answers, q2.answer_start, q2.is_impossible) == ((), None, True)
    assert (q3.answers, q3.answer_start, q3.is_impossible) == ((), None, False)
    assert q1.context == CONTEXT and q2.question == "Who created Java?"


def test_answers_not_in_the_context_are_scored_but_not_trained_on(tmp_path, caplog):
    """As the official scripts score them, every gold answer counts; training takes the answers it can find
    in the context, and the questions that have one."""
    path = squad_file(tmp_path / "v1.json", [{"context": CONTEXT, "qas": [
        question("moved", "When?", [("1991", 3)]),  # wrong offset: the nearest occurrence is taken
        question("half", "Who?", [("Linus", 0), ("Guido", 22)]),
        question("lost", "What?", [("Rust", 0)]),
    ]}])  # fmt: skip
    with caplog.at_level(logging.WARNING):
        examples = squad.read_squad(path)
    assert [e.qas_id for e in examples] == ["moved", "half", "lost"]
    assert examples[0].answer_start == CONTEXT.index("1991")
    # The answer found comes first: the one trained on, at answer_start.
    assert (examples[1].answers, examples[1].answer_start) == (("Guido", "Linus"), CONTEXT.index("Guido"))
    assert (examples[2].answers, examples[2].answer_start) == (("Rust",), None)
    assert [e.qas_id for e in squad.trainable(examples)] == ["moved", "half"]
    assert "2 answer(s) whose text is not in the context" in caplog.text and path in caplog.text
    assert "lost" in caplog.text
    # Scored on all three questions against every gold answer: "Linus" and "Rust" are right.
    gold = {e.qas_id: list(e.answers) for e in examples}
    predictions = {"moved": "1991", "half": "Linus", "lost": "Rust"}
    assert metrics.squad_scores(predictions, gold, version_2=False)["exact_match"] == 100.0
    assert metrics.squad_scores({**predictions, "lost": ""}, gold, version_2=False)["exact_match"] == (
        pytest.approx(200 / 3)
    )


def test_bad_files_are_named(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"data": [\n  {"title": }\n]}')
    with pytest.raises(DataError, match=r"broken\.json:2: not SQuAD JSON"):
        squad.read_squad(str(broken))
    missing = squad_file(tmp_path / "missing.json", [{"context": CONTEXT, "qas": [{"id": "q7"}]}])
    with pytest.raises(DataError, match=r"missing\.json: question q7 has no 'question'"):
        squad.read_squad(missing)
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(DataError, match=r"list\.json: expected an object"):
        squad.read_squad(str(tmp_path / "list.json"))


def test_spans_map_each_piece_to_its_characters(tokenizer, corpus_lines):
    text = "  The Café opened in 1,990s;  ﬁle   OK."
    ids, spans = squad.tokenize_with_spans(tokenizer, text)
    assert ids == tokenizer.encode(text)
    pieces = [tokenizer.id_to_piece(i) for i in ids]
    surfaces = [text[start:end] for start, end in spans]
    pairs = list(zip(pieces, surfaces, strict=True))
    assert pairs[:4] == [("▁the", "The"), ("▁ca", "Ca"), ("f", "f"), ("e", "é")]
    # A ligature changes the word's length: each of its pieces stands for the whole word.
    assert {surface for piece, surface in pairs if "fi" in piece or "le" in piece} == {"ﬁle"}
    for line in corpus_lines:
        ids, spans = squad.tokenize_with_spans(tokenizer, line)
        assert ids == tokenizer.encode(line)
        for token_id, (start, end) in zip(ids, spans, strict=True):
            piece = tokenizer.id_to_piece(token_id).replace("▁", "")
            if token_id != tokenizer.unk_id:
                assert tokenizer.normalize(line[start:end]) == piece, (line, piece)


def long_example(lines, answer_line=5):
    context = " ".join(lines[:12])
    answer = " ".join(lines[answer_line].split()[2:5])
    start = context.index(lines[answer_line]) + lines[answer_line].index(answer)
    return squad.SquadExample(f"line{answer_line}", "What does the text say here?", context, (answer,), start)


def test_windows_cover_the_context_and_give_each_token_one_max_context(tokenizer, corpus_lines):
    example = long_example(corpus_lines)
    doc_ids, _ = squad.tokenize_with_spans(tokenizer, example.context)
    query = tokenizer.encode(example.question)
    features = squad.squad_features([example], tokenizer, seq_length=64, doc_stride=24, max_query_length=5)
    offset = 2 + 5
    assert len(features) > 4
    seen = np.zeros(len(doc_ids), int)
    best = np.zeros(len(doc_ids), int)
    start = 0
    for window in range(len(features)):
        ids = features.inputs["input_word_ids"][window]
        length = int(features.inputs["input_mask"][window].sum())
        context = ids[offset : length - 1]
        assert list(ids[:offset]) == [tokenizer.cls_id, *query[:5], tokenizer.sep_id]
        assert ids[length - 1] == tokenizer.sep_id and not ids[length:].any()
        assert list(context) == doc_ids[start : start + len(context)]
        types = features.inputs["input_type_ids"][window]
        assert not types[:offset].any() and types[offset:length].all() and not types[length:].any()
        inside = features.char_spans[window][:, 0] >= 0
        assert inside.sum() == len(context) and inside[offset : length - 1].all()
        seen[start : start + len(context)] += 1
        best[start : start + len(context)] += features.max_context[window][offset : length - 1]
        assert not features.max_context[window][~inside].any()
        start += 24
    assert (seen >= 1).all() and (seen > 1).any() and (best == 1).all()


def test_targets_point_at_the_answer_in_the_windows_that_hold_it(tokenizer, corpus_lines):
    example = long_example(corpus_lines)
    features = squad.squad_features([example], tokenizer, seq_length=64, doc_stride=24, max_query_length=5)
    # Which windows hold the whole answer, from their context characters alone (not from the targets).
    answer_start = example.answer_start
    answer_end = answer_start + len(example.answers[0])
    holding = []
    for window, spans in enumerate(features.char_spans):
        context = spans[spans[:, 0] >= 0]
        if context[:, 0].min() <= answer_start and context[:, 1].max() >= answer_end:
            holding.append(window)
    assert 2 <= len(holding) < len(features)  # overlapping windows: the answer is in more than one
    assert np.flatnonzero(features.answerable).tolist() == holding
    for window in range(len(features)):
        start, end = features.start_positions[window], features.end_positions[window]
        if window in holding:
            first, last = features.char_spans[window][start][0], features.char_spans[window][end][1]
            assert example.context[first:last] == example.answers[0]
        else:
            assert start == end == 0


def test_gold_logits_give_back_the_gold_answers(tokenizer, corpus_lines):
    examples = [long_example(corpus_lines, line) for line in (1, 5, 9)]
    examples.append(squad.SquadExample("none", "Is it here?", examples[0].context, (), None, True))
    features = squad.squad_features(examples, tokenizer, seq_length=64, doc_stride=24, max_query_length=5)
    rows = np.arange(len(features))
    start_logits = np.random.default_rng(0).normal(size=(len(features), 64))
    end_logits = start_logits[:, ::-1].copy()
    start_logits[rows, features.start_positions] += 100 * features.answerable
    end_logits[rows, features.end_positions] += 100 * features.answerable
    outputs = {"start_logits": start_logits, "end_logits": end_logits,
               "answerable_logits": np.where(features.answerable, 5.0, -5.0)}  # fmt: skip
    answers, no_answer = squad.answer_texts(examples, features, outputs)
    gold = {e.qas_id: list(e.answers) for e in examples}
    assert [answers[e.qas_id] for e in examples[:3]] == [e.answers[0] for e in examples[:3]]
    assert answers["none"] == "" and no_answer["none"] == pytest.approx(1 / (1 + np.exp(-5.0)))
    assert no_answer[examples[0].qas_id] == pytest.approx(1 / (1 + np.exp(5.0)))
    assert metrics.squad_scores(answers, gold, version_2=True) == {"exact_match": 100.0, "f1": 100.0}


def test_bytes_that_are_not_utf8_are_named_or_replaced(tmp_path):
    path = tmp_path / "dev.json"
    squad_file(path, [{"context": "Tom is here.", "qas": [{"id": "q", "question": "Who?", "answers": []}]}])
    path.write_bytes(path.read_bytes().replace(b"Who?", b"Who\xff?"))
    with pytest.raises(DataError, match=r"dev\.json:1: byte 0xff at offset \d+ is not UTF-8"):
        squad.read_squad(str(path))
    (example,) = squad.read_squad(str(path), errors="replace")
    assert example.question == "Who\ufffd?"
