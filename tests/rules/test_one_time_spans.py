"""The one-time rules' span arithmetic against the plain definitions, on a real trace."""

from __future__ import annotations

import numpy as np

from pista.rules import _one_time as one_time
from pista.rules._common import busy_ns


def test_sums_and_idle_time_by_bisection_are_the_plain_ones(load_facts):
    facts = load_facts("big_gpt_eager_20steps")
    trace = facts.trace
    rng = np.random.default_rng(3)
    lo = rng.integers(trace.start_ns - 10**6, trace.end_ns, 40)
    hi = lo + rng.integers(0, 5 * 10**7, 40)
    for mask in (one_time.profiler_mask(facts), facts.is_host, facts.is_device_work):
        within = one_time.starts_within(facts, mask)
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            plain = int(trace.dur[mask & (trace.ts >= a) & (trace.ts < b)].sum())
            assert within(a, b) == plain == one_time.total_in(facts, mask, a, b)
    claim = one_time.spans(lo, hi)
    assert one_time.idle_ns(facts, claim) == sum(b - a - busy_ns(facts, a, b)
                                                 for a, b in zip(claim.start.tolist(), claim.end.tolist(), strict=True))
    taken = one_time.spans(lo[::3] + 10**6, hi[::3] - 10**6)
    left = one_time.minus(claim, taken)
    plain = [(a, b) for s, e in zip(claim.start.tolist(), claim.end.tolist(), strict=True)
             for a, b in zip(taken.gaps(s, e).start.tolist(), taken.gaps(s, e).end.tolist(), strict=True)]
    assert left.total == sum(b - a for a, b in plain) > 0
