"""What:
The first recorded step takes far longer than the steps after it: one-time work (CUDA context and
cuBLAS handle creation, lazy module loading, allocator growth, the profiler's first buffer
request) landed inside the profiled window. Without ProfilerStep events, the first of several
calls of the same top-level record_function region is compared with the later ones instead.

Why:
A cold step is not what the program does in steady state: its ops look many times slower than
they are, and every total in the table (and every other rule) is skewed towards the warm-up.

Example:
`seed_mm64_cold` (64x64 matmul_add, `schedule(wait=0, warmup=0, active=3)`, no warm-up): step 0
took 137.932 ms against a median of 256.6 µs for steps 1-2, 537x wider; aten::mm's own (untraced)
time is 102.6 ms of it and aten::add's 24.5 ms, the first calls of cuBLAS and of the elementwise
kernels; the profiler's buffer request (2.5 ms), 5 module loads (0.6 ms) and 32 occupancy queries
(42 µs) are in it too.

Impact:
One-time: the GPU idle time of the first step beyond the median of the other steps' (compile time,
recompilation's, left out), spread over the window's steps. seed_mm64_cold: 137.7 ms over 3 steps,
45.9 ms per step against a median step of 368 µs (critical). This finding owns all of the first
step: dead-window, profiler-overhead, gemm-heuristics and lazy-loading say nothing about the events
inside it (before, the seed gave five findings for this one step). The step must be cold on its own
account: seed_mm4096_compile_cold's first call is 7.4x the second, but 2.9 ms of its 3.7 ms excess
is the profiler's buffer request, which profiler-overhead reports. Compile spans are
recompilation's: gpu/compile_warmup's step 0 takes 2.5 s, 2.41 s of it compiling; the 86 ms of GPU
idle left (69 ms of it the compiled graph's first aten::mm) is this finding's, 28.8 ms per step.

Fix:
Run a few iterations before profiling, or let the profiler skip them:
`torch.profiler.schedule(wait=1, warmup=1, active=3)`; read only the steady-state steps.
"""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules import _one_time as one_time
from pista.rules._common import evidence, us
from pista.trace.facts import STEP_NAME, Facts, Intervals

ID = "cold-start"

# seed_mm64_cold: step 0 is 538x the median of the others; the warmed-up fixtures stay at or below
# 2.1x (seed_mm64_warm 254 µs vs 121 µs: a short first step still pays for first-touch caches),
# big_gpt_eager_20steps 1.1x; gpu/profiler_first_step 1.8x, all of it the profiler's buffer request
# (not counted here). 3x sits well clear of both.
COLD_START_RATIO = 3.0
# ...and the excess must matter in absolute terms: seed_mm64_warm's first step is only 133 µs
# wider than the others, which is noise next to the 137.7 ms of seed_mm64_cold.
COLD_START_MIN_EXCESS_US = 500.0
# Spread over the window's steps, a one-time cost under 1% of the median step is noise (REVIEW.md).
MIN_STEP_SHARE = 0.01
TOP_OPS = 3  # ops named in the record (most excess self time); presentation


class SlowOp(Record):
    """A host event name whose self time in the first step exceeds its usual."""

    name: str
    first_us: float  # its self time in the first step (or call)
    typical_us: float  # the median of its self time in the other steps


class ColdStart(Record):
    kind: str  # "step" | "region" (no steps: the first call of a repeated top-level region)
    name: str  # ProfilerStep#0, or the region's name
    step: int | None
    others: int
    other_steps: tuple[int, ...]  # the other steps' numbers (empty for a region)
    first_us: float
    own_us: float  # the first's wall time less the profiler's events and compiling
    median_others_us: float
    ratio: float  # of the first's wall time (the profiler's events and compiling left out) to the others' median
    excess_us: float  # wall time beyond the others' median
    idle_excess_us: float  # GPU idle beyond the others' median, over the window: what the impact spreads
    steps: int  # ProfilerSteps the window holds (0 without: the impact is per window)
    profiler_us: float  # the profiler's own events inside the first step
    loading_us: float  # CUDA module/function loads inside it
    queries: int  # cudaOccupancy* queries inside it (a library choosing kernels)
    query_us: float
    compile_us: float  # compiling inside it (recompilation's, not counted)
    ops: tuple[SlowOp, ...]  # most excess self time first
    cause: str  # profiler | library | first-calls | host (_one_time's causes)
    gpu: bool = True  # a GPU trace: the library is cuBLAS and first calls load CUDA kernels; CPU-only: oneDNN/MKL


class FirstNote(Record):
    """Note on the cold step (or call)."""

    ratio: float
    median_us: float
    others: int


class OpNote(Record):
    """Note on the biggest call of a slow op inside it."""

    self_us: float
    typical_us: float


class ProfilerNote(Record):
    """Note on a profiler event inside it."""

    dur_us: float


class SteadyNote(Record):
    """Note on a steady step, for comparison."""

    dur_us: float


def check(ctx: Context) -> list[Finding]:
    return one_time.findings(ctx, ID)


def detect(ctx: Context, taken: Intervals) -> tuple[list[Finding], Intervals]:
    facts = ctx.facts
    trace = facts.trace
    picked = _first_and_others(facts)
    if picked is None:
        return [], one_time.EMPTY
    kind, first, others = picked
    first_start, first_end = int(trace.ts[first]), int(trace.ts[first] + trace.dur[first])
    starts, ends = trace.ts[others].astype(np.int64), (trace.ts[others] + trace.dur[others]).astype(np.int64)
    profiler = one_time.profiler_mask(facts)
    prof_ns = one_time.total_in(facts, profiler, first_start, first_end)
    median = float(np.median(ends - starts))
    compiling = taken.clip(first_start, first_end)  # cold-start comes first: only compile spans are taken
    # the profiler's start-up is profiler-overhead's, compiling recompilation's, unless the step is cold anyway
    own = first_end - first_start - prof_ns - compiling.total
    ratio = own / median if median > 0 else float("inf")
    if ratio < COLD_START_RATIO or us(own - median) < COLD_START_MIN_EXCESS_US:
        return [], one_time.EMPTY

    idle_first = one_time.idle_ns(facts, one_time.minus(one_time.spans([first_start], [first_end]), taken))
    idle_others = float(np.median([one_time.idle_ns(facts, one_time.spans([a], [b]))
                                   for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]))
    total = max(0.0, idle_first - idle_others)
    impact = ctx.once(total)
    if impact.share < MIN_STEP_SHARE:
        return [], one_time.EMPTY

    ops, picks = _slow_ops(facts, kind, first, others, taken)
    loading = one_time.loading_mask(facts)
    queries = one_time.query_mask(facts) & (trace.ts >= first_start) & (trace.ts < first_end)
    top = _top_op(facts, ops, picks)
    record = ColdStart(
        kind=kind, name=trace.event_name(first), step=_step_number(facts, first), others=int(others.size),
        other_steps=tuple(s.number for s in facts.steps[1:]) if kind == "step" else (),
        first_us=us(first_end - first_start), own_us=us(own), median_others_us=median / 1000.0, ratio=ratio,
        excess_us=us(first_end - first_start - median), idle_excess_us=us(total), steps=len(facts.steps),
        profiler_us=us(prof_ns), loading_us=us(one_time.total_in(facts, loading, first_start, first_end)),
        queries=int(queries.sum()), query_us=us(trace.dur[queries].sum()), compile_us=us(compiling.total),
        ops=ops, cause=one_time.cause_of(prof_ns, int(total), top), gpu=facts.has_gpu,
    )
    ev = [evidence(facts, first, FirstNote(ratio, median / 1000.0, int(others.size)))]
    ev += [evidence(facts, i, OpNote(op.first_us, op.typical_us)) for op, i in zip(ops, picks, strict=True)]
    in_first = np.flatnonzero(profiler & (trace.ts >= first_start) & (trace.ts < first_end))
    ev += [evidence(facts, int(i), ProfilerNote(us(trace.dur[i]))) for i in in_first[:2]]
    typical = int(others[int(np.argmin(np.abs((ends - starts) - median)))])
    ev.append(evidence(facts, typical, SteadyNote(us(trace.dur[typical]))))
    return [Finding(ID, record, impact, ev)], one_time.spans([first_start], [first_end])


def _top_op(facts: Facts, ops: tuple[SlowOp, ...], picks: list[int]) -> str | None:
    """The slowest op's name, None where it is a region (its own Python is the cost)."""
    annotation = facts.trace.category_id("user_annotation")
    return ops[0].name if ops and int(facts.trace.cat[picks[0]]) != annotation else None


def _first_and_others(facts: Facts) -> tuple[str, int, np.ndarray] | None:
    """The first step and the others (event indices), or the first call of the most repeated
    top-level region and its later calls."""
    if len(facts.steps) >= 2:
        return "step", facts.steps[0].index, np.array([s.index for s in facts.steps[1:]], dtype=np.int64)
    trace = facts.trace
    regions = np.flatnonzero(facts.is_host & trace.category_mask({"user_annotation"}) & (facts.depth == 0))
    if regions.size < 2:
        return None
    names, counts = np.unique(trace.name[regions], return_counts=True)
    if counts.max() < 2:
        return None
    name = names[int(np.argmax(counts))]
    idx = regions[trace.name[regions] == name]
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    return "region", int(idx[0]), idx[1:]


def _step_number(facts: Facts, i: int) -> int | None:
    match = STEP_NAME.match(facts.trace.event_name(i))
    return int(match.group(1)) if match else None


def _slow_ops(facts: Facts, kind: str, first: int, others: np.ndarray,
              compiling: Intervals) -> tuple[tuple[SlowOp, ...], list[int]]:
    """Host event names with the most self time in the first step beyond their median in the others,
    and the biggest event of each there. The steps' own self time (Python between ops) counts under
    the first step's name."""
    trace = facts.trace
    n_names = len(trace.names)
    key = trace.name.astype(np.int64)
    if kind == "step":
        step_ids = [i for i, name in enumerate(trace.names) if STEP_NAME.match(name)]
        key = np.where(np.isin(trace.name, step_ids), int(trace.name[first]), key)
    host = facts.is_host & (trace.pid != -1) & ~one_time.covered(compiling, trace.ts)

    def per_name(i: int) -> np.ndarray:
        lo, hi = int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])
        sel = host & (trace.ts >= lo) & (trace.ts < hi)
        return np.bincount(key[sel], weights=facts.self_time[sel], minlength=n_names)

    in_first = per_name(first)
    typical = np.median(np.stack([per_name(int(i)) for i in others]), axis=0)
    excess = in_first - typical
    order = [int(k) for k in np.argsort(-excess, kind="stable")[:TOP_OPS] if excess[k] > 0]
    lo, hi = int(trace.ts[first]), int(trace.ts[first] + trace.dur[first])
    inside = host & (trace.ts >= lo) & (trace.ts < hi)
    ops, picks = [], []
    for k in order:
        cand = np.flatnonzero(inside & (key == k))
        picks.append(int(cand[np.argmax(facts.self_time[cand])]))
        ops.append(SlowOp(trace.names[k], us(in_first[k]), us(typical[k])))
    return tuple(ops), picks
