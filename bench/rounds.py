"""Timing helper for the benchmarks: interleaved rounds, best round per runner."""

import time


def best_round_seconds(runners, rounds, steps, warmup_steps=2):
    """name → the fastest of `rounds` timed calls of runner(steps), after one warm-up call each.

    Rounds alternate between the runners, so drift in the machine's speed hits all of them alike.
    """
    for run in runners.values():
        run(warmup_steps)  # tracing and compilation
    best = {name: float("inf") for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            started = time.perf_counter()
            run(steps)
            best[name] = min(best[name], time.perf_counter() - started)
    return best
