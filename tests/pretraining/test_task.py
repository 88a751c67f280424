"""The pretraining task's held-out collapse rule (the task's training: tests/pretraining/test_run.py)."""

from albert_tf.pretraining.task import baseline_collapse


def test_an_accuracy_back_at_the_most_frequent_tokens_after_being_well_above_it_is_a_collapse():
    back = {"masked_lm_accuracy": 0.066, "masked_lm_baseline_accuracy": 0.06}
    assert baseline_collapse(back, best=0.45) == (
        "held-out masked-LM accuracy 0.0660 is back at the most frequent token's 0.0600 (its best: 0.4500)"
    )
    assert baseline_collapse(back, best=0.08) is None  # never well above it: not learning yet, not collapsed
    assert baseline_collapse({**back, "masked_lm_accuracy": 0.3}, best=0.45) is None
