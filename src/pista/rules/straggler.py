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
`gloo:all_reduce` (tests/fixtures/gloo/straggler_2). The host region rank 1 spends more time in than
the others, `slow_input` (30.2 ms per step, absent on rank 0), is named as the cause.

Impact:
Per step: how much later than the median of the other ranks the straggler calls its collectives
(the median over each step's matched collectives, averaged over the steps): the time the others
wait for it every step, which the job saves when the straggler keeps pace. Share of the
straggler's median step. Without matched collectives, its median step less the others'. The wait
the others spend is their exposed communication too: over a folder it is taken out of their
exposed-communication findings, so it counts once. Before, a fixed warning. straggler_2: 31.9 ms
of a 38.4 ms step (83%, critical); straggler_4: 31.3 of 52.4 ms (60%, critical).

Fix:
Look at what the late rank does before its collectives that the others do not: uneven data shards
or sequence lengths, a slow data loader or file system on that host, logging or checkpointing on
one rank only, a slower or throttled device, a noisy neighbour. Balance the work, move one-rank-only
work off the step, or replace the slow host.
"""

from __future__ import annotations

from enum import Enum

from pista.findings import Context, Finding, Record

ID = "straggler"
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
# A host region names the cause when the straggler spends at least this share of its lateness (or
# step excess) more per step in it than the median other rank: straggler_2's `slow_input` is 30.2 ms
# of its 31.9 ms lateness (0.95); the next region, the backward's addmm, 1.7 ms (0.05).
CAUSE_MIN_SHARE_OF_LATENESS = 0.5



class Cause(str, Enum):
    LATE = "late"  # reaches its collectives after the others
    SLOW_STEPS = "slow-steps"  # no matched collectives: its steps take longer


class ExtraWork(Record):
    """A region (host op or annotation, or device work) the straggler spends more time in per step
    than the other ranks."""

    name: str
    own_us: float  # per step, on the straggler
    others_us: float  # per step, the median of the other ranks
    device: bool  # a kernel, copy or memset


class Straggler(Record):
    rank: int
    world: int
    cause: Cause
    wait_us: float  # per step: what the others wait for it (LATE), its step excess (SLOW_STEPS)
    late_us: float | None  # median lateness over the matched collectives
    step_us: float | None  # its median step
    others_step_us: float | None  # the median of the other ranks' median steps
    median_step_us: float | None  # all ranks
    own_exposed_us: float | None  # its exposed communication per step (median)
    peers_exposed_us: float | None  # the other ranks' (median)
    matched_collectives: int
    extra: ExtraWork | None  # what it does that the others do not, when one region explains it


class LateCall(Record):
    """Note on one of the straggler's collective calls: how late it came, and which of its name."""

    late_us: float
    nth: int  # 1-based, among the calls of that name in the step


class SlowStep(Record):
    """Note on one of the straggler's steps: its duration against the other ranks' median step."""

    dur_us: float
    others_us: float


def check(ctx: Context) -> list[Finding]:
    """A single trace cannot show a straggler: the cross-rank check is pista.distributed.straggler."""
    return []
