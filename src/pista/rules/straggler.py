"""What:
One rank is late: it reaches its collectives (all-reduce, all-gather, ...) well after the other
ranks do, or its steps take longer than theirs, so every other rank waits for it inside the
collective. Seen only across ranks: `pista analyze DIR` over a folder of per-rank traces.

Why:
A collective finishes when its last participant arrives. The time the others spend waiting shows up
in their traces as long, exposed communication, and the whole job runs at the straggler's pace: one
slow rank of a thousand makes a thousand GPUs slow.

Example:
Two gloo ranks training a small DDP MLP on the CPU, rank 1 sleeping 30 ms before each forward pass:
rank 1 reaches every all-reduce about 30 ms after rank 0, and rank 0 waits those 30 ms per step in
`gloo:all_reduce` (tests/fixtures/gloo/straggler_2).

Fix:
Look at what the late rank does before its collectives that the others do not: uneven data shards
or sequence lengths, a slow data loader or file system on that host, logging or checkpointing on
one rank only, a slower or throttled device, a noisy neighbour. Balance the work, move one-rank-only
work off the step, or replace the slow host.
"""

from __future__ import annotations

from pista.findings import Context, Finding, Severity

ID = "straggler"
TITLE = "Straggler: one rank keeps the others waiting"
SEVERITY = Severity.WARNING
# Lateness is measured against the median of the other ranks, per collective call, then the median
# over collectives. In the balanced gloo fixtures the scheduler makes a rank late by up to 2.1 ms (2
# ranks, 25% of an 8 ms step) and 10.8 ms (4 ranks on 2 shared cores, 24% of a 46 ms step); the slowed
# rank (30 ms sleep) is late by 32 ms, 61-82% of a step. 40% sits between, with room on both sides.
LATE_MIN_MS = 2.0
LATE_MIN_SHARE_OF_STEP = 0.40
# A rank the others wait for: their exposed communication exceeds its own by at least this share of
# its lateness (the slowed fixture ranks: ~1.0; a balanced rank 23% "late" from noise: 0.4).
PEER_WAIT_MIN_SHARE_OF_LATENESS = 0.5
# For jobs whose steps do not synchronise (no matched collectives): a rank whose median step is this
# much slower than the other ranks' median. Balanced fixtures differ by under 1.3x.
STEP_SLOWER_RATIO = 1.5
# Collectives present on every rank needed before lateness is trusted.
MIN_MATCHED_COLLECTIVES = 3


def check(ctx: Context) -> list[Finding]:
    """A single trace cannot show a straggler: the cross-rank check is pista.distributed.straggler."""
    return []
