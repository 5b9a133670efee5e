"""Showing that a cost grows linearly: time one input at two sizes in the same run and compare.

A ratio, not an absolute time, so a slow or busy machine does not fail the test: each size is
timed as the best of a few runs, each run repeating the call until it lasts MIN_RUN_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# A run shorter than this is mostly timer and scheduler noise: the call is repeated to fill it.
MIN_RUN_S = 0.05
# Best of this many runs: the others were slowed by whatever else the machine did (CI runs two test
# workers on two cores: best of 3 runs of 20 ms once read 26x for a linear 8x).
RUNS = 5
# A call this slow is timed once: noise cannot make it, and repeating it only makes a failing
# (quadratic) test slower still.
SLOW_CALL_S = 1.0


def seconds_per_call(call: Callable[[], object]) -> float:
    """The best time of one `call`, over RUNS runs of enough calls to last MIN_RUN_S."""
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    if once >= SLOW_CALL_S:
        return once
    repeat = max(1, int(MIN_RUN_S / max(once, 1e-9)))
    best = once
    for _ in range(RUNS):
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best


def growth(make: Callable[[int], Callable[[], object]], small: int, big: int) -> float:
    """How many times longer the call made for size `big` takes than the one for `small`: about
    big/small where the cost is linear, its square where quadratic."""
    return seconds_per_call(make(big)) / seconds_per_call(make(small))
