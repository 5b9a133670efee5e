"""What:
Long stretches inside the steps (1 ms and more) in which no stream of the GPU runs anything, and
what the host was doing meanwhile: the record_function region (a `data_loading` block, an
optimizer, a logging call) and the host ops with the most self time under those gaps.

Why:
The GPU can only be as busy as the host keeps it. Many short gaps between tiny kernels are
launch overhead (see `overhead-bound`, `launch-bound`); a few long gaps mean the host stops
feeding the GPU altogether to do something else: build a batch on the CPU, sleep, wait on I/O,
compile, checkpoint. That time is lost to the GPU unless it runs in parallel with it.

Example:
gpu/gpu_idle_dataloader on an H200: each step builds a batch on the CPU (`aten::randn`,
normalisation, a 4 ms sleep) inside `data_loading`, then runs a bf16 MLP forward (0.75 ms of GPU
time per step). The GPU is idle 98% of the 45.5 ms of steps; 3 gaps of 12.5-14.0 ms, all under
`data_loading`, are 88% of it.

Fix:
The advice follows what fills the gaps: compiling (warm up with the real shapes, see
recompilation), the profiler's own buffer requests (profile more steps), one-time set-up in the
first step (warm up before profiling), or, most often, the program's own host work. For that, move
the host work off the critical path: a `DataLoader` with `num_workers > 0`, `pin_memory=True`
and prefetching; prepare batch N+1 while the GPU runs batch N (CUDA streams, non_blocking copies);
build the data on the GPU; move checkpointing and logging out of the step or to a thread.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import COMPILE_EVENT, fmt_ns, pattern_mask
from pista.trace.facts import Facts

ID = "gpu-idle"
TITLE = "The GPU sits idle for long gaps while the host does other work"
SEVERITY = Severity.WARNING
# A gap counts as long from this length (µs). The gaps between launches of overhead-bound loops
# top out at 126 µs (gpu/launch_bound, gpu/host_sync_item), 167 µs (seed_mm64_warm) and 1.2 ms
# (series_mlp_compile, a few); gpu/gpu_idle_dataloader's are 12.5-14.0 ms.
MIN_GAP_US = 1000.0
# Long gaps must add up to at least this share of the step time: gpu/gpu_idle_dataloader 88%,
# gpu/recompile 80%; series_mlp_compile 14%, big_gpt_eager_20steps 3%, gpu/pageable_memcpy 8%.
MIN_LONG_GAP_SHARE = 0.3
EVIDENCE_GAPS = 3
TOP_OPS = 3
ATTRIBUTED_GAPS = 20  # the longest gaps are attributed to host work; the rest only counted
# The fix follows what fills the gaps, once one cause holds this share of the long-gap time
# (the first step: 1 minus it): gpu/recompile compiles for 87% of it, seed_mm4096_compile_cold
# spends 72% in the profiler's buffer request, seed_mm64_cold has 100% of its gaps in its first
# step (one-time set-up); gpu/gpu_idle_dataloader (0%, 0%, 31%) is data preparation.
CAUSE_MIN_SHARE = 0.3

ADVICE = {
    "data": ("Take that host work off the GPU's critical path: DataLoader workers with pin_memory and "
             "prefetching, prepare the next batch while the GPU computes, build data on the GPU, and move "
             "checkpointing/logging out of the step."),
    "compile": ("The gaps are torch.compile compiling: keep compiles out of the profiled steps (warm up with "
                "the real shapes first, mark dynamic dimensions; see recompilation) and profile the steady "
                "state."),
    "profiler": ("The gaps are the profiler's own work (its buffer requests): profile more steps with "
                 "torch.profiler.schedule(wait, warmup, active) so it is paid once, and read the gaps again "
                 "(see profiler-overhead)."),
    "cold": ("The gaps are one-time set-up in the first step (lazy module loading, library handles, the "
             "allocator growing): warm up before profiling (schedule(wait=1, warmup=1, active=N)) and read the "
             "steady steps (see cold-start, dead-window)."),
}

STEP_REGION = re.compile(r"^ProfilerStep#")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    spans = [(s.start, s.end, s.number) for s in facts.steps] or [(*facts.window, None)]
    total = sum(e - s for s, e, _ in spans)
    if total <= 0:
        return []
    best = None
    for dev, busy in facts.gpu_busy.items():
        gaps = []  # (start, end, step)
        idle = 0
        for s, e, number in spans:
            g = busy.gaps(s, e)
            idle += g.total
            gaps += [(int(a), int(b), number) for a, b in zip(g.start.tolist(), g.end.tolist(), strict=True)]
        long = [g for g in gaps if g[1] - g[0] >= MIN_GAP_US * 1000]
        long_ns = sum(b - a for a, b, _ in long)
        if best is None or long_ns > best[2]:
            best = (dev, long, long_ns, idle)
    dev, long, long_ns, idle = best
    share = long_ns / total
    if share < MIN_LONG_GAP_SHARE:
        return []

    long.sort(key=lambda g: g[0] - g[1])
    regions, ops, region_events = _attribute(facts, long[:ATTRIBUTED_GAPS])
    top_regions = sorted(regions.items(), key=lambda kv: -kv[1])[:TOP_OPS]
    top_ops = sorted(ops.items(), key=lambda kv: -kv[1])[:TOP_OPS]
    lane = f"GPU {dev}"
    evidence = [Evidence.span("GPU idle", lane, a, b, step=number, detail=f"no kernel, copy or memset for {fmt_ns(b - a)}")
                for a, b, number in long[:EVIDENCE_GAPS]]
    for name, _ in top_regions[:2]:
        i = region_events[name]
        evidence.append(Evidence.of(facts, i, detail=f"host region under the gaps ({fmt_ns(regions[name])} of them)"))
    for name, _ in top_ops:
        i = region_events.get(name)
        if i is not None and all(e.name != name for e in evidence):
            evidence.append(Evidence.of(facts, i, detail=f"{fmt_ns(ops[name])} of self time inside the gaps"))

    cause = _cause(facts, long, ops, long_ns)
    doing = ", ".join(f"'{n}' ({fmt_ns(v)})" for n, v in top_regions) or "no recorded host work"
    op_text = ", ".join(f"{n} {fmt_ns(v)}" for n, v in top_ops)
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"The GPU is idle {100 * idle / total:.1f}% of the {fmt_ns(total)} of "
                 f"{'steps' if facts.steps else 'the profiled window'}; {len(long)} gap(s) "
                 f"of {MIN_GAP_US / 1000:g} ms or more (longest {fmt_ns(long[0][1] - long[0][0])}) make up "
                 f"{100 * share:.1f}% of it. Under them the host runs {doing}"
                 + (f"; most self time in {op_text}." if op_text else ".")),
        advice=ADVICE[cause],
        evidence=evidence,
        metrics={
            "gpu_idle_percent": 100.0 * idle / total,
            "long_gap_percent": 100.0 * share,
            "long_gaps": len(long),
            "longest_gap_us": (long[0][1] - long[0][0]) / 1000.0,
            "regions_us": {n: v / 1000.0 for n, v in top_regions},
            "ops_self_us": {n: v / 1000.0 for n, v in top_ops},
            "cause": cause,
        },
    )]


def _cause(facts: Facts, long: list[tuple[int, int, int | None]], ops: dict[str, float], long_ns: int) -> str:
    """What fills the long gaps: compiling, the profiler's own work, the first step's set-up, or
    (the default) the program's host work."""
    trace = facts.trace
    overhead_names = {trace.names[int(n)] for n in np.unique(trace.name[facts.is_overhead])}
    compiling = sum(v for n, v in ops.items() if COMPILE_EVENT.search(n))
    if compiling >= CAUSE_MIN_SHARE * long_ns:
        return "compile"
    if sum(v for n, v in ops.items() if n in overhead_names) >= CAUSE_MIN_SHARE * long_ns:
        return "profiler"
    if len(facts.steps) > 1:
        first = facts.steps[0].number
        in_first = sum(b - a for a, b, step in long if step == first)
        if in_first >= (1 - CAUSE_MIN_SHARE) * long_ns:
            return "cold"
    return "data"


def _attribute(facts: Facts, gaps: list[tuple[int, int, int | None]]):
    """Host time under the gaps: per top-level region (the step's children) the overlap, per event
    name the self time falling inside the gaps (self time spread evenly over the event)."""
    trace = facts.trace
    # the profiler's own work (buffer requests, lazy loading) nests into the host's op tree too
    host = (facts.is_host | facts.is_overhead) & ~facts.is_launch
    steps = pattern_mask(facts, STEP_REGION)
    host &= ~steps
    idx = np.flatnonzero(host)
    ts, end = trace.ts[idx], trace.ts[idx] + trace.dur[idx]
    parent = facts.parent[idx]
    top_level = (parent < 0) | steps[np.maximum(parent, 0)]
    self_rate = np.where(trace.dur[idx] > 0, facts.self_time[idx] / np.maximum(trace.dur[idx], 1), 0.0)
    names = trace.name_array[trace.name[idx]]
    regions: dict[str, int] = defaultdict(int)
    ops: dict[str, float] = defaultdict(float)
    best_event: dict[str, tuple[float, int]] = {}
    for a, b, _ in gaps:
        overlap = np.minimum(end, b) - np.maximum(ts, a)
        hit = np.flatnonzero(overlap > 0)
        for k in hit[top_level[hit]].tolist():
            regions[names[k]] += int(overlap[k])
            _keep(best_event, names[k], float(overlap[k]), int(idx[k]))
        inside_self = overlap[hit] * self_rate[hit]
        for k, v in zip(hit.tolist(), inside_self.tolist(), strict=True):
            if v > 0 and not top_level[k]:
                ops[names[k]] += v
                _keep(best_event, names[k], v, int(idx[k]))
            elif v > 0:
                ops[names[k]] += v
    return regions, ops, {n: i for n, (_, i) in best_event.items()}


def _keep(best: dict[str, tuple[float, int]], name: str, value: float, i: int) -> None:
    if name not in best or value > best[name][0]:
        best[name] = (value, i)
