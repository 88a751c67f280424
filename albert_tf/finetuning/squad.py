"""SQuAD v1.1 / v2.0 JSON → examples → windowed features → tf.data, and predicted logits → answer text.

    examples = read_squad("train-v1.1.json")
    features = squad_features(examples, AlbertTokenizer("spm.model"), seq_length=384, doc_stride=128)
    dataset = span_dataset(features, batch_size=48, is_training=True)
    ...
    answers = answer_texts(examples, features, model.predict(span_dataset(features, 64)))

As the original ALBERT/BERT SQuAD code: `[CLS] question [SEP] context window [SEP]`, the question cut to
`max_query_length` tokens, the context split into windows of what is left, `doc_stride` tokens apart; a
token's answer scores count only in the window where it has the most context on both sides. A window that
does not hold the answer (and every window of an unanswerable v2.0 question) targets [CLS] (position 0)
and, for the answerability head, 0.

Each context token keeps the character span of the text it came from, so a predicted span maps back to the
original context (case, accents and spacing as written). The context is split on whitespace and each word
tokenized alone: SentencePiece never joins pieces across whitespace, so the ids are those of the whole text.
"""

import dataclasses
import json
import logging

import numpy as np

from albert_tf.finetuning.glue import DataError, read_task_text
from albert_tf.text import span_settings


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one context.

    answers: the gold answer texts, every one the file gives, those found in the context first (dev sets
      list several; () for an unanswerable v2.0 question, or when the file gives none: questions to
      predict).
    answer_start: character offset in context of the answer trained on (the first one), or None when no
      answer's text is in the context.
    """

    qas_id: str
    question: str
    context: str
    answers: tuple
    answer_start: int | None
    is_impossible: bool = False


def read_squad(path, errors="strict"):
    """Examples of a SQuAD v1.1 or v2.0 JSON file, in file order.

    An answer whose text is not in the context (neither at its answer_start nor anywhere else) cannot be
    trained on: such answers are counted and reported in one warning. They stay gold answers, scored as the
    official scripts score every answer; a question with none in its context is not trained on
    (`trainable`). A question listed with no answers at all is kept (a file to predict).
    `errors`: as glue.read_task_text.
    """
    try:
        data = json.loads(read_task_text(path, errors))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}:{error.lineno}: not SQuAD JSON ({error.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f'{path}: expected an object with a "data" list (the SQuAD format)')
    examples, unfound = [], []
    for article in data["data"]:
        for paragraph in article.get("paragraphs", ()):
            context = _field(paragraph, "context", path, f"a paragraph of {article.get('title', '?')!r}")
            for qa in _field(paragraph, "qas", path, "a paragraph"):
                qas_id = str(_field(qa, "id", path, "a question"))
                question = _field(qa, "question", path, f"question {qas_id}")
                impossible = bool(qa.get("is_impossible", False))
                found, elsewhere, start = [], [], None
                for answer in () if impossible else _field(qa, "answers", path, f"question {qas_id}"):
                    text = _field(answer, "text", path, f"an answer of question {qas_id}")
                    offset = _locate(context, text, answer.get("answer_start", 0))
                    if offset is None:
                        unfound.append(qas_id)
                        elsewhere.append(text)
                        continue
                    found.append(text)
                    start = offset if start is None else start
                answers = tuple(found + elsewhere)
                examples.append(SquadExample(qas_id, question, context, answers, start, impossible))
    if unfound:
        logging.warning(
            "%s: %d answer(s) whose text is not in the context: not trained on (a question with none in "
            "its context neither), only scored, as the official scripts score every answer; e.g. in "
            "question(s) %s",
            path, len(unfound), ", ".join(sorted(set(unfound))[:5]),
        )  # fmt: skip
    return examples


def trainable(examples):
    """The questions a model can be trained on: unanswerable ones, and those with an answer in the
    context."""
    return [example for example in examples if example.is_impossible or example.answer_start is not None]


def _field(record, key, path, what):
    if not isinstance(record, dict) or key not in record:
        raise DataError(f"{path}: {what} has no {key!r}")
    return record[key]


def _locate(context, text, start):
    """The answer's offset: answer_start if the text is there, else its nearest occurrence, else None."""
    if not text:
        return None
    if context[start : start + len(text)] == text:
        return start
    found, index = [], context.find(text)
    while index >= 0:
        found.append(index)
        index = context.find(text, index + 1)
    return min(found, key=lambda i: abs(i - start)) if found else None


def tokenize_with_spans(tokenizer, text):
    """ids and, for each, the [start, end) character span of `text` it stands for.

    Each whitespace-separated word (Python's `str.split`) is tokenized alone. A word whose pieces hold no
    <unk> and whose normalized form and pieces keep its length (lowercasing, dropped accents) gives each
    piece its own characters (`AlbertTokenizer.surface_lengths` of them, in order); otherwise (ligatures,
    expansions, unknown characters) every piece of the word spans the whole word. The span SavedModel maps
    pieces to characters with the same rule in TensorFlow ops (albert_tf/text/span_windows.py).

    Returns:
      (ids list[int], spans list[tuple[int, int]]).
    """
    ids, spans = [], []
    position = 0
    for word in text.split():
        start = text.index(word, position)
        end = position = start + len(word)
        word_ids = tokenizer.encode(word)
        lengths = tokenizer.surface_lengths[word_ids]
        fits = tokenizer.unk_id not in word_ids and len(tokenizer.normalize(word)) == len(word)
        if fits and int(lengths.sum()) == len(word):
            ends = start + np.cumsum(lengths)
            spans.extend(zip((ends - lengths).tolist(), ends.tolist(), strict=True))
        else:
            spans.extend((start, end) for _ in word_ids)
        ids.extend(word_ids)
    return ids, spans


@dataclasses.dataclass
class SpanFeatures:
    """Model inputs and targets of every window, and what maps positions back to the text.

    inputs: int32 arrays [num_windows, seq_length]: input_word_ids, input_mask, input_type_ids.
    start_positions, end_positions, answerable: int32 [num_windows] targets (0 where none).
    example_index: int32 [num_windows], the example each window belongs to.
    char_spans: int32 [num_windows, seq_length, 2], the context characters of each position ([-1, -1]
      outside the context).
    max_context: bool [num_windows, seq_length], whether this window is the one where a position's token
      has the most context.
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    answerable: np.ndarray
    example_index: np.ndarray
    char_spans: np.ndarray
    max_context: np.ndarray

    def __len__(self):
        return len(self.example_index)


def squad_features(examples, tokenizer, seq_length=384, doc_stride=128, max_query_length=64):
    """SpanFeatures of examples: one window or more per example."""
    span_settings.check_window_settings(seq_length, doc_stride, max_query_length)
    query_room = seq_length - 3 - 1  # at least one context token per window
    rows = {name: [] for name in ("ids", "types", "length", "start", "end", "example", "spans", "max")}
    context, doc_ids, doc_spans = None, None, None
    for index, example in enumerate(examples):
        query = tokenizer.encode(example.question)[: min(max_query_length, query_room)]
        if example.context != context:  # SQuAD lists a paragraph's questions together: tokenize it once
            context = example.context
            doc_ids, doc_spans = tokenize_with_spans(tokenizer, context)
            doc_ids, doc_spans = np.asarray(doc_ids, np.int32), np.asarray(doc_spans, np.int32).reshape(-1, 2)
        answer = _answer_tokens(example, doc_spans)
        offset = len(query) + 2  # [CLS] question [SEP]
        windows = list(_windows(len(doc_ids), seq_length - offset - 1, doc_stride))
        owners = _max_context_windows(windows, len(doc_ids))
        for number, (window_start, window_length) in enumerate(windows):
            end_of_text = offset + window_length + 1
            # Rows as small arrays: a Python list of ints costs ~9x the memory, and SQuAD has 90k windows.
            ids = np.zeros(seq_length, np.int32)
            ids[: offset - 1] = [tokenizer.cls_id, *query]
            ids[offset - 1] = ids[end_of_text - 1] = tokenizer.sep_id
            ids[offset : end_of_text - 1] = doc_ids[window_start : window_start + window_length]
            types = np.zeros(seq_length, np.int32)
            types[offset:end_of_text] = 1
            spans = np.full((seq_length, 2), -1, np.int32)
            spans[offset : end_of_text - 1] = doc_spans[window_start : window_start + window_length]
            best = np.zeros(seq_length, bool)
            best[offset : end_of_text - 1] = owners[window_start : window_start + window_length] == number
            start = end = 0
            if answer and window_start <= answer[0] and answer[1] < window_start + window_length:
                start, end = answer[0] - window_start + offset, answer[1] - window_start + offset
            values = {"ids": ids, "types": types, "length": end_of_text, "start": start, "end": end,
                      "example": index, "spans": spans, "max": best}  # fmt: skip
            for name, value in values.items():
                rows[name].append(value)
    lengths = np.asarray(rows["length"], np.int32)
    end_positions = np.asarray(rows["end"], np.int32)
    return SpanFeatures(
        inputs={
            "input_word_ids": np.asarray(rows["ids"], np.int32).reshape(-1, seq_length),
            "input_mask": (np.arange(seq_length) < lengths[:, None]).astype(np.int32),
            "input_type_ids": np.asarray(rows["types"], np.int32).reshape(-1, seq_length),
        },
        start_positions=np.asarray(rows["start"], np.int32),
        end_positions=end_positions,
        answerable=(end_positions > 0).astype(np.int32),
        example_index=np.asarray(rows["example"], np.int32),
        char_spans=np.asarray(rows["spans"], np.int32).reshape(-1, seq_length, 2),
        max_context=np.asarray(rows["max"], bool).reshape(-1, seq_length),
    )


def _answer_tokens(example, doc_spans):
    """(first, last) context token of the trained answer, or None (unanswerable, or outside the tokens).

    doc_spans: int32 [tokens, 2], each context token's [start, end) characters.
    """
    if example.answer_start is None:
        return None
    begin, finish = example.answer_start, example.answer_start + len(example.answers[0])
    inside = np.flatnonzero((doc_spans[:, 0] < finish) & (doc_spans[:, 1] > begin))
    return (int(inside[0]), int(inside[-1])) if inside.size else None


def _windows(length, room, stride):
    """(start, length) of the context windows: `room` tokens, `stride` apart, the last reaching the end."""
    start = 0
    while True:
        size = min(length - start, room)
        yield start, size
        if start + size >= length:
            return
        start += min(size, stride)


def _max_context_windows(windows, length):
    """int [length]: for each context token, the window where it has the most context on both sides.

    A window's score for a token is min(tokens left, tokens right) + 0.01 * window size (the original's),
    computed exactly as 100 * min(...) + size; ties go to the first window, as in the original.
    """
    positions = np.arange(length)
    scores = np.full((len(windows), length), -1, np.int64)
    for number, (start, size) in enumerate(windows):
        left = positions[start : start + size] - start
        scores[number, start : start + size] = 100 * np.minimum(left, size - 1 - left) + size
    return np.argmax(scores, axis=0)


def span_dataset(features, batch_size, is_training=False, answerability=False, seed=12345, start=None):
    """tf.data batches of (inputs, targets) for training, inputs only otherwise; `start`: as
    glue.classification_dataset's.

    Targets are named as `AlbertSpanLabeler`'s outputs: start_logits, end_logits (int32 [batch] positions)
    and, with answerability, answerable_logits (float32 [batch], 1 if the window holds the answer).
    """
    if not len(features):
        raise DataError("no SQuAD features")
    import tensorflow as tf  # not with the module (answer_texts says why)

    from albert_tf.input_options import without_autotuning
    from albert_tf.text.batches import repeat_from

    inputs = features.inputs
    if is_training:
        targets = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        if answerability:
            targets["answerable_logits"] = features.answerable.astype(np.float32)
        dataset = tf.data.Dataset.from_tensor_slices((inputs, targets))
        dataset = dataset.shuffle(len(features), seed=seed, reshuffle_each_iteration=True)
        batches = repeat_from(dataset.batch(batch_size, drop_remainder=True), start)
    else:
        batches = tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size)
    return without_autotuning(batches.prefetch(tf.data.AUTOTUNE))


def answer_texts(examples, features, outputs, n_best_size=20, max_answer_length=30, null_score_threshold=0.0):
    """The predicted answer of each example, as text of its context (albert_tf.text.span_decoding).

    With answerable_logits in outputs (SQuAD v2.0), an example whose best window's answerable logit is
    below null_score_threshold gets "".

    Args:
      outputs: dict of the model's predictions for `features`: start_logits, end_logits float [windows,
        seq] and optionally answerable_logits float [windows].

    Returns:
      (answers: qas_id → text, no_answer: qas_id → the probability of no answer, 1 / (1 + e^logit) of the
      best window's answerable logit, what the official v2.0 script reads with --na-prob-file; None without
      answerable_logits).
    """
    # TensorFlow is imported here, not with the module: the commands read and check files before it starts.
    from albert_tf.text import span_decoding

    best = span_decoding.best_spans(
        outputs["start_logits"], outputs["end_logits"], features.char_spans[..., 0],
        features.char_spans[..., 1], features.max_context, features.example_index, len(examples),
        n_best_size=n_best_size, max_answer_length=max_answer_length,
        answerable_logits=outputs.get("answerable_logits"),
    )  # fmt: skip
    starts, ends = best["char_start"].numpy(), best["char_end"].numpy()
    answers, no_answer = {}, {}
    for index, example in enumerate(examples):
        text = example.context[starts[index] : ends[index]] if starts[index] >= 0 else ""
        if "answerable_logit" in best:
            logit = float(best["answerable_logit"][index])
            no_answer[example.qas_id] = float(1.0 / (1.0 + np.exp(logit)))
            if logit < null_score_threshold:
                text = ""
        answers[example.qas_id] = text
    return answers, (no_answer or None)
