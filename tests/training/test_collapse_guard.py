"""The collapse guard's rule: a smoothed training loss over twice its running best is a spike; the last
healthy step is the one a rollback returns before."""

from albert_tf.training.collapse_guard import CollapseGuard


def test_a_spike_is_flagged_and_the_last_healthy_step_kept():
    guard = CollapseGuard()
    # Smoothed (half the previous, half the new): 6, 5, 4, 3.5, then 3.5 + 6 = 9.5 / 2 = 6.5 (under 7), then
    # (6.5 + 20) / 2 = 13.25, over twice the best 3.5.
    readings = [guard.loss(loss, step) for step, loss in ((2, 6.0), (4, 4.0), (6, 3.0), (8, 3.0), (10, 9.5))]
    assert readings == [None] * 5 and guard.best == 3.5 and guard.healthy_step == 8
    reason = guard.loss(20.0, 12)
    assert reason == "loss spike: the smoothed loss 13.2500 is 3.8x its best 3.5000"
    assert guard.healthy_step == 8
    guard.rolled_back(8)
    assert guard.smoothed == 3.5 and guard.loss(3.4, 10) is None and guard.healthy_step == 10


def test_a_loss_that_falls_is_never_a_spike():
    guard = CollapseGuard()
    assert all(guard.loss(10.0 / step, step) is None for step in range(1, 50))
