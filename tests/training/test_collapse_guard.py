"""The collapse guard's rule: a smoothed training loss over twice its running best, and above it by a quarter
of the task's chance loss, is a spike; the last healthy step is the one a rollback returns before. The runs
that flag, roll back and resume: tests/pretraining/test_run.py and tests/finetuning/test_loop.py."""

import json
import math

from albert_tf.training.collapse_guard import CollapseGuard
from albert_tf.training.run_state import RunState

# The progress lines of a real fine-tuning run (tests/finetuning/test_classifier.py's SST-2 folder and tiny
# model, --learning_rate=0.003 --save_checkpoints_steps=4, 240 steps): it learns, one window of 4 steps reads
# 0.1756 among readings near 0.01, and the loss goes on down. A spike by the factor alone (0.1004 smoothed,
# 4.0x its best 0.0251); a rise of 11% of the chance loss, ln 2.
FINE_TUNING_LOSSES = [
    0.6935, 0.6952, 0.6952, 0.7023, 0.7104, 0.6964, 0.7118, 0.695, 0.7009, 0.6998, 0.6902, 0.6962, 0.6875,
    0.6945, 0.6967, 0.6886, 0.7003, 0.6946, 0.7008, 0.6951, 0.6963, 0.6941, 0.6924, 0.6956, 0.691, 0.6749,
    0.6148, 0.4422, 0.2131, 0.1042, 0.0464, 0.0778, 0.0187, 0.0144, 0.0106, 0.1756, 0.0078, 0.0084, 0.0085,
    0.0083, 0.0082, 0.0074, 0.0067, 0.0064, 0.005, 0.0052, 0.006, 0.0056, 0.0057, 0.0046, 0.0043, 0.0057,
]  # fmt: skip
TWO_CLASSES = math.log(2)


def test_a_spike_is_flagged_and_the_last_healthy_step_kept():
    guard = CollapseGuard(chance_loss=5.0)
    # Smoothed (half the previous, half the new): 6, 5, 4, 3.5, then 3.5 + 6 = 9.5 / 2 = 6.5 (under 7), then
    # (6.5 + 20) / 2 = 13.25, over twice the best 3.5 and 9.75 above it: 195% of the chance loss.
    readings = [guard.loss(loss, step) for step, loss in ((2, 6.0), (4, 4.0), (6, 3.0), (8, 3.0), (10, 9.5))]
    assert readings == [None] * 5 and guard.best == 3.5 and guard.healthy_step == 8
    reason = guard.loss(20.0, 12)
    assert reason == (
        "loss spike: the smoothed loss 13.2500 is 3.8x its best 3.5000, 195% of the chance loss (5.0000) "
        "above it"
    )
    assert guard.healthy_step == 8
    guard.rolled_back(8)
    assert guard.smoothed == 3.5 and guard.healthy_step == 8
    assert guard.loss(3.4, 10) is None and guard.healthy_step == 10


def test_a_loss_that_falls_is_never_a_spike():
    guard = CollapseGuard(chance_loss=0.1)
    assert all(guard.loss(10.0 / step, step) is None for step in range(1, 50))


def test_noise_near_zero_is_no_spike_though_it_is_twice_the_best():
    guard = CollapseGuard(TWO_CLASSES)
    flagged = [step for step, loss in enumerate(FINE_TUNING_LOSSES) if guard.loss(loss, step)]
    assert flagged == []
    # The rule without its floor would have cried wolf at the 0.1756 window and the next.
    twice_the_best = CollapseGuard(TWO_CLASSES)
    over = []
    for step, loss in enumerate(FINE_TUNING_LOSSES):
        twice_the_best.loss(loss, step)
        over += [step] if twice_the_best.smoothed > 2 * twice_the_best.best else []
    assert over == [35, 36]


def test_a_fine_tuned_loss_back_near_chance_is_a_spike():
    # The same run, then its loss climbs back towards the untrained model's 0.69: two lines at 0.3 smooth to
    # 0.2263, 0.22 above the best 0.0047 (32% of the chance loss, ln 2).
    guard = CollapseGuard(TWO_CLASSES)
    for step, loss in enumerate(FINE_TUNING_LOSSES):
        guard.loss(loss, step)
    assert guard.loss(0.3, 100) is None  # 0.1526: 21% of the chance loss
    assert guard.loss(0.3, 101).startswith("loss spike: the smoothed loss 0.2263 is ")


def test_a_guard_restored_from_its_state_reads_on_as_the_one_it_was_saved_from():
    guard, state = CollapseGuard(TWO_CLASSES), RunState(TWO_CLASSES)
    for step, loss in enumerate(FINE_TUNING_LOSSES[:40]):
        guard.loss(loss, step)
        state.guard.loss(loss, step)
    state.rollbacks, state.spike, state.best_results = (
        2,
        "loss spike: ...",
        {"accuracy": 0.9, "global_step": 36},
    )
    restored = RunState(TWO_CLASSES)
    restored.deserialize(json.loads(json.dumps(state.serialize())))  # a string, as checkpoints keep it
    assert (restored.rollbacks, restored.spike, restored.best_results) == (
        2,
        "loss spike: ...",
        state.best_results,
    )
    later = [*FINE_TUNING_LOSSES[40:], 0.3, 0.3, 0.5]
    assert [restored.guard.loss(loss, step) for step, loss in enumerate(later)] == [
        guard.loss(loss, step) for step, loss in enumerate(later)
    ]
    assert restored.guard.state() == guard.state() and guard.healthy_step == len(later) - 4


def test_a_spike_from_a_best_of_zero_or_with_a_chance_loss_of_zero_says_so():
    # A regression fitted perfectly (best 0): no ratio to give. Constant scores (chance loss 0): no share.
    fitted = CollapseGuard(chance_loss=1.0)
    assert fitted.loss(0.0, 1) is None
    assert fitted.loss(2.0, 2) == (
        "loss spike: the smoothed loss 1.0000 is above its best 0.0000, 100% of the chance loss (1.0000) "
        "above it"
    )
    constant = CollapseGuard(chance_loss=0.0)
    assert constant.loss(1.0, 1) is None
    assert constant.loss(5.0, 2) == (
        "loss spike: the smoothed loss 3.0000 is 3.0x its best 1.0000, with a chance loss of 0"
    )


def test_before_any_reading_the_healthy_step_is_the_start():
    # A held-out collapse before the first progress line rolls back to the first checkpoint, step 0.
    assert CollapseGuard(TWO_CLASSES).state() == {"smoothed": None, "best": None, "healthy_step": 0}


def test_the_bounds_healthy_within_and_a_spike_past():
    # Smoothed exactly HEALTHY_FACTOR (1.25) times the best is still healthy: (4 + 6) / 2 = 5.
    guard = CollapseGuard(chance_loss=0.0)
    guard.loss(4.0, 1)
    guard.loss(6.0, 2)
    assert guard.healthy_step == 2
    # Exactly twice the best is no spike: (2 + 6) / 2 = 4.
    twice = CollapseGuard(chance_loss=0.0)
    assert twice.loss(2.0, 1) is None and twice.loss(6.0, 2) is None and twice.smoothed == 4.0
    # A rise of exactly a quarter of the chance loss is no spike: (1 + 5) / 2 = 3, 2 above the best 1.
    quarter = CollapseGuard(chance_loss=8.0)
    assert quarter.loss(1.0, 1) is None and quarter.loss(5.0, 2) is None and quarter.smoothed == 3.0
    assert quarter.loss(5.0, 3) is not None  # (3 + 5) / 2 = 4: 3 above, past the quarter
