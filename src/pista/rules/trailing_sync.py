"""What:
An explicit `torch.cuda.synchronize()` (cudaDeviceSynchronize / cudaStreamSynchronize called from
user code, not from inside an op) at the end of a step, issued when little or no GPU work was still
outstanding: the host pays for the call and then starts the next step with an empty GPU queue.

Why:
A synchronize is only worth its cost when it waits for something. At the end of a step whose
kernels have already finished, it buys nothing: it costs the call itself and it stops the host from
queueing the next step's launches while the GPU drains, so CPU and GPU can no longer overlap. A
sync that waits for long real GPU work (a 2.6 ms fp32 GEMM) is not this problem: there the time is
the GPU's.

Example:
`matmul_add` at 64x64 in bf16 on an H200 (gpu/trailing_sync), then `torch.cuda.synchronize()` in
a `sync` region every step: in step 2 the cudaDeviceSynchronize takes 3.799 µs while the GPU had
0 µs of work left (its last kernel ended 26 µs earlier); over steps 2-4 the three syncs take
9.887 µs, 2.9% of the 344 µs of steps.

Fix:
Drop the per-step synchronize; sync only where the host needs a result (logging every N steps,
the end of an epoch) and time GPU work with CUDA events (`torch.cuda.Event(enable_timing=True)`)
instead of sync + wall clock.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import SYNC_NAMES, busy_ns, fmt_ns, name_mask, nearest_ancestor, profiler_stop_sync
from pista.trace.facts import Facts

ID = "trailing-sync"
TITLE = "Synchronize at the end of a step with nothing left to wait for"
SEVERITY = Severity.WARNING
# A sync "waits for nothing" when the GPU was busy less than this share of the sync's duration:
# gpu/trailing_sync 0/3.8 µs, gpu/gpu_idle_dataloader 0/14.5 µs; real waits (gpu/fp32_gemm 2602/2616
# µs, gpu/tf32_gemm 269/275 µs, gpu/kernel_variability 27/33 µs) are above 0.8.
MAX_OUTSTANDING_SHARE = 0.5
# ... and the idle syncs must cost at least this share of their steps: 2.9% of the steps of
# gpu/trailing_sync (2.6-3.4% step by step); 0.1% in gpu/gpu_idle_dataloader (14 µs syncs in 15 ms steps), which is noise.
MIN_STEP_SHARE = 0.01
# A warning once the idle syncs cost this much in all; below, the share is real but the time is
# µs (gpu/trailing_sync: 9.9 µs over 3 steps), so the finding is info.
WARNING_MIN_SYNC_NS = 1_000_000
EVIDENCE_EVENTS = 6


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    syncs = name_mask(facts, SYNC_NAMES) & facts.is_host
    # syncs issued from inside an op (.item(), .cpu(), autotuning) belong to host-sync
    under_op = nearest_ancestor(facts, trace.category_mask({"cpu_op"}), inclusive=False) >= 0
    syncs &= ~under_op
    own = profiler_stop_sync(facts)
    if own >= 0:
        syncs[own] = False
    if facts.steps:
        syncs &= facts.event_step >= 0
    launch_ts = trace.ts[facts.launcher[facts.is_device_work & (facts.launcher >= 0)]]

    idle: list[tuple[int, int, int]] = []  # (event, outstanding ns, gap since the GPU went idle)
    for i in np.flatnonzero(syncs).tolist():
        start, end = int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])
        step = int(facts.event_step[i])
        stop = facts.steps[step].end if step >= 0 else facts.window[1]
        if np.any((launch_ts >= end) & (launch_ts < stop)):
            continue  # more work is queued after it in the same step: not trailing
        outstanding = busy_ns(facts, start, end)
        if outstanding <= MAX_OUTSTANDING_SHARE * (end - start):
            idle.append((i, outstanding, start))
    if not idle:
        return []

    step_total = sum(s.dur for s in facts.steps) if facts.steps else facts.window[1] - facts.window[0]
    cost = sum(int(trace.dur[i]) for i, _, _ in idle)
    share = cost / max(step_total, 1)
    if share < MIN_STEP_SHARE:
        return []
    worst = max(idle, key=lambda x: int(trace.dur[x[0]]))
    i0, outstanding0, _ = worst
    last_end = _gpu_idle_since(facts, int(trace.ts[i0]))
    evidence = []
    for i, outstanding, _ in sorted(idle, key=lambda x: -int(trace.dur[x[0]]))[:EVIDENCE_EVENTS]:
        parent = int(facts.parent[i])
        where = f" in '{trace.event_name(parent)}'" if parent >= 0 else ""
        evidence.append(Evidence.of(facts, i, detail=f"{fmt_ns(outstanding)} of GPU work outstanding{where}"))
    steps_hit = sorted({facts.step_of(i) for i, _, _ in idle if facts.step_of(i) is not None})
    name = trace.event_name(i0)
    idle_for = f" (the GPU had been idle for {fmt_ns(trace.ts[i0] - last_end)})" if last_end is not None else ""
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY if cost >= WARNING_MIN_SYNC_NS else Severity.INFO,
        title=TITLE,
        message=(f"{len(idle)} {name} call(s) at the end of {len(steps_hit) or 'the'} step(s) wait for little "
                 f"or no GPU work: the longest takes {fmt_ns(trace.dur[i0])} with {fmt_ns(outstanding0)} of GPU "
                 f"work outstanding{idle_for}; together {fmt_ns(cost)}, {100 * share:.1f}% of the step time."),
        advice=("Remove the per-step torch.cuda.synchronize(); synchronize only where the host needs a result, "
                "and time GPU work with CUDA events rather than sync + wall clock."),
        evidence=evidence,
        metrics={
            "syncs": len(idle),
            "sync_total_us": cost / 1000.0,
            "longest_sync_us": float(trace.dur[i0]) / 1000.0,
            "outstanding_gpu_us": outstanding0 / 1000.0,
            "step_share_percent": 100.0 * share,
            "steps": steps_hit,
        },
    )]


def _gpu_idle_since(facts: Facts, ts: int) -> int | None:
    """When the busiest device last finished work before ts."""
    ends = [iv.end[iv.end <= ts] for iv in facts.gpu_busy.values()]
    ends = [e for e in ends if e.size]
    return int(max(e.max() for e in ends)) if ends else None
