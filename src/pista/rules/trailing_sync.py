"""The trailing-sync rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
trailing-sync`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/trailing_sync.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import SYNC_NAMES, name_mask, nearest_ancestor
from pista.rules._common import busy_ns, profiler_stop_sync, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "trailing-sync"
# A sync "waits for nothing" when the GPU was busy less than this share of the sync's duration:
# gpu/trailing_sync 0/3.8 µs, gpu/gpu_idle_dataloader 0/14.5 µs; real waits (gpu/fp32_gemm 2602/2616
# µs, gpu/tf32_gemm 269/275 µs, gpu/kernel_variability 27/33 µs) are above 0.8.
MAX_OUTSTANDING_SHARE = 0.5
# ... and the idle syncs must save at least this share of the median step: gpu/trailing_sync 2.9%,
# gpu/capture_mm64_sync 3.4%; gpu/gpu_idle_dataloader 0.1% (14 µs syncs in 15 ms steps) and
# gpu/window_sync_warm 0.75% of its window are noise.
MIN_STEP_SHARE = 0.01
EVIDENCE_EVENTS = 6


class TrailingSync(Record):
    name: str  # the runtime call (cudaDeviceSynchronize)
    region: str | None  # the record_function region around the syncs ('sync'), if any
    syncs: int
    steps: int  # steps in the window (1 without steps)
    steps_hit: tuple[int, ...]
    sync_us: float  # the syncs' duration over the window
    saved_us: float  # what they cost over the window (the impact)
    longest_us: float
    outstanding_us: float  # GPU work still running during the longest
    gpu_idle_before_us: float | None  # how long the GPU had been idle when the longest began
    step_share_percent: float


class IdleSync(Record):
    """Note on one trailing sync."""

    outstanding_us: float
    saved_us: float
    region: str | None


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    idle = _idle_syncs(facts)
    total = sum(c for _, _, c in idle)
    impact = ctx.per_step(total)
    if not idle or impact.share < MIN_STEP_SHARE:
        return []
    record = _record(ctx, idle, total, impact.share)
    evidence = [Evidence.of(facts, i, IdleSync(us(out), us(cost), _region(facts, i)))
                for i, out, cost in sorted(idle, key=lambda x: -int(trace.dur[x[0]]))[:EVIDENCE_EVENTS]]
    # the syncs go: the next step's host work starts while the GPU finishes this one's
    edit = Edit("no trailing sync", remove=np.array([i for i, _, _ in idle], dtype=np.int64))
    return [Finding(ID, record, impact, evidence, edit=edit)]


def _candidates(facts: Facts) -> np.ndarray:
    """The syncs in the steps issued from no op (those inside an op, .item(), .cpu(), autotuning, are host-sync's),
    the profiler's own closing sync left out."""
    trace = facts.trace
    syncs = name_mask(facts, SYNC_NAMES) & facts.is_host
    syncs &= ~(nearest_ancestor(facts, trace.category_mask({"cpu_op"}), inclusive=False) >= 0)
    own = profiler_stop_sync(facts)
    if own >= 0:
        syncs[own] = False
    if facts.steps:
        syncs &= facts.event_step >= 0
    return np.flatnonzero(syncs)


def _idle_syncs(facts: Facts) -> list[tuple[int, int, int]]:
    """(event, outstanding ns, ns it cost) of the trailing syncs: nothing launched after them in their step, and the
    GPU at most MAX_OUTSTANDING_SHARE busy while they wait."""
    trace = facts.trace
    launch_ts = trace.ts[facts.launcher[facts.is_device_work & (facts.launcher >= 0)]]
    starts = _busy_starts(facts)
    idle: list[tuple[int, int, int]] = []
    for i in _candidates(facts).tolist():
        start, end = int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])
        step = int(facts.event_step[i])
        stop = facts.steps[step].end if step >= 0 else facts.window[1]
        if np.any((launch_ts >= end) & (launch_ts < stop)):
            continue  # more work is queued after it in the same step: not trailing
        outstanding = busy_ns(facts, start, end)
        if outstanding <= MAX_OUTSTANDING_SHARE * (end - start):
            idle.append((i, outstanding, _cost(facts, starts, start, end)))
    return idle


def _record(ctx: Context, idle: list[tuple[int, int, int]], total: int, share: float) -> TrailingSync:
    facts = ctx.facts
    trace = facts.trace
    regions = {_region(facts, i) for i, _, _ in idle}
    i0, outstanding0, _ = max(idle, key=lambda x: int(trace.dur[x[0]]))
    last_end = _gpu_idle_since(facts, int(trace.ts[i0]))
    return TrailingSync(
        name=trace.event_name(i0),
        region=regions.pop() if len(regions) == 1 else None,
        syncs=len(idle),
        steps=ctx.step_count,
        steps_hit=tuple(sorted({s for i, _, _ in idle if (s := facts.step_of(i)) is not None})),
        sync_us=us(sum(int(trace.dur[i]) for i, _, _ in idle)),
        saved_us=us(total),
        longest_us=us(trace.dur[i0]),
        outstanding_us=us(outstanding0),
        gpu_idle_before_us=us(trace.ts[i0] - last_end) if last_end is not None else None,
        step_share_percent=100.0 * share,
    )


def _cost(facts: Facts, starts: np.ndarray, start: int, end: int) -> int:
    """What the sync costs: its duration, at most the GPU idle from its start to the next device work
    after it (to its end when none follows)."""
    pos = np.searchsorted(starts, end)
    nxt = int(starts[pos]) if pos < starts.size else end
    return min(end - start, (nxt - start) - busy_ns(facts, start, nxt))


def _region(facts: Facts, i: int) -> str | None:
    parent = int(facts.parent[i])
    if parent < 0 or facts.trace.event_name(parent).startswith("ProfilerStep#"):
        return None
    return facts.trace.event_name(parent)


def _busy_starts(facts: Facts) -> np.ndarray:
    starts = [iv.start for iv in facts.gpu_busy.values()]
    return np.sort(np.concatenate(starts)) if starts else np.empty(0, np.int64)


def _gpu_idle_since(facts: Facts, ts: int) -> int | None:
    """When the busiest device last finished work before ts."""
    ends = [iv.end[iv.end <= ts] for iv in facts.gpu_busy.values()]
    ends = [e for e in ends if e.size]
    return int(max(e.max() for e in ends)) if ends else None
