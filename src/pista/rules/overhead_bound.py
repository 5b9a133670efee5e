"""What:
The host spends far longer issuing work than the GPU spends doing it: Self CPU total is many
times Self CUDA total (typically ms against µs) and the GPU sits idle most of the window.

Why:
Each op pays a fixed toll in Python, the dispatcher and the CUDA launch path, tens of µs. When a
kernel runs for 2 µs, that toll is the runtime: a faster GPU, or a faster kernel, changes nothing.

Example:
`torch.add(torch.matmul(x, w), b)` at 64x64 in bf16 on an H200: 510 µs of Self CPU for 12 µs of
Self CUDA per 3 steps; the GPU is busy 2% of the window.

Not every idle GPU is per-op overhead, so the finding says where the host time goes and fits the
fix to it: most of it compiling (gpu/recompile: 97% under Dynamo/Inductor spans), the profiler's
own buffer requests (seed_mm4096_compile_cold: 60%), or one record_function region that does long
host work for little GPU work (gpu/gpu_idle_dataloader: 'data_loading', 92%, 14 ms of host time
per launch; the cold seed_mm64_cold: 'matmul_add', 98%, 22.5 ms per launch).

Fix:
Give every call more work (batch the inputs, bigger tiles of work), fuse the ops (torch.compile,
a fused kernel), or replay the whole step as a CUDA graph (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.graphs`) so the host cost is paid once. Where the host time is compiling, profiler
overhead or a slow region instead, that is what to fix first (see recompilation,
profiler-overhead, gpu-idle, dead-window).
"""

from __future__ import annotations

import numpy as np

from pista import findings
from pista.findings import Context, Evidence, Finding, Severity, legacy_finding, top_indices
from pista.rules._common import (
    COMPILE_EVENT,
    fmt_ns,
    kernel_launches,
    nearest_ancestor,
    pattern_mask,
)
from pista.trace.facts import STEP_NAME, Facts

ID = "overhead-bound"
TITLE = "Host overhead bound: the GPU waits for the CPU"
SEVERITY = Severity.CRITICAL
EVIDENCE_EVENTS = 5
# The verdict's thresholds live with the verdict (pista.findings); shown here for `pista explain`.
OVERHEAD_RATIO = findings.OVERHEAD_RATIO
OVERHEAD_MAX_GPU_BUSY = findings.OVERHEAD_MAX_GPU_BUSY
# One cause names the fix when it holds at least this share of the host's self time: gpu/recompile
# compiles for 97% of it, seed_mm4096_compile_cold spends 60% in the profiler's buffer request,
# gpu/gpu_idle_dataloader 92% in 'data_loading'; the warm per-op loops (seed_mm64_warm,
# gpu/launch_bound, gpu/host_sync_item) have no cause above a third.
CAUSE_MIN_SHARE = 0.5
# A region "feeds the GPU little" when its host time per launch under it is at least this: 13 ms in
# gpu_idle_dataloader's 'data_loading'; per-op loops pay 20-80 µs per launch.
SLOW_REGION_NS_PER_LAUNCH = 1_000_000

ADVICE = {
    "per-op": ("Do more work per call: batch inputs, fuse ops (torch.compile), or capture the step as a CUDA "
               "graph so launch and dispatch costs are paid once."),
    "compile": ("Most of the host time is torch.compile compiling, not per-op overhead: keep compiles out of "
                "the steady state (see recompilation) and profile after warm-up; only then fuse or batch."),
    "profiler": ("Most of the host time is the profiler's own work, not the program's: profile more steps "
                 "with torch.profiler.schedule(wait, warmup, active) so it is paid once over many steps "
                 "(see profiler-overhead), then read the verdict again."),
    "region": ("Most of the host time is in one region that feeds the GPU little: take that work off the "
               "GPU's path (DataLoader workers, prefetching, pin_memory with non_blocking copies) or, if it is "
               "one-time set-up, warm up before profiling (see gpu-idle, dead-window)."),
}


def check(ctx: Context) -> list[Finding]:
    s = ctx.summary
    if s.verdict != "overhead-bound":
        return []
    facts = ctx.facts
    ratio = s.self_cpu_total_us / s.self_device_total_us if s.self_device_total_us else float("inf")
    busy = 100.0 * (s.gpu_busy_share or 0.0)
    times = f"{ratio:.0f}x" if ratio != float("inf") else "no measurable GPU time"
    cause, cause_ns, region, launches, where = _where_host_time_goes(facts)
    picks = [int(i) for i in top_indices(facts.self_time, facts.is_host, EVIDENCE_EVENTS + 1) if int(i) != region]
    # the note gives the self time the event was picked for; its dur is its wall time
    evidence = [Evidence.of(facts, i, detail=f"largest self CPU time: {fmt_ns(facts.self_time[i])}")
                for i in picks[:EVIDENCE_EVENTS]]
    total_ns = int(facts.self_time[facts.is_host | facts.is_overhead].sum())
    if region >= 0:
        evidence.insert(0, Evidence.of(facts, region, detail=f"the region with {fmt_ns(cause_ns)} of host self time"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"Self CPU total {fmt_ns(1000 * s.self_cpu_total_us)} vs Self CUDA total "
                 f"{fmt_ns(1000 * s.self_device_total_us)} ({times}); the GPU is busy {busy:.1f}% of the "
                 f"{fmt_ns(1000 * s.window_us)} window.{where}"),
        advice=ADVICE[cause],
        evidence=evidence[:EVIDENCE_EVENTS + 1],
        metrics={"cpu_to_device_ratio": ratio, "gpu_busy_percent": busy,
                 "self_cpu_total_us": s.self_cpu_total_us, "self_device_total_us": s.self_device_total_us,
                 "window_us": s.window_us, "cause": cause, "cause_us": cause_ns / 1000.0,
                 "cause_share_percent": 100.0 * cause_ns / total_ns if total_ns else 0.0,
                 "cause_region": facts.trace.event_name(region) if region >= 0 else None,
                 "cause_launches": launches},
    )]


def _where_host_time_goes(facts: Facts) -> tuple[str, int, int, int, str]:
    """(cause, its host self time in ns, the region's event index or -1, launches in the region, a
    sentence) where one cause holds CAUSE_MIN_SHARE of the host's self time; "per-op" otherwise."""
    trace = facts.trace
    host = facts.is_host
    self_ns = facts.self_time
    total = int(self_ns[host | facts.is_overhead].sum())
    if total <= 0:
        return "per-op", 0, -1, 0, ""

    def share(ns: int) -> str:
        return f"{fmt_ns(ns)}, {100.0 * ns / total:.0f}% of the host's self time"

    compiling = host & (nearest_ancestor(facts, pattern_mask(facts, COMPILE_EVENT)) >= 0)
    compile_ns = int(self_ns[compiling].sum())
    if compile_ns >= CAUSE_MIN_SHARE * total:
        return "compile", compile_ns, -1, 0, f" Most of the host time is torch.compile compiling ({share(compile_ns)})."
    profiler_ns = int(self_ns[facts.is_overhead].sum())
    if profiler_ns >= CAUSE_MIN_SHARE * total:
        return "profiler", profiler_ns, -1, 0, (f" Most of the host time is the profiler's own overhead events "
                                             f"({share(profiler_ns)}).")
    region, region_ns, launches = _slowest_region(facts)
    if region >= 0 and region_ns >= CAUSE_MIN_SHARE * total and region_ns >= SLOW_REGION_NS_PER_LAUNCH * max(launches, 1):
        name = trace.event_name(region)
        per = f"{fmt_ns(region_ns / launches)} of host time per launch" if launches else "no launch in it"
        return "region", region_ns, region, launches, (f" Most of the host time is in '{name}' ({share(region_ns)}; "
                                                       f"{launches} launch(es) in it, {per}).")
    return "per-op", 0, -1, 0, ""


def _slowest_region(facts: Facts) -> tuple[int, int, int]:
    """The record_function region name (outermost below the step) holding the most host self time:
    (one of its events, host self ns under all its events, kernel launches under them)."""
    trace = facts.trace
    host = facts.is_host
    annotation = host & trace.category_mask({"user_annotation"})
    step_ids = [i for i, n in enumerate(trace.names) if STEP_NAME.match(n)]
    annotation &= ~np.isin(trace.name, np.asarray(step_ids, dtype=trace.name.dtype))
    if not annotation.any():
        return -1, 0, 0
    # the outermost region on each event's path: nested regions count toward the outer one
    outer = annotation & (nearest_ancestor(facts, annotation, inclusive=False) < 0)
    region_of = nearest_ancestor(facts, outer)
    under = host & (region_of >= 0)
    names = trace.name[region_of[under]]
    per_name = np.bincount(names, weights=facts.self_time[under], minlength=len(trace.names))
    best = int(np.argmax(per_name))
    launches = kernel_launches(facts) & under
    launch_count = int(np.count_nonzero(trace.name[region_of[launches]] == best)) if launches.any() else 0
    members = np.flatnonzero(outer & (trace.name == best))
    first = int(members[np.argmin(trace.ts[members])])
    return first, int(per_name[best]), launch_count
