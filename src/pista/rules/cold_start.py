"""What:
The first recorded step takes far longer than the steps after it: one-time work (CUDA context and
cuBLAS handle creation, lazy module loading, allocator growth, autotuning, compilation) landed
inside the profiled window. Without ProfilerStep events, the first of several calls of the same
top-level record_function region is compared with the later ones instead.

Why:
A cold step is not what the program does in steady state: its ops look many times slower than
they are, and every total in the table (and every other rule) is skewed towards the warm-up.

Example:
`seed_mm64_cold` (64x64 matmul_add, `schedule(wait=0, warmup=0, active=3)`, no warm-up): step 0
took 137.932 ms against a median of 256.6 µs for steps 1-2, 537x wider; nearly all of it is
aten::mm (107.3 ms) and aten::add (30.1 ms) doing first-call setup.

Fix:
Run a few iterations before profiling, or let the profiler skip them:
`torch.profiler.schedule(wait=1, warmup=1, active=3)`; read only the steady-state steps.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Severity, legacy_finding, top_indices
from pista.rules._common import evidence, fmt_ns, us

ID = "cold-start"
TITLE = "Cold start: the first step is much slower than the rest"
SEVERITY = Severity.WARNING

# seed_mm64_cold: step 0 is 538x the median of the others; the warmed-up fixtures stay at or below
# 2.1x (seed_mm64_warm 254 µs vs 121 µs: a short first step still pays for first-touch caches),
# big_gpt_eager_20steps 1.1x. 3x sits well clear of both.
COLD_START_RATIO = 3.0
# ...and the excess must matter in absolute terms: seed_mm64_warm's first step is only 133 µs
# wider than the others, which is noise next to the 137.7 ms of seed_mm64_cold.
COLD_START_MIN_EXCESS_US = 500.0
EVIDENCE_EVENTS = 3  # ops shown from inside the first step (most self time); presentation


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    if len(facts.steps) >= 2:
        first, rest = facts.steps[0], facts.steps[1:]
        first_index, first_start, first_end = first.index, first.start, first.end
        rest_durs = np.array([s.dur for s in rest], dtype=np.int64)
        rest_index = np.array([s.index for s in rest], dtype=np.int64)
        label = f"step {first.number}"
        others = f"steps {rest[0].number}-{rest[-1].number}" if len(rest) > 1 else f"step {rest[0].number}"
        kind = "step"
    else:
        picked = _repeated_region(facts)
        if picked is None:
            return []
        idx = picked
        first_index = int(idx[0])
        first_start, first_end = int(trace.ts[first_index]), int(trace.ts[first_index] + trace.dur[first_index])
        rest_durs = trace.dur[idx[1:]].astype(np.int64)
        rest_index = idx[1:]
        label = f"the first '{trace.event_name(first_index)}' call"
        others = f"the {rest_durs.size} later call{'s' if rest_durs.size > 1 else ''}"
        kind = "region"
    first_dur = first_end - first_start
    median = float(np.median(rest_durs))
    ratio = first_dur / median if median > 0 else float("inf")
    if ratio < COLD_START_RATIO or us(first_dur - median) < COLD_START_MIN_EXCESS_US:
        return []

    # what filled it: the host ops with the largest self time inside the first step
    inside = (facts.is_host | facts.is_overhead) & (trace.ts >= first_start) & (trace.ts < first_end)
    inside[first_index] = False
    picks = top_indices(facts.self_time, inside & (trace.pid != -1), EVIDENCE_EVENTS)
    ev = [evidence(facts, first_index, detail=f"{ratio:.0f}x the median of {others}")]
    ev += [evidence(facts, int(i), detail=f"self time {fmt_ns(facts.self_time[i])}") for i in picks]
    typical = int(rest_index[int(np.argmin(np.abs(rest_durs - median)))])
    ev.append(evidence(facts, typical, detail="a steady-state one, for comparison"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{label[0].upper() + label[1:]} took {fmt_ns(first_dur)}, {ratio:.0f}x the median "
                 f"{fmt_ns(median)} of {others}: one-time setup was profiled."),
        advice=("Warm up before profiling (run a few iterations first, or use "
                "torch.profiler.schedule(wait=1, warmup=1, active=N)) and read only the steady-state steps."),
        evidence=ev,
        metrics={
            "kind": kind,
            "first_us": us(first_dur),
            "median_others_us": median / 1000.0,
            "ratio": ratio,
            "excess_us": us(first_dur - median),
            "others": int(rest_durs.size),
        },
    )]


def _repeated_region(facts) -> np.ndarray | None:
    """Without steps: instances (by start) of the most repeated top-level record_function region."""
    trace = facts.trace
    regions = np.flatnonzero(facts.is_host & trace.category_mask({"user_annotation"}) & (facts.depth == 0))
    if regions.size < 2:
        return None
    names, counts = np.unique(trace.name[regions], return_counts=True)
    if counts.max() < 2:
        return None
    name = names[int(np.argmax(counts))]
    idx = regions[trace.name[regions] == name]
    return idx[np.argsort(trace.ts[idx], kind="stable")]
