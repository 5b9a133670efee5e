"""What:
Occupancy queries (`cudaOccupancyMaxActiveBlocksPerMultiprocessor*`, `cudaOccupancyMaxActiveClusters`,
`cudaOccupancyAvailableDynamicSMemPerBlock`) on a host thread right before a kernel launch on the same
thread: a library (cuBLAS/cuBLASLt, cuDNN, CUB) sizing or choosing a variant of an adaptive kernel
(a GEMM, a convolution, a sort) before launching it. A plain elementwise or reduction kernel goes
straight to cudaLaunchKernel with no such queries.

Why:
The queries are the visible edge of the library's heuristic: done once per shape they are cached;
seen inside the window, they mean that shape was new (cold cuBLAS, a new shape every step) or the
library asks again every call. Each query is 1-5 µs of host time on the launching thread.

Example:
`seed_mm64_cold` (no warm-up), step 0: 32 queries (30 cudaOccupancyMaxActiveClusters, one
cudaOccupancyAvailableDynamicSMemPerBlock, one cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
in aten::mm, 42.2 µs of host time, before cuLaunchKernelEx of nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT;
steps 1-2 launch the same GEMM with no queries. `big_gpt_eager_20steps`: 2 queries every step before CUB's radix sort and scan
kernels in aten::embedding_dense_backward, 184.2 µs over 20 steps.

Fix:
Warm up every shape before profiling (the choice is cached per shape); keep shapes static (pad
or bucket dynamic ones) so the heuristic is not rerun; if it recurs every step in steady state,
it is the library's own per-call cost, small unless the kernel itself is tiny.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding
from pista.rules._common import (
    enclosing_op,
    evidence,
    fmt_ns,
    kernel_launches,
    launched_by,
    short_name,
    step_at,
    steps_text,
    us,
)

ID = "gemm-heuristics"
TITLE = "Library heuristics (occupancy queries) before a kernel launch"
SEVERITY = Severity.INFO

# every CUDA occupancy API starts so (the three seen in seed_mm64_cold and big_gpt_eager_20steps too)
QUERY_PREFIX = "cudaOccupancy"
# Any query counts: the warmed-up single-shape fixtures (seed_mm64_warm, seed_mm4096_*,
# series_*) have none at all, seed_mm64_cold 32 in one burst, big_gpt_eager_20steps 2 per step.
GEMM_HEURISTICS_MIN_QUERIES = 1
EVIDENCE_GROUPS = 3  # query bursts shown (the costliest); presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    query_ids = [i for i, name in enumerate(trace.names) if name.startswith(QUERY_PREFIX)]
    if not query_ids:
        return []
    queries = np.flatnonzero(facts.is_host & np.isin(trace.name, query_ids))
    launches = np.flatnonzero(kernel_launches(facts))
    if queries.size < GEMM_HEURISTICS_MIN_QUERIES or launches.size == 0:
        return []
    work_of = launched_by(facts)

    # each query belongs to the next kernel launch on its own thread
    groups: dict[int, list[int]] = defaultdict(list)
    lane = trace.pid * 1_000_003 + trace.tid
    for key in np.unique(lane[queries]).tolist():
        lq = queries[lane[queries] == key]
        ll = launches[lane[launches] == key]
        if ll.size == 0:
            continue
        ll = ll[np.argsort(trace.ts[ll], kind="stable")]
        pos = np.searchsorted(trace.ts[ll], trace.ts[lq], side="left")
        for q, p in zip(lq.tolist(), pos.tolist(), strict=True):
            if p < ll.size:
                groups[int(ll[p])].append(q)
    if not groups:
        return []

    rows = []
    for launch, qs in groups.items():
        qs = np.asarray(qs, dtype=np.int64)
        rows.append((launch, qs, int(trace.dur[qs].sum())))
    rows.sort(key=lambda r: int(trace.ts[r[0]]))
    n_queries = sum(r[1].size for r in rows)
    cost = sum(r[2] for r in rows)

    by_kernel: dict[str, list[tuple]] = defaultdict(list)
    for row in rows:
        by_kernel[trace.event_name(int(work_of[row[0]]))].append(row)
    parts = []
    for kernel, krows in sorted(by_kernel.items(), key=lambda kv: -sum(r[2] for r in kv[1])):
        op = enclosing_op(facts, krows[0][0])
        steps = sorted({s for s in (step_at(facts, int(trace.ts[r[0]])) for r in krows) if s is not None})
        in_steps = f" in {steps_text(steps)}" if steps else ""
        parts.append(f"{sum(r[1].size for r in krows)} before {len(krows)} launch{'es' if len(krows) > 1 else ''} of "
                     f"{short_name(kernel)}{' (' + trace.event_name(op) + ')' if op >= 0 else ''}{in_steps}, "
                     f"{fmt_ns(sum(r[2] for r in krows))}")

    ev = []
    for launch, qs, spent in sorted(rows, key=lambda r: -r[2])[:EVIDENCE_GROUPS]:
        kinds = ", ".join(f"{c} {n}" for n, c in zip(*np.unique(trace.name_array[trace.name[qs]],
                                                                 return_counts=True), strict=True))
        first = int(qs[np.argmin(trace.ts[qs])])
        ev.append(evidence(facts, first, detail=f"first of {qs.size} queries ({kinds}), {fmt_ns(spent)}"))
        last_end = int((trace.ts[qs] + trace.dur[qs]).max())
        ev.append(evidence(facts, launch, detail=f"the launch they preceded, {fmt_ns(int(trace.ts[launch]) - last_end)} "
                                               "after the last query"))
        if work_of[launch] >= 0:
            ev.append(evidence(facts, int(work_of[launch]), detail="the kernel it launched"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{n_queries} occupancy quer{'ies' if n_queries > 1 else 'y'} ({fmt_ns(cost)} of host time) "
                 f"right before {len(rows)} kernel launch{'es' if len(rows) > 1 else ''}: " + "; ".join(parts)
                 + ". A library chose or sized these kernels at run time."),
        advice=("Warm up every shape before profiling so the library's choice is cached; keep shapes static "
                "(pad or bucket them); if it recurs every steady-state step it is the library's per-call cost."),
        evidence=ev,
        metrics={
            "queries": int(n_queries),
            "query_us": us(cost),
            "launches": len(rows),
            "kernels": {k: len(v) for k, v in by_kernel.items()},
            "steps": sorted({s for s in (step_at(facts, int(trace.ts[r[0]])) for r in rows) if s is not None}),
        },
    )]
