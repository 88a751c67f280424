"""The tokenizer inside a LiteRT model (albert_tf.serving.litert_text): converted with builtins and
tensorflow_text's custom ops only, run by ai-edge-litert's interpreter, it packs AlbertTokenizer's ids."""

import functools
import random

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text
from ai_edge_litert.interpreter import InterpreterWithCustomOps
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorflow.lite.python import schema_py_generated as schema

from albert_tf.serving import litert_text
from albert_tf.serving.litert_text import CUSTOM_OPS, DeviceTokenizer
from albert_tf.text import spm_training
from albert_tf.text.tokenizer import AlbertTokenizer
from tests.helpers import SAMPLE_SPM, spm_without_commas, without_commas
from tests.text.text_samples import MARKED_LINES, varied_lines

SEQ_LENGTH = 64
PAIR_LENGTH = 16

# Text of several scripts and the cases normalization must get right in context.
SCRIPTS = (
    *MARKED_LINES,
    "ΟΔΟΣ ΣΟΦΟΣ, Σ 5Σ ΑΣ. ΣΣ σοφός",
    "Привет, МИР! Ёлка 1,000,000, 3,5",
    "``quoted'' it''s ｀｀fullwidth＇＇ `\u0301` x",
    "Ⅻ ① ﬁ ＡＢＣ１２３ ｶﾀｶﾅ ℃ ™ x² H₂O İstanbul ǅ",
    "a\u00a0b\u2003c\u3000d\te\n f \x85 g",
    "\ufdd0 marked \ufdd01 text \ufffd",
    "",
    "   ",
)


def _interpreter(tokenizer, pair, seq_length):
    """(the flatbuffer of tokenizer.pack traced for tf.string [batch] text (and text_b), a function of lists
    of str or bytes → dict of int32 [batch, seq_length] arrays that runs it in LiteRT's interpreter)."""
    text = tf.TensorSpec([None], tf.string)
    if pair:

        @tf.function(input_signature=[text, text])
        def function(text, text_b):
            return tokenizer.pack(text, text_b, seq_length=seq_length)

    else:

        @tf.function(input_signature=[text])
        def function(text):
            return tokenizer.pack(text, seq_length=seq_length)

    converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], tokenizer)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    flatbuffer = converter.convert()
    runner = InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_content=flatbuffer
    ).get_signature_runner()
    return flatbuffer, lambda **texts: runner(**{k: np.array(v, object) for k, v in texts.items()})


@functools.cache
def _converted(do_lower_case=True, keep_accents=False, pair=False):
    """The sample model's converted tokenizer (built once per process and setting: a few seconds)."""
    tokenizer = DeviceTokenizer(str(SAMPLE_SPM), do_lower_case=do_lower_case, keep_accents=keep_accents)
    return _interpreter(tokenizer, pair, PAIR_LENGTH if pair else SEQ_LENGTH)


def _assert_packs_as_python(run, python, texts, texts_b=None, seq_length=SEQ_LENGTH):
    got = run(text=texts) if texts_b is None else run(text=texts, text_b=texts_b)
    for index, text in enumerate(texts):
        expected = python.pack(text, None if texts_b is None else texts_b[index], seq_length=seq_length)
        for name in ("input_word_ids", "input_mask", "input_type_ids"):
            assert got[name][index].tolist() == getattr(expected, name), (name, text)


@pytest.mark.slow
def test_the_flatbuffer_has_builtins_and_the_named_custom_ops_only():
    flatbuffer, _ = _converted()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(flatbuffer, 0))
    builtin_names = {value: name for name, value in vars(schema.BuiltinOperator).items() if name.isupper()}
    custom, builtin = set(), set()
    for code in model.operatorCodes:
        if code.customCode:
            custom.add(code.customCode.decode())
        else:
            builtin.add(builtin_names[max(code.builtinCode, code.deprecatedBuiltinCode)])
    assert custom == set(CUSTOM_OPS)  # no Flex op (a Flex op is a custom op named Flex...)
    assert "CUSTOM" not in builtin and builtin <= set(builtin_names.values())
    assert {"GATHER", "CUMSUM"} <= builtin


@pytest.mark.slow
def test_single_texts_pack_as_python_on_varied_lines():
    _, run = _converted()
    _assert_packs_as_python(run, AlbertTokenizer(SAMPLE_SPM), [*SCRIPTS, *varied_lines(300, seed=5)])


@pytest.mark.slow
def test_pairs_are_truncated_as_python_truncates_them():
    _, run = _converted(pair=True)
    lines = [*SCRIPTS, *varied_lines(100, seed=9)]
    partners = lines[7:] + lines[:7]
    _assert_packs_as_python(run, AlbertTokenizer(SAMPLE_SPM), lines, partners, seq_length=PAIR_LENGTH)


@pytest.mark.slow
def test_invalid_utf8_becomes_replacement_characters_as_in_python():
    _, run = _converted()
    raw = [
        b"caf\xc3 ok",
        b"\xff\xfe bad start",
        b"tail \xe2\x82",
        b"\xed\xa0\x80 \xf0\x9f\x98 \xf4\x90\x80\x80",
    ]
    _assert_packs_as_python(run, AlbertTokenizer(SAMPLE_SPM), raw)


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
@pytest.mark.parametrize("keep_accents", [True, False])
def test_every_setting_packs_as_python_singles_and_pairs(do_lower_case, keep_accents):
    python = AlbertTokenizer(SAMPLE_SPM, do_lower_case=do_lower_case, keep_accents=keep_accents)
    lines = [*SCRIPTS, *varied_lines(200, seed=11)]
    _, single = _converted(do_lower_case, keep_accents)
    _assert_packs_as_python(single, python, lines)
    _, pair = _converted(do_lower_case, keep_accents, pair=True)
    _assert_packs_as_python(pair, python, lines, lines[3:] + lines[:3], seq_length=PAIR_LENGTH)


@pytest.mark.slow
def test_a_model_trained_on_text_without_commas_packs_digit_commas_as_python(tmp_path):
    """train_tokenizer gives a corpus without commas a "," piece, so its model goes on a device and splits
    "1990," as Python does; a model from elsewhere without one is refused, naming what it lacks."""
    lines = [*MARKED_LINES, *varied_lines(300, seed=7)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(without_commas(lines)) + "\n", "utf-8")
    spm_training.train([str(corpus)], str(tmp_path / "spm"), vocab_size=300, character_coverage=1.0)
    python = AlbertTokenizer(tmp_path / "spm.model")
    _, run = _interpreter(DeviceTokenizer(str(tmp_path / "spm.model")), False, SEQ_LENGTH)
    texts = [*SCRIPTS, "In 1990, 2000, 3,5 and 1,000,", "٣, ๓, 12,,", *lines[-50:]]
    _assert_packs_as_python(run, python, texts)
    assert python.sp.piece_to_id(",") in python.encode("In 1990, 2000")
    foreign = spm_without_commas(tmp_path / "foreign", lines, vocab_size=500, hard_vocab_limit=False)
    with pytest.raises(ValueError, match="needs a SentencePiece model with a ',' piece"):
        DeviceTokenizer(foreign)


# Characters the module documents as read with less context than Python's lowercasing has (final sigma
# after or before case-ignorable characters), and characters step 1 deletes between two the model's
# normalizer composes: random text leaves them out; test_final_sigma checks the sigma in ordinary text.
_SIGMAS = "\u03a3\u03f9\U0001d6ba\U0001d6f4\U0001d72e\U0001d768\U0001d7a2"


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters=_SIGMAS), max_size=30),
        min_size=1,
        max_size=8,
    )
)
def test_random_unicode_packs_as_python(texts):
    _, run = _converted()
    _assert_packs_as_python(run, _python(), texts)


@functools.cache
def _python():
    return AlbertTokenizer(SAMPLE_SPM)


@pytest.mark.slow
def test_final_sigma_in_greek_words(tmp_path):
    """On a model with Greek pieces (the sample model has none: its ids could not tell "σ" from "ς")."""
    words = ["ΟΔΟΣ", "ΣΟΦΟΣ ΣΟΦΟΣ.", "(ΟΣ)", "Σ", "ΑΣ, ΑΣΑ", "5Σ", "ΣΣ", "ΑΣΣ", "x ΝΟΜΟΣ\tΤΕΛΟΣ", "ὈΔΥΣΣΕΎΣ"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*MARKED_LINES, *varied_lines(300, seed=7), *words]) + "\n", "utf-8")
    spm_training.train([str(corpus)], str(tmp_path / "spm"), vocab_size=300, character_coverage=1.0)
    python = AlbertTokenizer(tmp_path / "spm.model")
    assert {python.sp.piece_to_id("σ"), python.sp.piece_to_id("ς")}.isdisjoint({python.sp.unk_id()})
    assert python.encode("ΑΣΑ ΑΣ") != python.encode("ΑςΑ Ας")  # the ids tell them apart
    _, run = _interpreter(DeviceTokenizer(str(tmp_path / "spm.model")), False, SEQ_LENGTH)
    _assert_packs_as_python(run, python, words)


def test_step_one_maps_each_character_as_preprocess_text_does():
    mapping = litert_text.character_map(True, False)
    assert mapping["É".encode()] == "e" and mapping["\u3000".encode()] == " "
    assert mapping["\u0301".encode()] == litert_text.MARK + "1"  # deleted, but keeps quotes apart
    assert mapping["é".encode()] == "e" and b"a" not in mapping  # ASCII other than capitals: unlisted
    assert mapping[b"\xc3"] == mapping[b"\xf0\x9f\x98"] == "\ufffd"  # ill-formed: one U+FFFD each
    assert mapping["\u03a3".encode()] == mapping["\U0001d6ba".encode()] == litert_text.MARK + "4"
    kept = litert_text.character_map(False, True)
    assert "\u0301".encode() not in kept and "É".encode() not in kept and "｀".encode() not in kept


def test_a_normalizer_sentencepiece_wrote_is_read_back_rule_for_rule():
    """SentencePiece's builder stores the subtrees of rules that end alike once, for several beginnings (a
    darts-clone trie shared like a DAWG): every rule of a set with many such suffixes is read back."""
    rng = random.Random(5)
    alphabet, targets = "ab\u0301\u030aéﬁ\U0001d538", ("", "x", "é", "ab", "\u0301")
    rules = {}
    while len(rules) < 3000:
        rules["".join(rng.choices(alphabet, k=rng.randint(1, 5)))] = rng.choice(targets)
    assert litert_text._charsmap_rules(litert_text._compile_charsmap(rules)) == rules
