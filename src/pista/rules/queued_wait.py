"""The queued-wait rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
queued-wait`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/queued_wait.ftl."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from pista.findings import Context, Evidence, Finding, Impact, Record, Severity, steps_of
from pista.purpose import CODE, classify
from pista.rules._common import step_at, us
from pista.rules._idle import ledger
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

ID = "queued-wait"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The idle it names is no dispatch idle: launch-bound and many-calls leave it out before they count.
CLAIMS_FIRST = True

# A stretch of GPU idle this long (ns) or longer whose ending work was queued before it began: hta_negq_rank0's are
# 4.6-64 ms, hta_sampled_rank0's 1-57 ms; no other GPU fixture has one (the H100/H200 captures' idle ends at work
# launched inside it: the host was late).
MIN_STALL_NS = 1_000_000
# The idle ends where that work starts, within this (ns): the ledger's stretches end where the next work begins.
END_SLACK_NS = 10_000
# At least this share of the median step (the window without steps) before it is worth a finding: negq 49%,
# vllm's wait before its first work 48% of the window.
MIN_STEP_SHARE = 0.05
# The wait before the window's first recorded device work is named only where the GPU then runs back to back, at least
# this share of the rest of the window (TraceLens' vLLM windows: 100%; hta_backward_thread's single 45 µs kernel,
# queued 64 ms, 0.25%: a trimmed trace, nothing to read).
BUSY_AFTER_SHARE = 0.8
GRAPH_LAUNCH = re.compile(r"GraphLaunch")
EVIDENCE_STALLS = 3


class QueuedWait(Record):
    steps: int
    has_steps: bool
    stall_us: float  # per step: idle inside the window with the ending work queued before it began
    stalls: float  # per step
    longest_us: float
    ahead_ms: tuple[float, float]  # how long before the idle ended its ending work was launched: least, most
    by_next: tuple[tuple[str, float], ...]  # what ends the idle (graph, collective, stream), µs per step, most first
    # before the window's first recorded device work: the wait (µs, once), when that work was launched and ran,
    # the GPU's busy share from then to the window's end, and when the host's last launch ended (µs from the start)
    first_wait_us: float = 0.0
    first_name: str = ""
    first_launch_at_us: float = 0.0
    first_start_at_us: float = 0.0
    busy_after_percent: float = 0.0
    host_done_at_us: float = 0.0


class StallNote(Record):
    """Note on one stretch of queued idle."""

    idle_us: float
    ahead_us: float  # its ending work was launched this long before it ran
    next_kind: str  # graph | collective | stream | first


@per_facts
def _stalls(facts: Facts) -> tuple[Intervals, np.ndarray, np.ndarray]:
    """The ledger's per-op idle that waits on queued work: the part of each stretch of MIN_STALL_NS or more after
    the launch of the work that ends it, where that launch came before the stretch ended by MIN_STALL_NS or more;
    with that work, and whether the stretch comes before the window's first recorded device work."""
    empty = (merge_intervals(np.empty(0, np.int64), np.empty(0, np.int64)), np.empty(0, np.int64), np.empty(0, bool))
    book = ledger(facts)
    if book is None:
        return empty
    trace = facts.trace
    idle = book.per_op
    long = (idle.end - idle.start) >= MIN_STALL_NS
    a, b = idle.start[long], idle.end[long]
    work = np.flatnonzero(facts.is_device_work & facts.is_complete)
    if not work.size or not a.size:
        return empty
    work = work[np.argsort(trace.ts[work], kind="stable")]
    nxt = work[np.clip(np.searchsorted(trace.ts[work], b, side="left"), 0, work.size - 1)]
    launcher = facts.launcher[nxt]
    at = np.maximum(launcher, 0)
    launched = trace.ts[at] + trace.dur[at]
    lo = np.maximum(a, launched)
    ok = (trace.ts[nxt] >= b) & (trace.ts[nxt] - b <= END_SLACK_NS) & (launcher >= 0) & (b - lo >= MIN_STALL_NS)
    first = trace.ts[nxt] <= trace.ts[work[0]]  # nothing on the device before it in the whole trace
    return Intervals(lo[ok], b[ok]), nxt[ok], first[ok]


def claimed_idle(facts: Facts) -> Intervals:
    """The queued idle inside the window (empty where it is under MIN_STEP_SHARE of the step): no other rule's
    dispatch idle."""
    stalls, _, first = _stalls(facts)
    inside = Intervals(stalls.start[~first], stalls.end[~first])
    return inside if steps_of(facts).per_step(inside.total).share >= MIN_STEP_SHARE else Intervals(
        stalls.start[:0], stalls.end[:0])


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    stalls, nxt, first = _stalls(facts)
    if not stalls.start.size:
        return []
    inside = Intervals(stalls.start[~first], stalls.end[~first])
    impact = ctx.per_step(inside.total)
    head = _first(facts, stalls, nxt, first)
    if head and (ctx.once(float(head["first_wait_us"]) * 1000.0).share < MIN_STEP_SHARE
                 or float(head["busy_after_percent"]) < 100.0 * BUSY_AFTER_SHARE):
        head = {}
    if impact.share < MIN_STEP_SHARE and not head:
        return []
    n = ctx.step_count
    trace = facts.trace
    ahead = (trace.ts[nxt] - trace.ts[facts.launcher[nxt]]) / 1e6
    kinds = _kinds(facts, nxt)
    by_next: dict[str, float] = {}
    for kind, dur in zip(kinds[~first].tolist(), (stalls.end - stalls.start)[~first].tolist(), strict=True):
        by_next[kind] = by_next.get(kind, 0.0) + us(dur) / n
    record = QueuedWait(
        steps=n, has_steps=bool(facts.steps), stall_us=us(inside.total) / n, stalls=float((~first).sum()) / n,
        longest_us=us((inside.end - inside.start).max()) if inside.start.size else 0.0,
        ahead_ms=(float(ahead[~first].min()), float(ahead[~first].max())) if inside.start.size else (0.0, 0.0),
        by_next=tuple(sorted(by_next.items(), key=lambda kv: -kv[1])), **head)
    evidence = _evidence(facts, stalls, nxt, np.where(first, "first", kinds), np.flatnonzero(~first | bool(head)))
    if impact.share < MIN_STEP_SHARE:  # only the wait before the window's first work: named, nothing claimed
        return [Finding(ID, record, Impact.none(), evidence, severity=Severity.INFO)]
    # the replay frees the queued work, but the stall the trace shows is all the wait there is to take out
    edit = Edit("the wait gone", ready=_waited(facts, inside), most_ns=float(inside.total) / n)
    return [Finding(ID, record, impact, evidence, edit=edit)]


def _evidence(facts: Facts, stalls: Intervals, nxt: np.ndarray, kinds: np.ndarray, shown: np.ndarray) -> list[Evidence]:
    """The longest stretches shown, each as a span and the work that ends it."""
    trace = facts.trace
    out = []
    for k in sorted(shown[np.argsort((stalls.start - stalls.end)[shown], kind="stable")[:EVIDENCE_STALLS]].tolist()):
        lo, hi = int(stalls.start[k]), int(stalls.end[k])
        ahead = float(trace.ts[nxt[k]] - trace.ts[facts.launcher[nxt[k]]]) / 1000.0
        note = StallNote(us(hi - lo), ahead, str(kinds[k]))
        out.append(Evidence.span("GPU idle, work queued", facts.lane_of(int(nxt[k])), lo, hi, step_at(facts, lo), note))
        out.append(Evidence.of(facts, int(nxt[k]), note))
    return out


def _kinds(facts: Facts, nxt: np.ndarray) -> np.ndarray:
    """What ends each stretch: a CUDA graph replay's node, a collective, or other work on a stream."""
    trace = facts.trace
    graph = np.array([bool(GRAPH_LAUNCH.search(trace.event_name(int(j)))) for j in facts.launcher[nxt].tolist()], bool)
    collective = classify(facts)[nxt] == CODE["communication"]
    return np.where(graph, "graph", np.where(collective, "collective", "stream"))


def _first(facts: Facts, stalls: Intervals, nxt: np.ndarray, first: np.ndarray) -> dict[str, Any]:
    """The record's fields for the wait before the window's first recorded device work ({} for none)."""
    if not first.any():
        return {}
    trace = facts.trace
    k = int(np.flatnonzero(first)[0])
    w = int(nxt[k])
    lo, hi = facts.window
    busy = max(facts.gpu_busy.values(), key=lambda iv: iv.total)
    launches = np.flatnonzero(facts.is_launch & facts.is_complete)
    host_done = int((trace.ts[launches] + trace.dur[launches]).max()) if launches.size else lo
    return {"first_wait_us": us(stalls.end[k] - stalls.start[k]), "first_name": trace.event_name(w),
            "first_launch_at_us": us(trace.ts[facts.launcher[w]] - lo), "first_start_at_us": us(trace.ts[w] - lo),
            "busy_after_percent": 100.0 * busy.clip(int(trace.ts[w]), int(hi)).total / max(int(hi) - int(trace.ts[w]), 1),
            "host_done_at_us": us(host_done - lo)}


def _waited(facts: Facts, stalls: Intervals) -> np.ndarray:
    """The device work that waited through a stretch: launched before it began, run after it ended (the work that
    ends it and the work queued behind it, which the replay would otherwise keep where the trace has it)."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & facts.is_complete & (facts.launcher >= 0))
    k = np.searchsorted(stalls.end, trace.ts[work], side="right") - 1  # the latest stretch ended before it ran
    ok = k >= 0
    launched = trace.ts[facts.launcher[work[ok]]]
    return work[ok][launched < stalls.start[k[ok]]].astype(np.int64)
