"""How contexts are windowed and answers chosen (SpanSettings) and the checks run_squad, the span export and
`predict` share, in plain Python: a span model stands in as what SpanSettings.of reads."""

import dataclasses
import types

import pytest

from albert_tf.text.span_settings import SpanSettings, check_answer_settings, check_window_settings

NAMES = ["doc_stride", "max_answer_length", "max_query_length", "n_best_size", "null_score_threshold"]


def span_model(span_settings=None, max_seq_length=None):
    """A span model as SpanSettings.of reads it: its span_settings and its preprocessing's length."""
    preprocessing = None if max_seq_length is None else types.SimpleNamespace(max_seq_length=max_seq_length)
    return types.SimpleNamespace(span_settings=span_settings or {}, preprocessing=preprocessing)


def test_the_defaults_are_run_squads_flags():
    assert dataclasses.asdict(SpanSettings()) == {
        "max_seq_length": 384,
        "doc_stride": 128,
        "max_query_length": 64,
        "n_best_size": 20,
        "max_answer_length": 30,
        "null_score_threshold": 0.0,
    }


@pytest.mark.parametrize("seq_length, doc_stride, max_query_length", [(4, 1, 1), (5, 0, 1), (5, 1, 0)])
def test_windows_without_room_are_refused_naming_the_settings(seq_length, doc_stride, max_query_length):
    with pytest.raises(ValueError) as error:
        check_window_settings(seq_length, doc_stride, max_query_length)
    assert str(error.value) == (
        f"seq_length {seq_length}, max_query_length {max_query_length} and doc_stride {doc_stride} leave no "
        "room for the question and the context"
    )


def test_the_smallest_windows_and_answers_pass():
    check_window_settings(5, 1, 1)  # [CLS] one question token [SEP] one context token [SEP]
    check_answer_settings(1, 1)
    assert SpanSettings(
        max_seq_length=5, doc_stride=1, max_query_length=1, n_best_size=1, max_answer_length=1
    )


@pytest.mark.parametrize(
    "n_best_size, max_answer_length, message",
    [
        (0, 30, "--n_best_size must be at least 1, got 0"),
        (-2, 30, "--n_best_size must be at least 1, got -2"),
        (20, 0, "--max_answer_length must be at least 1, got 0"),
    ],
)
def test_answer_settings_that_choose_nothing_name_the_flag(n_best_size, max_answer_length, message):
    with pytest.raises(ValueError) as error:
        check_answer_settings(n_best_size, max_answer_length)
    assert str(error.value) == message
    with pytest.raises(ValueError) as error:
        SpanSettings(n_best_size=n_best_size, max_answer_length=max_answer_length)
    assert str(error.value) == message


def test_a_models_settings_at_its_length_with_the_given_ones_replacing_them():
    model = span_model({"doc_stride": 7, "n_best_size": 5}, max_seq_length=40)
    assert SpanSettings.of(model) == SpanSettings(max_seq_length=40, doc_stride=7, n_best_size=5)
    given = SpanSettings.of(model, 64, doc_stride=None, n_best_size=3, max_answer_length=4)
    assert given == SpanSettings(max_seq_length=64, doc_stride=7, n_best_size=3, max_answer_length=4)
    assert SpanSettings.of(span_model(), 32) == SpanSettings(max_seq_length=32)
    assert SpanSettings.of(object(), 16) == SpanSettings(max_seq_length=16)  # no settings, no preprocessing
    assert SpanSettings.of(span_model({"doc_stride": 7})) is None  # the length is not known
    assert SpanSettings.of(object()) is None


def test_unknown_settings_are_named_with_the_known_ones():
    message = f"unknown span settings ['max_seq_length', 'stride']; the settings are {NAMES}"
    with pytest.raises(ValueError) as error:
        SpanSettings.of(span_model({"max_seq_length": 30}, 40), stride=3)
    assert str(error.value) == message


def test_a_model_keeps_all_but_the_length():
    settings = SpanSettings(40, doc_stride=7, max_query_length=6, n_best_size=5, max_answer_length=4,
                            null_score_threshold=0.5)  # fmt: skip
    assert settings.decoding() == {
        "doc_stride": 7,
        "max_query_length": 6,
        "n_best_size": 5,
        "max_answer_length": 4,
        "null_score_threshold": 0.5,
    }
    assert SpanSettings.of(span_model(settings.decoding(), 40)) == settings
