"""Metrics against hand computations."""

import pytest

from albert_tf.finetuning import metrics


def test_classification_metrics_by_hand():
    labels, predictions = [1, 0, 1, 1], [1, 1, 1, 0]
    assert metrics.accuracy(labels, predictions) == 0.5
    assert metrics.f1(labels, predictions) == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))  # tp 2, fn 1, fp 1
    assert metrics.matthews_correlation(labels, predictions) == pytest.approx(
        -1 / 3
    )  # (2·0 − 1·1)/√(3·3·1·1)
    assert metrics.matthews_correlation([1, 1, 0], [1, 1, 1]) == 0.0  # a constant prediction


def test_correlations_by_hand():
    # x − x̄ = (−1, 0, 1), y − ȳ = (−7/3, −1/3, 8/3): r = 5 / √(2 · 114/9).
    assert metrics.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(5 / (2 * 114 / 9) ** 0.5)
    # Ties share ranks: x → (1, 2.5, 2.5, 4), y → (1, 3, 2, 4): r = 4.5 / √(4.5 · 5).
    assert metrics.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / (4.5 * 5) ** 0.5)


@pytest.mark.parametrize("version_2", [False, True])
def test_squad_as_the_official_scripts(version_2):
    assert metrics.normalize_answer("The  Cat, sat!") == "cat sat"
    assert metrics.squad_exact_match("the cat", ["A cat", "dog"], version_2) == 1.0
    f1 = metrics.squad_f1("the big cat", ["cat sat", "dog"], version_2)
    assert f1 == pytest.approx(0.5)  # 1 of 2 tokens each way
    assert metrics.squad_f1("cat cat", ["cat cat"], version_2) == 1.0  # repeated tokens count each time
    assert metrics.squad_f1("something", [], version_2) == 0.0
    scores = metrics.squad_scores(
        {"q1": "the cat", "q2": "a dog ran"}, {"q1": ["cat"], "q2": ["dog"], "q3": []}, version_2
    )
    # q1: EM 1, F1 1; q2: EM 0, F1 2·(1/2·1)/(1/2+1) = 2/3; q3 (missing prediction = "" against ""): EM 1,
    # F1 1 under v2.0 (both empty), 0 under v1.1 (no token in common).
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3 + version_2) / 3)


def test_squad_gold_answers_of_no_words_as_each_official_script_scores_them():
    """evaluate-v2.0.py drops gold answers that normalize to nothing ("The", "!") and scores an empty
    prediction against an empty gold 1; evaluate-v1.1.py keeps every gold answer, and F1 of no tokens in
    common is 0 there, both empty too."""
    golds = ["The", "Paris"]
    assert metrics.squad_exact_match("", golds, version_2=True) == 0.0  # only "paris" is left
    assert metrics.squad_f1("", golds, version_2=True) == 0.0
    assert metrics.squad_exact_match("", golds, version_2=False) == 1.0  # "" equals "The" normalized
    assert metrics.squad_f1("", golds, version_2=False) == 0.0
    assert metrics.squad_f1("a", ["the"], version_2=False) == 0.0
    # Every gold dropped: the question scores as unanswerable, against "".
    assert metrics.squad_exact_match("a", ["the", "!"], version_2=True) == 1.0
    assert metrics.squad_f1("a", ["the"], version_2=True) == 1.0
    assert metrics.squad_f1("Paris", ["the"], version_2=True) == 0.0


def test_more_classification_metrics_by_hand():
    assert metrics.accuracy([1, 0, 1], [1, 0, 0]) == pytest.approx(2 / 3)
    # tp 1, fn 2, fp 1, tn 3: (1·3 − 1·2) / √(2·3·4·5).
    labels, predictions = [1, 1, 1, 0, 0, 0, 0], [1, 0, 0, 1, 0, 0, 0]
    assert metrics.matthews_correlation(labels, predictions) == pytest.approx(1 / 120**0.5)
    assert metrics.f1(labels, predictions) == pytest.approx(2 / (2 + 2 + 1))
    assert metrics.f1([0, 1, 2], [0, 2, 2], positive=2) == pytest.approx(2 / 3)  # tp 1, fp 1, fn 0


def test_metrics_of_nothing_to_count_are_zero():
    """No examples, no positive class predicted nor present, a constant score: 0, not NaN (as scikit-learn
    and SciPy's callers report them)."""
    assert metrics.accuracy([], []) == 0.0
    assert metrics.f1([0, 0], [0, 0]) == 0.0
    assert metrics.pearson([1, 1, 1], [1, 2, 3]) == 0.0
    assert metrics.spearman([2, 2, 2], [1, 2, 3]) == 0.0


def test_spearman_ranks_by_value_not_by_position():
    assert metrics.spearman([3, 1, 2], [1, 2, 3]) == pytest.approx(-0.5)  # ranks (3, 1, 2) against (1, 2, 3)
    assert metrics.spearman([10, 20, 30], [1, 4, 9]) == pytest.approx(1.0)  # monotonic, not linear
