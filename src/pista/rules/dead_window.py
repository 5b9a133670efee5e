"""The dead-window rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
dead-window`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/dead_window.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Evidence, Finding, Record, top_indices
from pista.query import SYNC_NAMES, name_mask
from pista.rules import _one_time as one_time
from pista.rules._common import enclosing_op, evidence, kernel_launches, mark_ancestors, step_at, us
from pista.trace.facts import STEP_NAME, Facts, Intervals

ID = "dead-window"

# Absolute floor, µs, on the wait less the profiler's own events. Warmed-up regions reach their
# first launch within 0.6 ms on every fixture (series_mlp_* steps 585 µs, seed_mm4096_compile
# 390 µs); the cold ones take 19.6 ms (gpu/eval_first_call) and 95.9 ms (gpu/window_sync_cold).
DEAD_WINDOW_MIN_US = 1000.0
# ...and this many times the median of the same region's other calls, where it has some: steady
# per-step waits are not one-time set-up (big_gpt_eager_20steps' AdamW step waits 1.4-1.6 ms every
# step, gpu_idle_dataloader's data_loading 13.5-13.9 ms: other rules' business).
DEAD_WINDOW_RATIO = 5.0
# ...and the wait must be mostly the program's: where the profiler's own buffer requests are more than this
# share of it, the wait is theirs (profiler-overhead) and the first calls after it lazy-loading's (issue 35:
# TraceLens' tl_b200_eager, 2.6 ms before vLLM's first launch, 1.5 ms of it an Activity Buffer Request; the
# fixtures' dead windows hold 0% and 2.5%: gpu/eval_first_call, gpu/window_sync_cold).
MAX_PROFILER_SHARE = 0.5
# Spread over the window's steps, a one-time cost under 1% of the median step is noise (REVIEW.md):
# gpu/recompile's new graph waits 6.7 ms in step 3 of 300 ms steps (and inside autotuning).
MIN_STEP_SHARE = 0.01
# ...and the wait must be start-up, not the host's own work: where the Python frames, the waits (a sync
# draining work queued before the region) and the ops that are not first calls (their other calls take as
# long) fill more than this share of it, the region does that work every time it runs (heldout TraceLens
# traces: tl_h100_owlv2's 128 ms of scipy zoom_shift and normalize per image, tl_h100_timesformer's 218 ms of
# VideoMAE preprocessing and read_video_pyav per video, tl_h100_qwen05's 14.1 ms cudaDeviceSynchronize waiting
# for the harness's earlier kernels: 99-100% of their waits). The fixtures' start-up waits hold 0.4-39% of it,
# in untraced set-up inside the first call, start-up calls and allocations (gpu/eval_first_call 0.4%,
# gpu/window_sync_cold 0%, savings/h100/loop_ensemble__fixed's first bmm 4%).
MAX_HOST_WORK_SHARE = 0.5
DEAD_WINDOW_MAX_FINDINGS = 3  # the longest windows
# A window after the first, in the same cold pass, is told only at this share of the window (a warning's): review 4
# marked rtx4090_tp2_llama's Attention (2.5%, 4.0%) and Attention_Forward (1.2%) windows behind the Embedding's
# (37%, 49%) as restating the same start-up, with the same fix.
EXTRA_MIN_SHARE = 0.05
FILLER_EVENTS = 3  # recorded calls named from inside the window; presentation
FIRST_CALLS_SHOWN = 4  # later first calls named; presentation


class Filler(Record):
    """A recorded call inside the window."""

    name: str
    self_us: float


class FirstCall(Record):
    """An op call in the same region call that loads its kernels (its first call), past the wait."""

    name: str
    dur_us: float  # its time after the first launch (all of it for a later op)


class DeadWindow(Record):
    region: str
    step: int | None
    steps: int  # ProfilerSteps the window holds (0 without: the impact is per window)
    target: str  # "launch" | "aten" (CPU-only trace: the first aten:: op)
    first_target: str  # the call that ended the wait (cuLaunchKernelEx...)
    in_op: str | None  # the op that call sits in
    gap_us: float
    typical_gap_us: float | None  # the median wait of the region's other calls
    recorded_us: float  # self time of recorded calls in the wait
    untraced_us: float  # the rest: set-up inside the op (or the region) that nothing recorded
    profiler_us: float  # the profiler's own events in the wait
    loading_us: float  # CUDA module/function loads in the wait and the later first calls
    fillers: tuple[Filler, ...]
    first_calls: tuple[FirstCall, ...]  # later first calls in the same region call, longest first
    first_calls_us: float  # the time they add after the wait
    idle_us: float  # GPU idle in the wait and the first calls, less the typical wait: the impact's total
    cause: str  # profiler | library | first-calls | host (_one_time's causes)
    # the window starts past step 0 (the schedule skipped steps): their warm-up did not run this
    # region (gpu/eval_first_call: a branch first run in step 3 of schedule(wait=1, warmup=1, active=3))
    warmed_up: bool


class WindowNote(Record):
    """Note on the dead window itself."""

    region: str
    target: str


class RegionNote(Record):
    """Note on the region."""


class TargetNote(Record):
    """Note on the call that ended the wait."""

    target: str
    in_op: str | None


class FillerNote(Record):
    """Note on a recorded call inside the window."""

    self_us: float


class FirstCallNote(Record):
    """Note on a later first call in the region call."""

    dur_us: float


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    regions = np.flatnonzero(facts.is_host & trace.category_mask({"user_annotation"}))
    if regions.size == 0:
        return [], one_time.EMPTY
    if facts.has_gpu:
        targets, target_kind = kernel_launches(facts), "launch"
    else:
        aten_ids = [i for i, name in enumerate(trace.names) if name.startswith("aten::")]
        targets = facts.is_host & trace.category_mask({"cpu_op"}) & np.isin(trace.name, aten_ids)
        target_kind = "aten"
    tgt = np.flatnonzero(targets)
    if tgt.size == 0:
        return [], one_time.EMPTY
    gaps, ends = _first_targets(trace, regions, tgt)
    candidates = _candidates(facts, taken, regions, gaps, ends)
    # nested regions waiting for the same launch: keep the innermost (latest start)
    best: dict[int, tuple[int, int, int, float | None]] = {}
    for cand in candidates:
        held = best.get(cand[1])
        if held is None or trace.ts[cand[0]] > trace.ts[held[0]]:
            best[cand[1]] = cand
    out: list[Finding]
    out, claimed = [], one_time.EMPTY
    for cand in sorted(best.values(), key=lambda c: -c[2]):
        finding, spans = _finding(ctx, *cand, target_kind=target_kind, taken=one_time.union(taken, claimed))
        if finding is not None:
            out.append(finding)
            claimed = one_time.union(claimed, spans)
    # a small window beside a bigger one is the same cold pass: not told, but it stays claimed (lazy-loading and
    # cudnn-setup would restate it)
    out.sort(key=lambda f: -f.impact.share)
    out = [f for k, f in enumerate(out) if k == 0 or f.impact.share >= EXTRA_MIN_SHARE]
    return out[:DEAD_WINDOW_MAX_FINDINGS], claimed


def _first_targets(trace, regions: np.ndarray, tgt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per region: the ns from its start to the first target (launch or aten op) on its own thread at or
    after its start, and that target, where it falls inside the region (-1 where none does)."""
    # lanes of the targets and regions only, not one int64 per event of the trace
    tgt_key = trace.lane_keys(tgt)
    order = np.lexsort((trace.ts[tgt], tgt_key))
    tgt, tgt_key = tgt[order], tgt_key[order]
    tgt_ts = trace.ts[tgt]
    region_key = trace.lane_keys(regions)
    gaps = np.full(regions.size, -1, dtype=np.int64)
    ends = np.full(regions.size, -1, dtype=np.int64)
    for key in np.unique(region_key).tolist():
        sel = np.flatnonzero(region_key == key)
        lo, hi = np.searchsorted(tgt_key, key, "left"), np.searchsorted(tgt_key, key, "right")
        if lo == hi:
            continue
        r = regions[sel]
        pos = lo + np.searchsorted(tgt_ts[lo:hi], trace.ts[r], "left")
        ok = pos < hi
        first = np.where(ok, tgt[np.minimum(pos, hi - 1)], -1)
        ok &= trace.ts[np.maximum(first, 0)] < trace.ts[r] + trace.dur[r]
        gaps[sel[ok]] = trace.ts[first[ok]] - trace.ts[r[ok]]
        ends[sel[ok]] = first[ok]
    return gaps, ends


def _candidates(facts: Facts, taken: Intervals, regions: np.ndarray, gaps: np.ndarray,
                ends: np.ndarray) -> list[tuple[int, int, int, float | None]]:
    """(region, its first target, the gap, the same region's typical gap) for each region whose wait, less
    the profiler's own calls in it, is DEAD_WINDOW_MIN_US and DEAD_WINDOW_RATIO times its typical one."""
    trace = facts.trace
    has = gaps >= 0
    # ProfilerStep#2, #3... are one region for the comparison
    step_ids = [i for i, name in enumerate(trace.names) if STEP_NAME.match(name)]
    names = np.where(np.isin(trace.name, step_ids)[regions], -1, trace.name[regions])
    profiler_in = one_time.starts_within(facts, one_time.profiler_mask(facts))
    free = has & ~one_time.covered(taken, trace.ts[regions])  # not inside a cold step or a compile
    candidates = []
    for k in np.flatnonzero(free & (gaps >= DEAD_WINDOW_MIN_US * 1000)).tolist():
        start = int(trace.ts[regions[k]])
        own = int(gaps[k]) - profiler_in(start, start + int(gaps[k]))
        same = np.flatnonzero(has & (names == names[k]))
        others = gaps[same[same != k]]
        typical = float(np.median(others)) if others.size else None
        if own < DEAD_WINDOW_MIN_US * 1000 or (typical is not None and own < DEAD_WINDOW_RATIO * max(typical, 1.0)):
            continue
        if int(gaps[k]) - own > MAX_PROFILER_SHARE * int(gaps[k]):
            continue
        candidates.append((int(regions[k]), int(ends[k]), int(gaps[k]), typical))
    return candidates


def _first_calls(ctx: Context, region: int, after: int) -> list[int]:
    """The outermost op calls in the region call, from `after` on, that hold a kernel load, or that start CUDA
    up with no load event to show it (_one_time.startup_ops) for STARTUP_CALL_NS or more past `after`
    (foreign/hta_alexnet: the first convolution runs 10 s past its first launch, older CUPTI records no
    load)."""
    facts = ctx.facts
    trace = facts.trace
    lo, hi = int(trace.ts[after]), int(trace.ts[region] + trace.dur[region])
    loads = np.flatnonzero(one_time.loading_mask(facts) & (trace.ts >= lo) & (trace.ts < hi))
    ops = {one_time.outermost_op(facts, int(i)) for i in loads}
    ops |= {op for op in one_time.startup_ops(facts) if int(trace.ts[op]) < hi
            and int(trace.ts[op] + trace.dur[op]) - max(int(trace.ts[op]), lo) >= one_time.STARTUP_CALL_NS}
    lane = (trace.pid[region], trace.tid[region])
    # the op holding the first launch counts too when it loads its kernel there (a first call)
    return sorted((op for op in ops if op >= 0 and (trace.pid[op], trace.tid[op]) == lane
                   and trace.ts[op] + trace.dur[op] > lo), key=lambda op: int(trace.ts[op]))


def _finding(ctx: Context, region: int, end: int, gap: int, typical: float | None, target_kind: str,
             taken: Intervals) -> tuple[Finding | None, Intervals]:
    facts = ctx.facts
    trace = facts.trace
    start, stop = int(trace.ts[region]), int(trace.ts[end])
    # what was recorded in the gap: events inside it, not the region or the ops that span it
    inside = _inside(facts, region, end)
    profiler_ns = one_time.total_in(facts, one_time.profiler_mask(facts), start, stop)
    host_ns = _host_work(facts, inside)
    if host_ns > MAX_HOST_WORK_SHARE * (gap - profiler_ns):
        return None, one_time.EMPTY
    firsts = _first_calls(ctx, region, end)
    claim = one_time.spans([start] + [int(trace.ts[op]) for op in firsts],
                           [stop] + [int(trace.ts[op] + trace.dur[op]) for op in firsts])
    idle = max(0.0, one_time.idle_ns(facts, one_time.minus(claim, taken)) - (typical or 0.0) - host_ns)
    impact = ctx.once(idle)
    if impact.share < MIN_STEP_SHARE:
        return None, one_time.EMPTY

    recorded = int(facts.self_time[inside].sum())
    fillers = top_indices(facts.self_time, inside, FILLER_EVENTS)
    in_op = _in_op(facts, end)
    after = {op: int(trace.ts[op] + trace.dur[op]) - max(int(trace.ts[op]), stop) for op in firsts}  # past the wait
    by_length = sorted(firsts, key=lambda op: -after[op])
    step = step_at(facts, start)
    cause_op = one_time.outermost_op(facts, end) if in_op is not None else -1
    record = DeadWindow(
        region=trace.event_name(region), step=step, steps=len(facts.steps), target=target_kind,
        warmed_up=bool(facts.steps) and facts.steps[0].number > 0,
        first_target=trace.event_name(end), in_op=in_op, gap_us=us(gap),
        typical_gap_us=None if typical is None else typical / 1000.0, recorded_us=us(recorded),
        untraced_us=us(max(gap - recorded, 0)), profiler_us=us(profiler_ns),
        loading_us=us(_loading_ns(facts, start, stop, firsts)),
        fillers=tuple(Filler(trace.event_name(int(i)), us(facts.self_time[i])) for i in fillers),
        first_calls=tuple(FirstCall(trace.event_name(op), us(after[op])) for op in by_length[:FIRST_CALLS_SHOWN]),
        first_calls_us=us(claim.total - (stop - start)), idle_us=us(idle),
        cause=one_time.cause_of(profiler_ns, int(idle), _gemm_or(facts, cause_op, in_op)),
    )
    ev = [
        Evidence.span("dead window", facts.lane_of(region), start, stop, step=step,
                      detail=WindowNote(record.region, target_kind)),
        evidence(facts, region, RegionNote()),
        evidence(facts, end, TargetNote(target_kind, in_op)),
        *(evidence(facts, int(i), FillerNote(us(facts.self_time[i]))) for i in fillers),
        *(evidence(facts, op, FirstCallNote(us(after[op]))) for op in by_length[:FIRST_CALLS_SHOWN]),
    ]
    return Finding(ID, record, impact, ev), claim


def _in_op(facts: Facts, end: int) -> str | None:
    """The op the first target event ran inside (None where it is an op itself, or in none)."""
    trace = facts.trace
    host_op = enclosing_op(facts, end) if int(trace.cat[end]) != trace.category_id("cpu_op") else end
    return trace.event_name(host_op) if host_op >= 0 and host_op != end else None


def _loading_ns(facts: Facts, start: int, stop: int, firsts: list[int]) -> int:
    """ns of module loading (one_time.loading_mask) starting in the wait or in the first calls after it."""
    trace = facts.trace
    loading_in = one_time.starts_within(facts, one_time.loading_mask(facts))
    return loading_in(start, stop) + sum(loading_in(int(trace.ts[op]), int(trace.ts[op] + trace.dur[op]))
                                         for op in firsts)


def _inside(facts: Facts, region: int, end: int) -> np.ndarray:
    """The events recorded in the wait (its thread's, and the profiler's lane), not the region or the ops
    that span it."""
    trace = facts.trace
    start, stop = int(trace.ts[region]), int(trace.ts[end])
    spanning = np.zeros(len(trace), dtype=bool)
    spanning[region] = True
    mark_ancestors(facts, np.array([end]), spanning)
    same_lane = (trace.pid == trace.pid[region]) & (trace.tid == trace.tid[region])
    inside = ((facts.is_host & same_lane) | facts.is_overhead) & (trace.ts >= start) & (trace.ts < stop)
    return inside & ~spanning


def _host_work(facts: Facts, inside: np.ndarray) -> int:
    """ns of the wait that is the host's own work, not start-up: Python frames' self time, syncs (a wait for
    work queued earlier), and ops that are not first calls (the other calls of their name take as long)."""
    trace = facts.trace
    own = np.maximum(facts.self_time, 0)
    frames = inside & trace.category_mask({"python_function"})
    waits = inside & name_mask(facts, SYNC_NAMES)
    ops = np.flatnonzero(inside & trace.category_mask({"cpu_op"}))
    warm = [int(i) for i in ops.tolist() if not one_time.cold_op(facts, int(i))]
    return int(own[frames].sum() + own[waits].sum() + own[warm].sum())


def _gemm_or(facts, outer: int, in_op: str | None) -> str | None:
    """The op the wait sits in, named by its GEMM level where it has one (aten::matmul > aten::mm)."""
    if in_op in one_time.GEMM_OPS or outer < 0:
        return in_op
    name = facts.trace.event_name(outer)
    return name if name in one_time.GEMM_OPS else in_op
