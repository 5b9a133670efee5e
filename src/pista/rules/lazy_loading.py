"""What:
"Runtime Triggered Module Loading" / "Lazy Function Loading" events on the profiler's overhead
lane inside the profiled window: CUDA loaded a kernel's module the first time it was needed
(lazy loading, the default `CUDA_MODULE_LOADING=LAZY` since CUDA 11.7), while the program ran.

Why:
Each load is a driver call of tens to hundreds of µs that sits inside whatever op first used the
kernel (a cudaLaunchKernel, a cudaFuncSetAttribute inside aten::mm): that op looks slow in the
table and its step is wider. It only happens once per kernel, so it means the window holds
first calls, not steady state.

Example:
`seed_mm64_cold` (no warm-up): 5 loading events, 595.2 µs in all, in step 0 only: 416.4 µs of
module loading inside cudaFuncSetAttribute / cudaGetSymbolAddress under aten::mm, and Lazy
Function Loading of 46.7 µs in that cudaFuncSetAttribute, 69.1 µs in aten::mm and 63.0 µs in the
cudaLaunchKernel of aten::add.

Fix:
Warm up (run every kernel once) before profiling, or skip the first steps with
`torch.profiler.schedule(wait=1, warmup=1, active=N)`. `CUDA_MODULE_LOADING=EAGER` moves the cost
to start-up (longer start, more memory) if the first iteration itself must be fast.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import enclosing_op, evidence, fmt_ns, step_at, us

ID = "lazy-loading"
TITLE = "CUDA lazy module loading inside the profiled window"
SEVERITY = Severity.WARNING

# the names CUPTI gives module/function loads on the overhead lane (seed_mm64_cold, recompile)
LOADING_NAMES = ("Runtime Triggered Module Loading", "Lazy Function Loading")
# Any load is a first call, but a few µs is not worth a finding: the smallest single loads seen are
# 17.0 µs (recompile) and 46.7 µs (seed_mm64_cold), the warmed-up fixtures have none; 10 µs in all.
LAZY_LOADING_MIN_US = 10.0
EVIDENCE_EVENTS = 6  # loads shown (the longest); presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    ids = [i for i, name in enumerate(trace.names) if name in LOADING_NAMES]
    if not ids:
        return []
    lo, hi = facts.window
    mask = facts.is_overhead & np.isin(trace.name, ids) & (trace.ts >= lo) & (trace.ts < hi)
    idx = np.flatnonzero(mask)
    total = int(trace.dur[idx].sum())
    if idx.size == 0 or us(total) < LAZY_LOADING_MIN_US:
        return []
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]

    by_op: dict[str, list[int]] = defaultdict(list)
    ops = {}
    for i in idx.tolist():
        op = enclosing_op(facts, i)
        caller = int(facts.parent[i])
        where = trace.event_name(op) if op >= 0 else "(no op)"
        if caller >= 0 and caller != op:
            where = f"{trace.event_name(caller)} in {where}"
        ops[i] = where
        by_op[where].append(i)
    parts = [f"{where}: {len(v)} x, {fmt_ns(trace.dur[v].sum())}"
             for where, v in sorted(by_op.items(), key=lambda kv: -int(trace.dur[kv[1]].sum()))]
    steps = sorted({s for s in (step_at(facts, int(trace.ts[i])) for i in idx) if s is not None})
    picks = idx[np.argsort(-trace.dur[idx], kind="stable")[:EVIDENCE_EVENTS]]
    step_text = f" (step {', '.join(map(str, steps))})" if steps else ""
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{idx.size} lazy-loading event{'s' if idx.size > 1 else ''}{step_text}, {fmt_ns(total)} in all, "
                 f"{100.0 * total / max(hi - lo, 1):.2f}% of the window; they landed in " + "; ".join(parts) + "."),
        advice=("Run every kernel once before profiling (warm-up iterations, or schedule(wait=1, warmup=1, "
                "active=N)); set CUDA_MODULE_LOADING=EAGER only if the first call itself must be fast."),
        evidence=[evidence(facts, int(i), detail=f"inside {ops[int(i)]}") for i in picks],
        metrics={
            "events": int(idx.size),
            "total_us": us(total),
            "window_percent": 100.0 * total / max(hi - lo, 1),
            "steps": steps,
            "by_op_us": {where: us(trace.dur[v].sum()) for where, v in by_op.items()},
        },
    )]
