"""The straggler rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
straggler`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/straggler.ftl."""

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
