"""Questions and contexts → answers (text.span_answers) with a stand-in span model that points at given
pieces: the answer is the context's text between them, in characters, chosen as the settings say.
tests/models/test_task_models.py checks the same path with a real model against run_squad's decoding."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.text import span_answers
from albert_tf.text.span_settings import SpanSettings
from albert_tf.text.tf_tokenizer import InGraphTokenizer
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_SPM

# "é" before the answer: characters and UTF-8 bytes differ from there on.
CONTEXT = "Café au lait was on the table when Guido van Rossum wrote Python in 1991 at home."
QUESTION = "Who wrote Python?"
SETTINGS = SpanSettings(
    max_seq_length=24, doc_stride=6, max_query_length=6, n_best_size=5, max_answer_length=8
)


def pointing_model(first, last, answerable=None, calls=None):
    """A span model whose start logit is 10 on the piece ids of `first` and whose end logit is 10 on those of
    `last` (0 elsewhere); with `answerable`, that answerable logit for every window. `calls` gets each call's
    batch size."""
    python = AlbertTokenizer(SAMPLE_SPM)
    start_id, end_id = python.encode(first)[0], python.encode(last)[-1]

    def model(features, training):
        assert training is False
        ids = features["input_word_ids"]
        if calls is not None:
            calls.append(int(tf.shape(ids)[0]))
        outputs = {
            "start_logits": tf.where(ids == start_id, 10.0, 0.0),
            "end_logits": tf.where(ids == end_id, 10.0, 0.0),
        }
        if answerable is not None:
            outputs["answerable_logits"] = tf.fill(tf.shape(ids)[:1], answerable)
        return outputs

    return model


@pytest.fixture
def tokenizer():
    return InGraphTokenizer(str(SAMPLE_SPM))


def test_the_answer_is_the_contexts_text_between_the_pieces_pointed_at(tokenizer):
    calls = []
    got = span_answers.predict_answers(
        pointing_model("Guido", "Rossum", calls=calls), tokenizer, [QUESTION, "Where?"],
        [CONTEXT, "At home."], SETTINGS, batch_size=2,
    )  # fmt: skip
    start = CONTEXT.index("Guido")
    # "At home." has neither piece: without an answerability head a question still gets its best span, the
    # first of equal ones.
    assert list(got["answer_text"]) == ["Guido van Rossum", "At"]
    assert got["answer_text"].dtype == object
    assert (got["answer_start"].tolist(), got["answer_end"].tolist()) == ([start, 0], [start + 16, 2])
    assert got["answer_score"].tolist() == [20.0, 0.0]
    assert set(got) == {"answer_text", "answer_start", "answer_end", "answer_score"}
    assert calls and max(calls) <= 2 and sum(calls) > 2  # the long context's windows, two at a time


def test_one_call_for_few_windows(tokenizer):
    calls = []
    got = span_answers.predict_answers(
        pointing_model("Guido", "Rossum", calls=calls), tokenizer, ["Who?"], ["Guido van Rossum."], SETTINGS,
        batch_size=8,
    )  # fmt: skip
    assert list(got["answer_text"]) == ["Guido van Rossum"] and calls == [1]


@pytest.mark.parametrize("threshold, answered", [(0.5, True), (0.25, True), (0.75, False)])
def test_an_answer_is_kept_where_the_answerable_logit_reaches_the_threshold(tokenizer, threshold, answered):
    settings = SpanSettings(**{**SETTINGS.__dict__, "null_score_threshold": threshold})
    got = span_answers.predict_answers(
        pointing_model("Guido", "Rossum", answerable=0.5), tokenizer, [QUESTION], [CONTEXT], settings, 4
    )
    assert list(got["answer_text"]) == (["Guido van Rossum"] if answered else [""])
    assert (got["answer_start"][0] >= 0) == answered
    np.testing.assert_allclose(got["answerable_logits"], [0.5])
    np.testing.assert_allclose(got["no_answer_probability"], [1 / (1 + np.exp(0.5))], rtol=1e-6)


def test_contexts_with_invalid_utf8_are_read_with_replacement_characters(tokenizer):
    context = b"Caf\xe9 \xff: Guido van Rossum wrote it."
    got = span_answers.answers(
        lambda features: pointing_model("Guido", "Rossum")(features, training=False), tokenizer,
        tf.constant(AlbertTokenizer(SAMPLE_SPM).surface_lengths), tf.constant([b"Who?"]),
        tf.constant([context]), SETTINGS,
    )  # fmt: skip
    assert got["answer_text"].numpy().tolist() == [b"Guido van Rossum"]
    assert got["answer_start"].numpy().tolist() == [context.decode("utf-8", "replace").index("Guido")]
