"""Evaluation metrics, defined as GLUE's and SQuAD's official scripts define them (pure Python/NumPy).

- accuracy, F1 of the positive class (MRPC, QQP), Matthews correlation (CoLA), Pearson and Spearman
  correlations (STS-B): as GLUE reports them (scikit-learn / SciPy definitions).
- SQuAD exact match and F1: the official evaluate-v1.1 / v2.0 answer normalization (lowercase, drop
  punctuation and the articles a/an/the, collapse whitespace), max over the gold answers; v2.0 scores an
  unanswerable question 1 when the prediction is empty, else 0.
"""

import collections
import re
import string

import numpy as np


def accuracy(labels, predictions):
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    return float(np.mean(labels == predictions)) if labels.size else 0.0


def f1(labels, predictions, positive=1):
    """F1 of the positive class (0 when it is never predicted nor present)."""
    labels, predictions = np.asarray(labels) == positive, np.asarray(predictions) == positive
    true_positive = np.sum(labels & predictions)
    denominator = 2 * true_positive + np.sum(labels & ~predictions) + np.sum(~labels & predictions)
    return float(2 * true_positive / denominator) if denominator else 0.0


def matthews_correlation(labels, predictions):
    """Matthews correlation coefficient of binary labels (0 when a marginal is constant, as scikit-learn)."""
    labels, predictions = np.asarray(labels) == 1, np.asarray(predictions) == 1
    tp = float(np.sum(labels & predictions))
    tn = float(np.sum(~labels & ~predictions))
    fp = float(np.sum(~labels & predictions))
    fn = float(np.sum(labels & ~predictions))
    denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator else 0.0


def _ranks(values):
    """Ranks 1..n, ties sharing their average rank (SciPy's rankdata 'average')."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(x, y):
    return pearson(_ranks(x), _ranks(y))


def normalize_answer(text):
    """SQuAD's answer normalization."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_exact_match(prediction, gold_answers, version_2):
    """1.0 if the normalized prediction equals a normalized gold answer (`_golds`)."""
    return float(
        normalize_answer(prediction) in [normalize_answer(gold) for gold in _golds(gold_answers, version_2)]
    )


def squad_f1(prediction, gold_answers, version_2):
    """Token-overlap F1, the maximum over the gold answers (`_golds`)."""
    return max(_token_f1(prediction, gold, version_2) for gold in _golds(gold_answers, version_2))


def _golds(gold_answers, version_2):
    """The gold answers a prediction is scored against. evaluate-v2.0.py drops those that normalize to
    nothing ("The", "!"); a question with none (unanswerable: []) is scored against ""."""
    if version_2:
        gold_answers = [gold for gold in gold_answers if normalize_answer(gold)]
    return list(gold_answers) or [""]


def _token_f1(prediction, gold, version_2):
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version_2 and (not predicted or not expected):
        return float(predicted == expected)  # evaluate-v2.0.py: both empty score 1, one empty 0
    common = collections.Counter(predicted) & collections.Counter(expected)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0  # evaluate-v1.1.py: no token in common scores 0, both empty too
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, gold, version_2):
    """{"exact_match", "f1"} in percent over question ids, as the official scripts of SQuAD v1.1
    (evaluate-v1.1.py) and v2.0 (evaluate-v2.0.py, `version_2`) report them.

    Args:
      predictions: question id → predicted answer text ("" for no answer).
      gold: question id → list of gold answer texts ([] for an unanswerable v2.0 question).
    """
    exact = [squad_exact_match(predictions.get(qid, ""), answers, version_2) for qid, answers in gold.items()]
    overlap = [squad_f1(predictions.get(qid, ""), answers, version_2) for qid, answers in gold.items()]
    return {"exact_match": 100.0 * float(np.mean(exact)), "f1": 100.0 * float(np.mean(overlap))}
