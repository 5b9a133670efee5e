"""Cross-rank timing: how late each rank reaches its collectives, and which rank is the straggler.

Collectives are matched across ranks by (step, name, n-th of that name in the step). Each rank's
clock is first aligned on collective *ends* (a collective completes at about the same moment on
every participant), which cancels clock offsets between hosts; then a rank's lateness is its
aligned *start* minus the median start of the other ranks, per collective, and the median of that
over collectives. Steps are compared by their median duration against the other ranks' median.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from pista.distributed.comm import Collective
from pista.distributed.rank import RankSummary
from pista.finding import Evidence, Finding, Impact
from pista.isolation import RuleFailed, isolated
from pista.rules import straggler as rule
from pista.rules._common import short_name

EVIDENCE_COLLECTIVES = 3
# Regions whose extra time is within this share of the largest are a tie: the deepest names the cause.
NEAR_TIE = 0.9


@dataclass
class RankTiming:
    rank: int
    step_ms: float | None  # median step duration
    exposed_ms: float | None  # median exposed communication per step
    late_ms: float | None  # median lateness at collectives vs the other ranks
    step_start_late_ms: float | None  # median lateness of ProfilerStep starts
    clock_offset_ms: float  # what the end-alignment removed

    def to_dict(self) -> dict[str, object]:
        return dict(vars(self))


@dataclass
class CrossRank:
    timings: list[RankTiming]
    matched_collectives: int
    median_step_ms: float | None
    findings: list[Finding] = field(default_factory=list)
    # waiting rank -> (the straggler it waits for, µs per step): taken out of its exposed communication
    waits: dict[int, tuple[int, float]] = field(default_factory=dict)

    def timing(self, rank: int) -> RankTiming | None:
        return next((t for t in self.timings if t.rank == rank), None)

    def to_dict(self) -> dict[str, object]:
        return {"matched_collectives": self.matched_collectives, "median_step_ms": self.median_step_ms,
                "ranks": [t.to_dict() for t in self.timings]}


def leave_one_out_median(values: np.ndarray) -> np.ndarray:
    """For a (ranks, k) matrix: per entry, the median of its column without that entry."""
    r = values.shape[0]
    if r < 2:
        return np.full(values.shape, np.nan)
    order = np.argsort(values, axis=0, kind="stable")
    ordered = np.take_along_axis(values, order, axis=0)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(r)[:, None].repeat(values.shape[1], 1), axis=0)
    m = r - 1  # the others
    lo, hi = (m - 1) // 2, m // 2

    def pick(j: int) -> np.ndarray:
        # j-th of the others = j-th overall, or the next one when the entry itself sits at or before j
        idx = np.where(position <= j, j + 1, j)
        return np.take_along_axis(ordered, idx, axis=0)

    return (pick(lo) + pick(hi)) / 2.0


@dataclass(frozen=True)
class _Matched:
    """The collectives every rank ran, matched by key (step, name, n-th of that name in the step): each rank's
    aligned start of each (ns, ranks x keys) and its lateness against the other ranks'."""

    keys: list[tuple[int | None, str, int]]
    aligned: np.ndarray
    late_each: np.ndarray
    keys_are_calls: bool  # matched by the host's calls (else by the device work)

    @property
    def enough(self) -> bool:
        return len(self.keys) >= rule.MIN_MATCHED_COLLECTIVES


def cross_rank(ranks: list[RankSummary], failures: list[RuleFailed] | None = None) -> CrossRank:
    """The ranks' timings against each other and the straggler rule's findings. Where the rule raises and
    `failures` is given, the timings stand without findings and `failures` names it (pista.isolation)."""
    ok = [r for r in ranks if r.error is None]
    step_ms = [_median([s.dur for s in r.steps]) for r in ok]
    median_step = _median([v for v in step_ms if v is not None])
    offsets = _clock_offsets(ok)
    matched, late = _lateness(ok, offsets)
    timings = _timings(ok, step_ms, offsets, late, _step_start_lateness(ok, offsets))
    result = CrossRank(timings, len(matched.keys), _ms(median_step))
    with isolated(rule.ID, "check", failures):
        result.findings = _findings(ok, result, matched)
        return result
    result.waits = {}  # past here only where the rule raised: no wait half folded
    return result


def _timings(ok: list[RankSummary], step_ms: list[float | None], offsets: np.ndarray, late: np.ndarray,
             step_late: np.ndarray) -> list[RankTiming]:
    """Each rank's timing: its median step (ns, `step_ms`), its lateness at the collectives and at the step
    starts (ns, NaN where unknown), its clock offset (ns)."""
    return [RankTiming(
        rank=int(r.rank),  # type: ignore[arg-type]
        step_ms=_ms(step_ms[i]),
        exposed_ms=_ms(_median([s.exposed for s in r.steps])),
        late_ms=_ms(_finite(late[i])),
        step_start_late_ms=_ms(_finite(step_late[i])),
        clock_offset_ms=float(offsets[i]) / 1e6,
    ) for i, r in enumerate(ok)]


def _clock_offsets(ok: list[RankSummary]) -> np.ndarray:
    """Each rank's clock offset (ns), from when the work of the collectives ends (a collective completes at
    about the same moment on every participant)."""
    end_keys, ends = _matched(ok, "events", "end")
    if len(ok) >= 2 and end_keys:
        return np.asarray(np.median(ends - np.median(ends, axis=0, keepdims=True), axis=1))
    return np.zeros(len(ok))


def _lateness(ok: list[RankSummary], offsets: np.ndarray) -> tuple[_Matched, np.ndarray]:
    """The matched collectives, and each rank's median lateness at them (ns, NaN where unknown): from when each
    rank *calls* the collective (work on a busy comm thread or stream starts only when the previous collective
    is done), else from when its work starts."""
    keys, starts = _matched(ok, "call_events", "start")
    keys_are_calls = len(keys) >= rule.MIN_MATCHED_COLLECTIVES
    if not keys_are_calls:
        keys, starts = _matched(ok, "events", "start")
    late = np.full(len(ok), np.nan)
    late_each = np.empty((len(ok), 0))
    aligned = np.empty((len(ok), 0))
    if len(ok) >= 2 and keys:
        aligned = starts - offsets[:, None]
        late_each = aligned - leave_one_out_median(aligned)
        late = np.median(late_each, axis=1)
    return _Matched(keys, aligned, late_each, keys_are_calls), late


def _findings(ok: list[RankSummary], result: CrossRank, m: _Matched) -> list[Finding]:
    if len(ok) < 2 or result.median_step_ms is None:
        return []
    findings = []
    # each rank against the others, vectorised: thousands of ranks stay cheap
    others_step = _others_median([t.step_ms for t in result.timings])
    peer_waits = _others_median([t.exposed_ms for t in result.timings])
    for i, t in enumerate(result.timings):
        others, peer_wait = _finite(others_step[i]), _finite(peer_waits[i])
        by_lateness = _late(t, m, result.median_step_ms, peer_wait)
        if by_lateness or _slow(t, m, others):
            findings.append(_finding(ok, result, m, i, by_lateness, others, peer_wait))
    return findings


def _late(t: RankTiming, m: _Matched, median_step_ms: float, peer_wait: float | None) -> bool:
    """Whether the rank comes late enough to the collectives, and the others actually wait for it (a rank late
    by noise makes no one wait)."""
    late = (m.enough and t.late_ms is not None
            and t.late_ms >= max(rule.LATE_MIN_MS, rule.LATE_MIN_SHARE_OF_STEP * median_step_ms))
    if late and peer_wait is not None and t.exposed_ms is not None:
        assert t.late_ms is not None
        return peer_wait - t.exposed_ms >= rule.PEER_WAIT_MIN_SHARE_OF_LATENESS * t.late_ms
    return late


def _slow(t: RankTiming, m: _Matched, others: float | None) -> bool:
    """Whether the rank's steps are slower than the others' (where too few collectives match to time them)."""
    return bool(not m.enough and t.step_ms is not None and others is not None
                and t.step_ms >= rule.STEP_SLOWER_RATIO * others)


def _finding(ok: list[RankSummary], result: CrossRank, m: _Matched, i: int, by_lateness: bool,
             others: float | None, peer_wait: float | None) -> Finding:
    """Rank i as the straggler: late at the collectives (by_lateness) or slower in its steps."""
    t = result.timings[i]
    assert result.median_step_ms is not None
    if by_lateness:
        wait_ns = _per_step_wait(m.keys, m.late_each[i])
        _fold_peer_waits(result, m, i)
        evidence = _late_calls(ok[i], t.rank, m.keys, m.late_each[i], m.keys_are_calls)
    else:
        wait_ns = max(0.0, (t.step_ms or 0.0) - (others or 0.0)) * 1e6
        evidence = _slow_steps(ok[i], t.rank, others)
    step_us = (t.step_ms if t.step_ms else result.median_step_ms) * 1000.0
    record = rule.Straggler(
        rank=t.rank, world=len(ok), cause=rule.Cause.LATE if by_lateness else rule.Cause.SLOW_STEPS,
        wait_us=wait_ns / 1000.0, late_us=_us(t.late_ms), step_us=_us(t.step_ms), others_step_us=_us(others),
        median_step_us=_us(result.median_step_ms), own_exposed_us=_us(t.exposed_ms),
        peers_exposed_us=_us(peer_wait), matched_collectives=len(m.keys),
        extra=_extra_work(ok, i, wait_ns))
    impact = Impact(wait_ns / 1000.0, min(1.0, wait_ns / 1000.0 / max(step_us, 1e-9)))
    return Finding(rule.ID, record, impact, evidence)


def _fold_peer_waits(result: CrossRank, m: _Matched, i: int) -> None:
    """What each other rank waits for rank i, per step (µs), kept where it is the longest wait it has: taken
    out of its exposed communication."""
    t = result.timings[i]
    for j in range(len(result.timings)):
        if j != i:
            waited = _per_step_wait(m.keys, m.aligned[i] - m.aligned[j]) / 1000.0
            if waited > result.waits.get(result.timings[j].rank, (t.rank, 0.0))[1]:
                result.waits[result.timings[j].rank] = (t.rank, waited)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _per_step_wait(keys: list[tuple[int | None, str, int]], late: np.ndarray) -> float:
    """ns per step: per step, the median lateness over its matched collectives (none if early),
    averaged over the steps. A step's collectives come late together (DDP's buckets of one backward),
    so the others wait once per step, not once per collective."""
    by_step: dict[int | None, list[float]] = defaultdict(list)
    for k, (step, _, _) in enumerate(keys):
        by_step[step].append(float(late[k]))
    return float(np.mean([max(0.0, float(np.median(v))) for v in by_step.values()])) if by_step else 0.0


def _late_calls(r: RankSummary, rank: int, keys: list[tuple[int | None, str, int]], late: np.ndarray,
                keys_are_calls: bool) -> list[Evidence]:
    evidence = []
    for k in np.argsort(-late, kind="stable")[:EVIDENCE_COLLECTIVES].tolist():
        step, name, nth = keys[k]
        call = _event_of(r, "call_events" if keys_are_calls else "events", keys[k])
        evidence.append(Evidence.span(name, f"rank {rank}", call.start, call.end, step=step,
                                      detail=rule.LateCall(float(late[k]) / 1000.0, nth + 1)))
    return evidence


def _slow_steps(r: RankSummary, rank: int, others_ms: float | None) -> list[Evidence]:
    slowest = sorted(r.steps, key=lambda s: -s.dur)[:EVIDENCE_COLLECTIVES]
    return [Evidence.span(f"ProfilerStep#{s.step}", f"rank {rank}", s.start, s.end, step=s.step,
                          detail=rule.SlowStep(s.dur / 1000.0, (others_ms or 0.0) * 1000.0))
            for s in sorted(slowest, key=lambda s: s.start)]


def _extra_work(ok: list[RankSummary], i: int, excess_ns: float) -> rule.ExtraWork | None:
    """The region the straggler spends the most extra time in per step against the median other
    rank, when that explains enough of its lateness (or step excess); the deepest of near ties."""
    others = [{h.name: h.ns_per_step for h in r.host_regions} for j, r in enumerate(ok) if j != i]
    best: list[tuple[float, int, rule.ExtraWork]] = []
    for h in ok[i].host_regions:
        theirs = float(np.median([o.get(h.name, 0.0) for o in others]))
        extra = h.ns_per_step - theirs
        if excess_ns > 0 and extra >= rule.CAUSE_MIN_SHARE_OF_LATENESS * excess_ns:
            work = rule.ExtraWork(short_name(h.name), h.ns_per_step / 1000.0, theirs / 1000.0, h.device)
            best.append((extra, h.depth, work))
    return _deepest_of_near_ties(best)


def _deepest_of_near_ties(best: list[tuple[float, int, rule.ExtraWork]]) -> rule.ExtraWork | None:
    """Of (extra ns, depth, work), the deepest among those within NEAR_TIE of the largest extra."""
    if not best:
        return None
    top = max(e for e, _, _ in best)
    return max((b for b in best if b[0] >= NEAR_TIE * top), key=lambda b: (b[1], b[0]))[2]


def _matched(ok: list[RankSummary], which: str, edge: str) -> tuple[list[tuple[int | None, str, int]], np.ndarray]:
    """Collectives present on every rank, as a (ranks, k) matrix of their start or end on the shared
    clock (ns), with their keys (step, name, n-th of that name in the step)."""
    tables = [_by_key(r, which, edge) for r in ok]
    if not tables:
        return [], np.empty((0, 0))
    common = set(tables[0]).intersection(*tables[1:])
    keys = sorted(common, key=lambda k: (k[0] if k[0] is not None else -1, k[1], k[2]))
    values = np.array([[t[k] for k in keys] for t in tables], dtype=np.float64).reshape(len(ok), len(keys))
    return keys, values


def _by_key(r: RankSummary, which: str, edge: str) -> dict[tuple[int | None, str, int], float]:
    """A rank's collectives (`which`: its calls or its work) by key (step, name, n-th of that name in the step):
    their start or end (`edge`) on the shared clock (ns)."""
    seen: dict[tuple[int | None, str], int] = defaultdict(int)
    table = {}
    for c in getattr(r.comm, which) if r.comm else []:
        nth = seen[(c.step, c.name)]
        seen[(c.step, c.name)] += 1
        table[(c.step, c.name, nth)] = getattr(c, edge) + r.clock_base_ns
    return table


def _event_of(r: RankSummary, which: str, key: tuple[int | None, str, int]) -> Collective:
    step, name, nth = key
    return [c for c in getattr(r.comm, which) if c.step == step and c.name == name][nth]


def _step_start_lateness(ok: list[RankSummary], offsets: np.ndarray) -> np.ndarray:
    if len(ok) < 2:
        return np.full(len(ok), np.nan)
    numbers = set.intersection(*({s.step for s in r.steps} for r in ok))
    if not numbers:
        return np.full(len(ok), np.nan)
    starts = _step_starts(ok, sorted(numbers)) - offsets[:, None]
    return np.median(starts - leave_one_out_median(starts), axis=1)


def _step_starts(ok: list[RankSummary], numbers: list[int]) -> np.ndarray:
    """Per rank (rows), the start of each of the steps `numbers` (columns) on the shared clock (ns)."""
    return np.array([[next(s.start for s in r.steps if s.step == n) + r.clock_base_ns for n in numbers]
                     for r in ok], dtype=np.float64)


def _others_median(values: list[float | None]) -> np.ndarray:
    """Per rank, the median of the other ranks' known values (NaN where none is known)."""
    column = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    known = np.isfinite(column)
    out = np.full(column.shape, np.nan)
    if known.sum() >= 2:
        out[known] = leave_one_out_median(column[known][:, None])[:, 0]
    if known.sum() >= 1:  # a rank with no value of its own: the median of all the known ones
        out[~known] = np.median(column[known])
    return out


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if values else None


def _ms(ns: float | None) -> float | None:
    return None if ns is None else float(ns) / 1e6


def _us(ms: float | None) -> float | None:
    return None if ms is None else float(ms) * 1000.0


def fold_waits(ranks: list[RankSummary], cross: CrossRank) -> None:
    """One fact, one finding: the time a rank waits for the straggler is the straggler's impact, so it
    leaves that rank's exposed-communication finding (which goes if too little is left)."""
    # start-up: one rule's module, only when waits are folded
    from pista.rules import exposed_communication as exposed

    for r in ranks:
        if r.rank not in cross.waits:
            continue
        late_rank, wait_us = cross.waits[int(r.rank)]
        kept = []
        for f in r.findings:
            g = exposed.with_late_peer(f, late_rank, wait_us) if f.rule == exposed.ID else f
            if g is not None:
                kept.append(g)
        kept.sort(key=lambda f: (-f.impact.share, -f.impact.us))
        r.findings = kept
