"""The profiler-overhead rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
profiler-overhead`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/profiler_overhead.ftl."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules import _one_time as one_time
from pista.rules._common import evidence, step_at, us
from pista.trace.facts import Facts, Intervals

ID = "profiler-overhead"

# Spread over the window's steps, the profiler's time must hold the GPU idle for at least 1% of the
# median step: gpu/profiler_first_step 23%, window_sync_warm 77%; big_gpt_eager_20steps 0.3% (noise).
MIN_STEP_SHARE = 0.01
EVIDENCE_EVENTS = 5  # events shown (the longest); presentation


class InflatedOp(Record):
    """An op the profiler's events landed in."""

    name: str
    overhead_us: float
    op_us: float  # the wall time of the calls that hold the events, together (a share of it is at most 100%)
    events: int
    calls: int = 1


class ProfilerOverhead(Record):
    events: int
    names: tuple[str, ...]  # Activity Buffer Request, Buffer Flush...
    total_us: float
    idle_us: float  # of it, with the GPU idle (the impact's total)
    window_percent: float
    steps: int  # ProfilerSteps the window holds (0 without: the impact is per window)
    in_steps: tuple[int, ...]
    ops: tuple[InflatedOp, ...]  # most overhead first
    outside_us: float  # in no op


class InsideOp(Record):
    """Note on a profiler event inside an op."""

    op: str
    percent: float  # of the op call's wall time
    together_percent: float | None  # all the events in that call, where several


class OutsideOps(Record):
    """Note on a profiler event in no op."""

    dur_us: float


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    lo, hi = facts.window
    idx = np.flatnonzero(one_time.profiler_mask(facts) & (trace.ts >= lo) & (trace.ts < hi))
    idx = idx[~one_time.covered(taken, trace.ts[idx])]  # inside a cold step or a dead window: theirs
    if idx.size == 0 or not _recorded_anything(facts):
        return [], one_time.EMPTY
    claim = one_time.spans(trace.ts[idx], trace.ts[idx] + trace.dur[idx])
    idle = one_time.idle_ns(facts, one_time.minus(claim, taken))
    impact = ctx.once(idle)
    if impact.share < MIN_STEP_SHARE:
        return [], one_time.EMPTY
    idx = idx[np.argsort(-trace.dur[idx], kind="stable")]
    hosts: dict[int, list[int]] = defaultdict(list)
    for i in idx.tolist():
        hosts[int(facts.parent[i])].append(i)
    notes = _notes(facts, hosts)
    total = int(trace.dur[idx].sum())
    record = ProfilerOverhead(
        events=int(idx.size), names=tuple(sorted({trace.event_name(i) for i in idx})), total_us=us(total),
        idle_us=us(idle), window_percent=100.0 * total / max(hi - lo, 1), steps=len(facts.steps),
        in_steps=tuple(sorted({s for s in (step_at(facts, int(trace.ts[i])) for i in idx) if s is not None})),
        ops=_inflated_ops(facts, hosts), outside_us=us(trace.dur[hosts.get(-1, [])].sum()),
    )
    ev = [evidence(facts, int(i), notes[int(i)]) for i in idx[:EVIDENCE_EVENTS]]
    return [Finding(ID, record, impact, ev)], claim


def _notes(facts: Facts, hosts: dict[int, list[int]]) -> dict[int, Record]:
    """Per profiler event, its note: the share of the op call it sits in (and of all of them in that call), or its
    duration in no op (host -1)."""
    trace = facts.trace
    notes: dict[int, Record] = {}
    for host, events in hosts.items():
        if host < 0:
            notes |= {i: OutsideOps(us(trace.dur[i])) for i in events}
            continue
        host_ns = max(int(trace.dur[host]), 1)
        together = _percent(int(trace.dur[events].sum()), host_ns) if len(events) > 1 else None
        notes |= {i: InsideOp(trace.event_name(host), _percent(int(trace.dur[i]), host_ns), together) for i in events}
    return notes


def _percent(part: int, whole: int) -> float:
    """part of whole in percent, at most 100: the profiler's events and the call around them are timed apart and
    can overrun it by a µs (cs521a_myconv_eager: 3.34 ms inside a 3.33 ms call)."""
    return min(100.0, 100.0 * part / whole)


def _inflated_ops(facts: Facts, hosts: dict[int, list[int]]) -> tuple[InflatedOp, ...]:
    """The ops the profiler's events sit in, by name, most overhead first."""
    trace = facts.trace
    by_name: dict[str, list[int]] = defaultdict(list)
    for host in hosts:
        if host >= 0:
            by_name[trace.event_name(host)].append(host)
    ops = []
    for name, calls in by_name.items():
        spent = sum(int(trace.dur[hosts[h]].sum()) for h in calls)
        # against the calls' wall time together: review 6's cs521a_myconv_eager read "24.2 ms inside cudaLaunchKernel
        # (273.2% of its 8.85 ms)", the longest call's 8.85 ms
        ops.append(InflatedOp(name, us(spent), us(sum(int(trace.dur[h]) for h in calls)),
                              sum(len(hosts[h]) for h in calls), len(calls)))
    return tuple(sorted(ops, key=lambda o: -o.overhead_us))


def _recorded_anything(facts) -> bool:
    """Whether the window holds the program's work (an op, a region, device work): a window of the
    profiler's own events and a few runtime calls (device queries, a synchronize) recorded nothing the
    profiler inflated (issue 35: flowmatch_pytorch_trace, 0 ops and no kernel, read as 8.4% profiler
    overhead inside an idle cudaDeviceSynchronize)."""
    lo, hi = facts.window
    trace = facts.trace
    work = (facts.is_host & trace.category_mask({"cpu_op", "user_annotation"})) | facts.is_device_work
    return bool((work & (trace.ts >= lo) & (trace.ts < hi)).any())
