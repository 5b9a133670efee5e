"""The cold-start rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
cold-start`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/cold_start.ftl."""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules import _one_time as one_time
from pista.rules._common import OPTIMIZER_STEP, evidence, pattern_mask, us
from pista.trace.facts import STEP_NAME, Facts, Intervals

# An optimizer's step call ends each iteration of a training loop whose window has no steps, regions or compiled
# model; at least this many of them (the first and a median of the others).
OPTIMIZER_UPDATE = re.compile(r"^Optimizer\.step#")
MIN_ITERATIONS = 3
# The top-level calls of a compiled model (torch.compile's frames), which mark iterations where the window has
# neither ProfilerStep nor a region.
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: \d+/\d+$")

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
    kind: str  # "step" | "region" (no steps: the first call of a repeated top-level region) | "iteration" (no
    # steps or regions: from one call of a compiled model's region to the next) | "update" (a training loop: each
    # iteration up to the end of its Optimizer.step call)
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
    kind, first, others, starts, ends = picked
    first_start, first_end = int(starts[0]), int(ends[0])
    starts, ends = starts[1:], ends[1:]
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

    ops, picks = _slow_ops(facts, kind, (first_start, first_end), list(zip(starts.tolist(), ends.tolist(), strict=True)),
                           int(trace.name[first]), taken)
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
    k = int(np.argmin(np.abs((ends - starts) - median)))
    ev.append(evidence(facts, int(others[k]), SteadyNote(us(ends[k] - starts[k]))))
    return [Finding(ID, record, impact, ev)], one_time.spans([first_start], [first_end])


def _top_op(facts: Facts, ops: tuple[SlowOp, ...], picks: list[int]) -> str | None:
    """The slowest op's name, None where it is a region (its own Python is the cost)."""
    annotation = facts.trace.category_id("user_annotation")
    return ops[0].name if ops and int(facts.trace.cat[picks[0]]) != annotation else None


def _first_and_others(facts: Facts) -> tuple[str, int, np.ndarray, np.ndarray, np.ndarray] | None:
    """(kind, the first's event, the others' events, every span's starts and ends, the first's first): the
    first step and the others; without steps, a training loop's iterations (each up to its optimizer step's end);
    else the first call of the most repeated top-level region and its later calls; else the iterations of a
    compiled model, from one call of its compiled region to the next."""
    if len(facts.steps) >= 2:
        idx = np.array([s.index for s in facts.steps], dtype=np.int64)
        return "step", int(idx[0]), idx[1:], *_own_spans(facts, idx)
    trace = facts.trace
    updates = _training_iterations(facts)  # a training loop's iterations hold its regions (a DataLoader's __next__)
    if updates is not None:
        return updates
    regions = np.flatnonzero(facts.is_host & trace.category_mask({"user_annotation"}) & (facts.depth == 0)
                             & ~pattern_mask(facts, OPTIMIZER_STEP))  # an optimizer's own calls are not iterations
    calls = _most_repeated(facts, regions)
    if calls is not None:
        return "region", int(calls[0]), calls[1:], *_own_spans(facts, calls)
    return _compiled_iterations(facts)


def _own_spans(facts: Facts, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    trace = facts.trace
    return trace.ts[idx].astype(np.int64), (trace.ts[idx] + trace.dur[idx]).astype(np.int64)


def _most_repeated(facts: Facts, events: np.ndarray) -> np.ndarray | None:
    """The calls of the name most repeated among these events, in time order (None under two)."""
    trace = facts.trace
    if events.size < 2:
        return None
    names, counts = np.unique(trace.name[events], return_counts=True)
    if counts.max() < 2:
        return None
    idx = events[trace.name[events] == names[int(np.argmax(counts))]]
    return idx[np.argsort(trace.ts[idx], kind="stable")]


def _top_level_calls(facts: Facts, pattern: re.Pattern[str]) -> np.ndarray | None:
    """The top-level host calls of the most repeated name matching `pattern`, in time order (None under two)."""
    trace = facts.trace
    names = [i for i, n in enumerate(trace.names) if pattern.match(n)]
    if not names:
        return None
    return _most_repeated(facts, np.flatnonzero(facts.is_host & (facts.depth == 0) & np.isin(trace.name, names)))


def _training_iterations(facts: Facts) -> tuple[str, int, np.ndarray, np.ndarray, np.ndarray] | None:
    """A training loop's window without steps or regions: each iteration ends with its optimizer's top-level
    `Optimizer.step#` call, the first one from the window's start (review 5's param_linear_kineto: 40 SGD steps in
    2.0 s, the first iteration 995 ms of CUDA start-up against 24.8 ms for the others)."""
    trace = facts.trace
    idx = _top_level_calls(facts, OPTIMIZER_UPDATE)
    if idx is None or idx.size < MIN_ITERATIONS:
        return None
    ends = (trace.ts[idx] + trace.dur[idx]).astype(np.int64)
    starts = np.concatenate(([np.int64(facts.window[0])], ends[:-1]))
    return "update", int(idx[0]), idx[1:], starts, ends


def _compiled_iterations(facts: Facts) -> tuple[str, int, np.ndarray, np.ndarray, np.ndarray] | None:
    """A window without steps or regions around a compiled model's training loop: each iteration runs from
    one top-level call of its compiled region to the next (the last to the window's end). review 4's
    rtx4090d_compile_resnet18_steps: three calls of `Torch-Compiled Region: 0/0`, the first iteration 43.5 ms
    (the first backward's 8.7 ms and lazy loading in it) against 5.2 and 4.9 ms."""
    trace = facts.trace
    idx = _top_level_calls(facts, COMPILED_REGION)
    if idx is None:
        return None
    starts = trace.ts[idx].astype(np.int64)
    ends = np.append(starts[1:], np.int64(facts.window[1]))
    return "iteration", int(idx[0]), idx[1:], starts, ends
def _step_number(facts: Facts, i: int) -> int | None:
    match = STEP_NAME.match(facts.trace.event_name(i))
    return int(match.group(1)) if match else None


def _slow_ops(facts: Facts, kind: str, first: tuple[int, int], others: list[tuple[int, int]], first_name: int,
              compiling: Intervals) -> tuple[tuple[SlowOp, ...], list[int]]:
    """Host event names with the most self time in the first step beyond their median in the others,
    and the biggest event of each there. The steps' own self time (Python between ops) counts under
    the first step's name."""
    trace = facts.trace
    n_names = len(trace.names)
    key = trace.name.astype(np.int64)
    if kind == "step":
        step_ids = [i for i, name in enumerate(trace.names) if STEP_NAME.match(name)]
        key = np.where(np.isin(trace.name, step_ids), first_name, key)
    host = facts.is_host & (trace.pid != -1) & ~one_time.covered(compiling, trace.ts)

    def per_name(span: tuple[int, int]) -> np.ndarray:
        sel = host & (trace.ts >= span[0]) & (trace.ts < span[1])
        return np.bincount(key[sel], weights=facts.self_time[sel], minlength=n_names)

    in_first = per_name(first)
    typical = np.median(np.stack([per_name(span) for span in others]), axis=0)
    excess = in_first - typical
    order = [int(k) for k in np.argsort(-excess, kind="stable")[:TOP_OPS] if excess[k] > 0]
    inside = host & (trace.ts >= first[0]) & (trace.ts < first[1])
    ops, picks = [], []
    for k in order:
        cand = np.flatnonzero(inside & (key == k))
        picks.append(int(cand[np.argmax(facts.self_time[cand])]))
        ops.append(SlowOp(trace.names[k], us(in_first[k]), us(typical[k])))
    return tuple(ops), picks
