"""Questions and contexts → answers, in TensorFlow ops: the context windows `run_squad` builds
(span_windows), a span model's logits for them, and `run_squad`'s decoding (span_decoding).

One path for the span SavedModel's serving_default and for `AlbertSpanLabeler.predict` on raw text, so a
question gets the same answer from either. `run` decides how the windows meet the model: the export runs
them in bounded sub-batches inside its graph, `predict` in Python-sized chunks.
"""

import numpy as np
import tensorflow as tf

from albert_tf.text import span_decoding, span_windows
from albert_tf.text.tokenizer import AlbertTokenizer


def answers(run, tokenizer, surface_lengths, questions, contexts, settings):
    """Each question's best answer in its context.

    Args:
      run: dict of int32 [windows, width] (the encoder's inputs) → dict with float32 start_logits and
        end_logits [windows, width] and, for a model with an answerability head, answerable_logits
        [windows].
      tokenizer: text.tf_tokenizer.InGraphTokenizer.
      surface_lengths: int32 [vocab], the characters each piece stands for
        (`AlbertTokenizer.surface_lengths`).
      questions, contexts: tf.string [batch], the same batch (the caller checks: it knows their names);
        contexts with invalid UTF-8 are read with replacement characters (offsets count those).
      settings: text.span_settings.SpanSettings.

    Returns:
      dict: answer_text tf.string [batch] ("" without an answer), answer_start and answer_end int32 [batch]
      (the answer's [start, end) characters in its context; NO_SPAN without one), answer_score float32
      [batch] (start + end logit); with answerability also answerable_logits and no_answer_probability
      float32 [batch], the answer kept only where the answerable logit reaches null_score_threshold.
    """
    s = settings
    contexts = tf.strings.unicode_transcode(contexts, "UTF-8", "UTF-8", errors="replace")
    with tf.device("/device:CPU:0"):  # tensorflow-text's ops run on the CPU only
        windows = span_windows.windows(
            tokenizer, surface_lengths, questions, contexts, s.max_seq_length, s.doc_stride,
            s.max_query_length,
        )  # fmt: skip
    outputs = run({name: windows[name] for name in ("input_word_ids", "input_mask", "input_type_ids")})
    best = span_decoding.best_spans(
        outputs["start_logits"], outputs["end_logits"], windows["char_starts"], windows["char_ends"],
        windows["max_context"], windows["window_example"], tf.shape(questions)[0],
        n_best_size=s.n_best_size, max_answer_length=s.max_answer_length,
        answerable_logits=outputs.get("answerable_logits"),
    )  # fmt: skip
    start, end = best["char_start"], best["char_end"]
    result = {"answer_score": best["score"]}
    if "answerable_logit" in best:
        result["answerable_logits"] = best["answerable_logit"]
        result["no_answer_probability"] = tf.sigmoid(-best["answerable_logit"])
        answered = best["answerable_logit"] >= s.null_score_threshold
        start = tf.where(answered, start, span_decoding.NO_SPAN)
        end = tf.where(answered, end, span_decoding.NO_SPAN)
    found = start >= 0
    text = tf.strings.substr(contexts, tf.maximum(start, 0), tf.maximum(end - start, 0), unit="UTF8_CHAR")
    result.update(answer_text=tf.where(found, text, ""), answer_start=start, answer_end=end)
    return result


def predict_answers(model, tokenizer, questions, contexts, settings, batch_size):
    """`answers` for lists of questions and contexts, eagerly (AlbertSpanLabeler.predict on raw text):
    `batch_size` questions at a time, the model on at most `batch_size` windows per call, so memory stays
    that of a few windows however long a context.

    Returns:
      `answers`' dict as NumPy arrays [len(questions)], answer_text as str.
    """
    lengths = tf.constant(
        AlbertTokenizer(tokenizer.model_file, tokenizer.do_lower_case, tokenizer.keep_accents).surface_lengths
    )

    def run(features):
        count = int(tf.shape(features["input_word_ids"])[0])
        chunks = [
            {name: value[start : start + batch_size] for name, value in features.items()}
            for start in range(0, max(count, 1), batch_size)
        ]
        parts = [model(chunk, training=False) for chunk in chunks]
        return {name: tf.concat([part[name] for part in parts], axis=0) for name in parts[0]}

    results = [
        answers(
            run,
            tokenizer,
            lengths,
            tf.constant(questions[start : start + batch_size]),
            tf.constant(contexts[start : start + batch_size]),
            settings,
        )  # fmt: skip
        for start in range(0, len(questions), batch_size)
    ]
    merged = {name: np.concatenate([result[name].numpy() for result in results]) for name in results[0]}
    merged["answer_text"] = np.array([text.decode() for text in merged["answer_text"]], dtype=object)
    return merged
