"""What:
A record_function region (a ProfilerStep, or a user region such as `matmul_add`) runs for a long
time (over 1 ms) before its first kernel launch (on a CPU-only trace: before its first aten:: op),
far longer than the same region takes to get there on its other calls (regions seen once: the 1 ms
alone): one-time set-up inside the window.

Why:
The set-up (cuBLAS handle and workspace allocation, library heuristics, CUDA lazy module loading,
profiler buffers, compiled-graph loading) is paid once, but it sits inside the first call's
region and ops, so those look slow and the GPU idles through it. It is not what the program
costs per step.

Example:
`seed_mm64_cold` (no warm-up): `matmul_add` in step 0 ran 107.285 ms before its first launch
(cuLaunchKernelEx in aten::mm), 882x the median 121.6 µs of steps 1-2; of that, Activity Buffer Request (2.505
ms), cudaDeviceGetAttribute (582.3 µs), module loading and cudaMalloc calls are recorded, the rest
(102.7 ms) is aten::mm's own untraced set-up. `seed_mm4096_compile_cold`: the compiled graph's
first call waits 3.207 ms (2.880 ms of it an Activity Buffer Request) against 191.2 µs the second time.

Fix:
Warm up outside the profiler: run the step (every shape) a few times before profiling, or use
`torch.profiler.schedule(wait=1, warmup=1, active=N)` so the set-up falls outside the window.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding, top_indices
from pista.rules._common import enclosing_op, evidence, fmt_ns, kernel_launches, mark_ancestors, step_at, us
from pista.trace.facts import STEP_NAME

ID = "dead-window"
TITLE = "Dead window: a region waits long before its first launch"
SEVERITY = Severity.WARNING

# Absolute floor, µs. Warmed-up regions reach their first launch within 0.6 ms on every fixture
# (series_mlp_* steps 585 µs, seed_mm4096_compile 390 µs); the cold ones take 3.5 ms
# (seed_mm4096_compile_cold) and 107 ms (seed_mm64_cold).
DEAD_WINDOW_MIN_US = 1000.0
# ...and this many times the median of the same region's other calls, where it has some: steady
# per-step waits are not one-time set-up (big_gpt_eager_20steps' AdamW step waits 1.4-1.6 ms every
# step, gpu_idle_dataloader's data_loading 13.5-13.9 ms: other rules' business). The cold fixtures
# are 17x (the compiled graph's call, 3207 vs 191 µs) and 882x.
DEAD_WINDOW_RATIO = 5.0
DEAD_WINDOW_MAX_FINDINGS = 3  # the longest windows; recompile has one per new graph
FILLER_EVENTS = 3  # recorded calls shown from inside the window; presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    regions = np.flatnonzero(facts.is_host & trace.category_mask({"user_annotation"}))
    if regions.size == 0:
        return []
    if facts.has_gpu:
        targets = kernel_launches(facts)
        target_word = "kernel launch"
    else:
        aten_ids = [i for i, name in enumerate(trace.names) if name.startswith("aten::")]
        targets = facts.is_host & trace.category_mask({"cpu_op"}) & np.isin(trace.name, aten_ids)
        target_word = "aten:: op"
    tgt = np.flatnonzero(targets)
    if tgt.size == 0:
        return []
    lane = trace.pid * 1_000_003 + trace.tid
    tgt = tgt[np.lexsort((trace.ts[tgt], lane[tgt]))]
    tgt_key, tgt_ts = lane[tgt], trace.ts[tgt]

    # first target on the region's own thread at or after its start, if inside the region
    gaps = np.full(regions.size, -1, dtype=np.int64)
    ends = np.full(regions.size, -1, dtype=np.int64)
    for key in np.unique(lane[regions]).tolist():
        sel = np.flatnonzero(lane[regions] == key)
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

    has = gaps >= 0
    # ProfilerStep#2, #3... are one region for the comparison
    step_ids = [i for i, name in enumerate(trace.names) if STEP_NAME.match(name)]
    names = np.where(np.isin(trace.name[regions], step_ids), -1, trace.name[regions])
    candidates = []
    for k in np.flatnonzero(has & (gaps >= DEAD_WINDOW_MIN_US * 1000)).tolist():
        same = np.flatnonzero(has & (names == names[k]))
        others = gaps[same[same != k]]
        typical = float(np.median(others)) if others.size else None
        if typical is not None and gaps[k] < DEAD_WINDOW_RATIO * max(typical, 1.0):
            continue
        candidates.append((int(regions[k]), int(ends[k]), int(gaps[k]), typical))
    # nested regions waiting for the same launch: keep the innermost (latest start)
    best: dict[int, tuple[int, int, int, float | None]] = {}
    for cand in candidates:
        held = best.get(cand[1])
        if held is None or trace.ts[cand[0]] > trace.ts[held[0]]:
            best[cand[1]] = cand
    chosen = sorted(best.values(), key=lambda c: -c[2])[:DEAD_WINDOW_MAX_FINDINGS]
    return [_finding(ctx, *c, target_word=target_word) for c in chosen]


def _finding(ctx: Context, region: int, end: int, gap: int, typical: float | None, target_word: str) -> Finding:
    facts = ctx.facts
    trace = facts.trace
    start, stop = int(trace.ts[region]), int(trace.ts[end])
    # what was recorded in the gap: events inside it, not the region or the ops that span it
    spanning = np.zeros(len(trace), dtype=bool)
    spanning[region] = True
    mark_ancestors(facts, np.array([end]), spanning)
    same_lane = (trace.pid == trace.pid[region]) & (trace.tid == trace.tid[region])
    inside = ((facts.is_host & same_lane) | facts.is_overhead) & (trace.ts >= start) & (trace.ts < stop)
    inside &= ~spanning
    recorded = int(facts.self_time[inside].sum())
    fillers = top_indices(facts.self_time, inside, FILLER_EVENTS)
    host_op = enclosing_op(facts, end) if int(trace.cat[end]) != trace.category_id("cpu_op") else end
    region_name = trace.event_name(region)
    step = step_at(facts, start)
    where = f" (step {step})" if step is not None else ""
    compare = (f", {gap / max(typical, 1.0):.0f}x the {fmt_ns(typical)} its other calls take"
               if typical is not None else "")
    filler_text = ", ".join(f"{trace.event_name(i)} {fmt_ns(facts.self_time[i])}" for i in fillers)
    untraced = max(gap - recorded, 0)
    in_op = f" inside {trace.event_name(host_op)}" if host_op >= 0 and host_op != end else ""
    lane = facts.lane_of(region)
    ev = [
        Evidence.span("dead window", lane, start, stop, step=step,
                      detail=f"from {region_name} to its first {target_word}"),
        evidence(facts, region, detail="the region"),
        evidence(facts, end, detail=f"its first {target_word}{in_op}"),
    ]
    ev += [evidence(facts, int(i), detail=f"in the window, self time {fmt_ns(facts.self_time[i])}") for i in fillers]
    return legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"'{region_name}'{where} ran {fmt_ns(gap)} before its first {target_word} "
                 f"({trace.event_name(end)}{in_op}){compare}. {fmt_ns(recorded)} of it is in recorded calls"
                 + (f" ({filler_text})" if filler_text else "")
                 + f"; {fmt_ns(untraced)} is untraced set-up{in_op}."),
        advice=("Warm up outside the profiler: run the step (every shape) a few times first, or use "
                "torch.profiler.schedule(wait=1, warmup=1, active=N) so the one-time set-up is not profiled."),
        evidence=ev,
        metrics={
            "region": region_name,
            "step": step,
            "gap_us": us(gap),
            "typical_gap_us": None if typical is None else typical / 1000.0,
            "recorded_us": us(recorded),
            "untraced_us": us(untraced),
            "first_target": trace.event_name(end),
        },
    )
