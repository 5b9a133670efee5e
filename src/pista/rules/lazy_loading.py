"""The lazy-loading rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
lazy-loading`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/lazy_loading.ftl."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules import _one_time as one_time
from pista.rules._common import evidence, step_at, us
from pista.rules._idle import sum_under
from pista.trace.facts import Facts, Intervals

ID = "lazy-loading"

# Spread over the window's steps, the first calls must hold the GPU idle for 1% of the median step
# (REVIEW.md): gpu/lazy_late_kernel's take 1800%; the warmed-up fixtures load nothing.
MIN_STEP_SHARE = 0.01
EVIDENCE_CALLS = 4  # first calls shown (the longest), each with its loads; presentation


class FirstCall(Record):
    """An op call that loaded its kernels (its first call)."""

    op: str
    dur_us: float
    typical_us: float | None  # the same op's calls without a load (median), where it has some
    loads: int
    load_us: float
    via: str  # the call the load sits in (cudaLaunchKernel...), or the op itself
    step: int | None
    # without a load event (older CUPTI, ROCm): the longest start-up runtime call inside ("": the op's own
    # host time in no recorded call, cuBLAS's or cuDNN's set-up), and its time
    setup: str = ""
    setup_us: float = 0.0


class LazyLoading(Record):
    events: int
    load_us: float  # the load events themselves
    first_calls_us: float  # the op calls holding them (wall)
    idle_us: float  # GPU idle in those calls, less their ops' usual: the impact's total
    steps: int  # ProfilerSteps the window holds (0 without: the impact is per window)
    in_steps: tuple[int, ...]
    calls: tuple[FirstCall, ...]  # longest first
    startup: int = 0  # of them, calls that start CUDA up with no load event recorded (_one_time.startup_calls)


class CallNote(Record):
    """Note on a first call."""

    loads: int
    load_us: float


class LoadNote(Record):
    """Note on a load event."""

    via: str


class StartupNote(Record):
    """Note on a first call that starts CUDA up with no load event recorded."""

    setup: str  # its longest start-up runtime call ("": untraced set-up)
    setup_us: float


class SetupNote(Record):
    """Note on the start-up runtime call inside it."""

    dur_us: float


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    loads, holders, setups = _holders(facts, taken)
    if not holders:
        return [], one_time.EMPTY
    calls = sorted(holders, key=lambda op: int(trace.ts[op]))
    claim = one_time.spans([int(trace.ts[op]) for op in calls], [int(trace.ts[op] + trace.dur[op]) for op in calls])
    typical = {op: _usual(facts, op, holders) for op in calls}
    idle = max(0.0, one_time.idle_ns(facts, one_time.minus(claim, taken)) - sum(t or 0.0 for t in typical.values()))
    impact = ctx.once(idle)
    if impact.share < MIN_STEP_SHARE:
        return [], one_time.EMPTY

    rows = [(op, _first_call(facts, op, holders[op], setups.get(op, []), typical[op])) for op in calls]
    rows.sort(key=lambda r: -r[1].dur_us)
    record = _record(facts, loads, calls, rows, idle)
    return [Finding(ID, record, impact, _evidence(facts, rows, holders, setups, loads))], claim


def _record(facts: Facts, loads: np.ndarray, calls: list[int], rows: list, idle: float) -> LazyLoading:
    trace = facts.trace
    return LazyLoading(
        events=int(loads.size), load_us=us(trace.dur[loads].sum()),
        first_calls_us=us(sum(int(trace.dur[op]) for op in calls)), idle_us=us(idle), steps=len(facts.steps),
        in_steps=tuple(sorted({r.step for _, r in rows if r.step is not None})), calls=tuple(r for _, r in rows),
        startup=sum(1 for _, r in rows if r.loads == 0),
    )


def _holders(facts: Facts, taken: Intervals) -> tuple[np.ndarray, dict[int, list[int]], dict[int, list[int]]]:
    """The kernel loads in the window (outside other findings' spans), the first calls holding them (each
    with its loads; a first call that starts CUDA up with no load recorded holds none), and those
    start-up calls' set-up runtime calls."""
    trace = facts.trace
    lo, hi = facts.window
    loads = np.flatnonzero(one_time.loading_mask(facts) & (trace.ts >= lo) & (trace.ts < hi))
    loads = loads[~one_time.covered(taken, trace.ts[loads])]
    holders: dict[int, list[int]] = defaultdict(list)
    for i in loads.tolist():
        op = one_time.outermost_op(facts, i)
        if op < 0:
            op = int(facts.parent[i]) if facts.parent[i] >= 0 else i
        holders[op].append(i)
    # first calls that start CUDA up with no load event recorded (older CUPTI, ROCm): their set-up calls
    setups = one_time.startup_calls(facts, taken)
    for op in setups:
        a, b = int(trace.ts[op]), int(trace.ts[op] + trace.dur[op])
        # one mostly inside another finding's span is told there (kineto's resnet50 sample: the first conv2d's
        # cudnn_convolution is cudnn-setup's first pass)
        if one_time.minus(one_time.spans([a], [b]), taken).total * 2 >= b - a:
            holders.setdefault(op, [])
    return loads, holders, setups


def _evidence(facts: Facts, rows: list, holders: dict[int, list[int]], setups: dict[int, list[int]],
              loads: np.ndarray) -> list:
    """The longest first calls, in time order: each with its loads, or its longest set-up call."""
    trace = facts.trace
    ev = []
    for op, row in sorted(rows[:EVIDENCE_CALLS], key=lambda r: int(trace.ts[r[0]])):
        if not holders[op]:
            ev.append(evidence(facts, op, StartupNote(row.setup, row.setup_us)))
            ev += [evidence(facts, int(i), SetupNote(us(trace.dur[i]))) for i in setups.get(op, [])[:1] if i != op]
            continue
        if op not in loads:
            ev.append(evidence(facts, op, CallNote(row.loads, row.load_us)))
        ev += [evidence(facts, int(i), LoadNote(row.via)) for i in holders[op]]
    return ev


def _first_call(facts: Facts, op: int, loads: list[int], setups: list[int], typical: float | None) -> FirstCall:
    """The row of one first call: its loads, or the start-up it holds without one."""
    trace = facts.trace
    via = int(facts.parent[loads[0]]) if loads else -1
    setup, setup_ns = "", 0
    if not loads:
        longest = max(setups, key=lambda i: int(trace.dur[i]), default=-1)
        if longest >= 0:
            setup, setup_ns = trace.event_name(longest), int(trace.dur[longest])
        else:  # its own host time in no recorded call: cuBLAS's or cuDNN's set-up, the context's creation
            ops = facts.is_host & trace.category_mask({"cpu_op"})
            setup_ns = int(facts.self_time[op] + sum_under(facts, ops, np.array([op]), facts.self_time)[0])
    return FirstCall(
        op=trace.event_name(op), dur_us=us(trace.dur[op]),
        typical_us=None if typical is None else typical / 1000.0, loads=len(loads),
        load_us=us(trace.dur[loads].sum()) if loads else 0.0,
        via=trace.event_name(via) if via >= 0 else trace.event_name(op),
        step=step_at(facts, int(trace.ts[op])), setup=setup, setup_us=us(setup_ns))


def _usual(facts: Facts, op: int, holders: dict[int, list[int]]) -> float | None:
    """The median wall time (ns) of the same op's calls at the same depth that load nothing."""
    trace = facts.trace
    same = np.flatnonzero((trace.name == trace.name[op]) & (facts.depth == facts.depth[op]) & facts.is_host)
    same = same[~np.isin(same, list(holders))]
    return float(np.median(trace.dur[same])) if same.size else None
