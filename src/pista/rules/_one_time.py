"""One-time costs inside the profiled window, and which rule owns which time: not a rule.

Six rules report set-up costs, one-time or once per new shape, and on a cold trace they see the
same time (seed_mm64_cold's step 0 holds a dead window, the profiler's buffer request, module loads
and occupancy queries; the old rules gave five findings, each "warm up before profiling"). Here
each span of host time belongs to one rule, the first in this order that claims it:

1. cold-start: the first step (or the first call of a repeated region), when it is cold on its own
   account (the profiler's events not counted): all of it.
2. dead-window: a region call's wait before its first launch, and the first calls (ops that load
   their kernels) later in the same call: all of it.
3. profiler-overhead: the profiler's own events (Activity Buffer Request, Buffer Flush) elsewhere.
4. gemm-heuristics: GEMM calls on new shapes, from the op's start to its launch, elsewhere.
5. cudnn-setup: cuDNN calls that set up their shape (a plan, a graph, benchmarking), elsewhere.
6. lazy-loading: op calls that load their CUDA kernels (first calls), elsewhere.

Compile spans (Dynamo, Inductor, autotuning) belong to recompilation and are claimed by none of
them. A rule's impact is the time its spans hold the GPU idle, less what earlier rules claimed:
host work while the GPU runs delays nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from pista.findings import Context, Finding
from pista.rules import catalogue
from pista.rules._common import COMPILE_EVENT, busy_ns_many, nearest_ancestor, pattern_mask
from pista.rules._idle import subtract
from pista.trace.facts import Facts, Intervals, merge_intervals

# the names CUPTI gives module/function loads on the overhead lane (seed_mm64_cold, recompile)
LOADING_NAMES = frozenset({"Runtime Triggered Module Loading", "Lazy Function Loading"})
# every CUDA occupancy API starts so (cuBLASLt's first GEMM in seed_mm64_cold, CUB's sorts in
# big_gpt_eager_20steps, cuDNN's padding kernel in gpu/resnet50_bf16)
QUERY_PREFIX = "cudaOccupancy"
# GEMM ops whose first call on a shape runs cuBLAS(Lt)'s heuristics (and cuBLAS's set-up on the
# process's first GEMM): seed_mm64_cold's aten::mm, gpu/gemm_new_shapes' aten::mm, addmm of nn.Linear
GEMM_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm", "aten::_addmm_activation",
    "aten::addmv", "aten::mv", "aten::matmul", "aten::linear",
})
ORDER = ("cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "cudnn-setup", "lazy-loading")

# the causes a cold step or region call is put down to, for the advice
PROFILER = "profiler"  # the profiler's own buffer requests are the largest part
LIBRARY = "library"  # the first call of a GEMM: cuBLAS's handle, workspace and heuristics
FIRST_CALLS = "first-calls"  # the first calls of other ops (kernel loading, allocator growth)
HOST = "host"  # the region's own Python, outside any op

EMPTY = Intervals(np.empty(0, np.int64), np.empty(0, np.int64))

Detector = Callable[[Context, Intervals], tuple[list[Finding], Intervals]]
_Done = tuple[dict[str, list[Finding]], Intervals, dict[str, Intervals]]
_cache: weakref.WeakKeyDictionary[Facts, _Done] = weakref.WeakKeyDictionary()


def findings(ctx: Context, rule_id: str) -> list[Finding]:
    """The findings of one of the six rules, each having claimed its spans in ORDER."""
    return _done(ctx)[0][rule_id]


def claimed(ctx: Context) -> Intervals:
    """The host time the six rules' findings own (one-time set-up), compile spans left out: for
    other rules that must not count it again as steady-state time."""
    return _done(ctx)[1]


def claimed_by(ctx: Context, rule_id: str) -> Intervals:
    """The host time one of the six rules' findings own (empty where it did not fire)."""
    return _done(ctx)[2][rule_id]


def _done(ctx: Context) -> _Done:
    done = _cache.get(ctx.facts)
    if done is None:
        done = _run(ctx)
        _cache[ctx.facts] = done
    return done


def _run(ctx: Context) -> _Done:
    # each of the six rules' modules has a `detect(ctx, taken)`, found through the catalogue: they import
    # this module, so it imports none of them
    detectors: dict[str, Detector] = {rule.id: rule.module.detect for rule in catalogue() if rule.id in ORDER}
    taken = compile_spans(ctx.facts)
    owned = EMPTY
    out: dict[str, list[Finding]] = {}
    by_rule: dict[str, Intervals] = {}
    for rule_id in ORDER:
        found, spans_ = detectors[rule_id](ctx, taken)
        out[rule_id], by_rule[rule_id] = found, spans_
        taken = union(taken, spans_)
        owned = union(owned, spans_)
    return out, owned, by_rule


# -- spans -------------------------------------------------------------------------------------

def spans(starts: Any, ends: Any) -> Intervals:
    s = np.asarray(starts, dtype=np.int64).ravel()
    e = np.asarray(ends, dtype=np.int64).ravel()
    keep = e > s
    return merge_intervals(s[keep], e[keep])


def union(a: Intervals, b: Intervals) -> Intervals:
    return merge_intervals(np.concatenate((a.start, b.start)), np.concatenate((a.end, b.end)))


def minus(a: Intervals, taken: Intervals) -> Intervals:
    """The parts of a not covered by taken (one sweep over both: a clip of `taken` per interval of
    `a` grew with the square of the trace, 33 s of a 5 GB copy's analysis)."""
    return subtract(a, taken)


def covered(iv: Intervals, ts: np.ndarray) -> np.ndarray:
    """Whether each time falls inside one of the intervals."""
    if iv.start.size == 0:
        return np.zeros(np.shape(ts), dtype=bool)
    pos = np.searchsorted(iv.start, ts, side="right") - 1
    ok = pos >= 0
    out = np.zeros(np.shape(ts), dtype=bool)
    out[ok] = ts[ok] < iv.end[pos[ok]]
    return out


def idle_ns(facts: Facts, iv: Intervals) -> int:
    """ns of the intervals during which no device ran work: what host time there delayed."""
    return int((iv.end - iv.start).sum() - busy_ns_many(facts, iv.start, iv.end).sum())


# -- events ------------------------------------------------------------------------------------

def loading_mask(facts: Facts) -> np.ndarray:
    trace = facts.trace
    ids = [i for i, name in enumerate(trace.names) if name in LOADING_NAMES]
    return facts.is_overhead & np.isin(trace.name, np.asarray(ids, dtype=trace.name.dtype))


def profiler_mask(facts: Facts) -> np.ndarray:
    """The profiler's own work on the overhead lane (buffer requests and flushes), loads left out."""
    return facts.is_overhead & ~loading_mask(facts) & (facts.trace.dur > 0)


def query_mask(facts: Facts) -> np.ndarray:
    trace = facts.trace
    ids = [i for i, name in enumerate(trace.names) if name.startswith(QUERY_PREFIX)]
    return facts.is_host & np.isin(trace.name, np.asarray(ids, dtype=trace.name.dtype))


def compile_spans(facts: Facts) -> Intervals:
    """Where torch.compile compiled (the outermost compile events): recompilation's time."""
    compiling = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    if not compiling.any():
        return EMPTY
    outer = compiling & (nearest_ancestor(facts, compiling, inclusive=False) < 0)
    idx = np.flatnonzero(outer)
    trace = facts.trace
    return spans(trace.ts[idx], trace.ts[idx] + trace.dur[idx])


def total_in(facts: Facts, mask: np.ndarray, lo: int, hi: int) -> int:
    """ns of the events of mask that start in [lo, hi)."""
    return starts_within(facts, mask)(lo, hi)


def starts_within(facts: Facts, mask: np.ndarray) -> Callable[[int, int], int]:
    """total_in of one mask for many spans, each a bisection (a pass over every event per span
    grew with the square of the trace: dead-window asks per gap and per first call)."""
    trace = facts.trace
    idx = np.flatnonzero(mask)
    order = np.argsort(trace.ts[idx], kind="stable")
    ts = trace.ts[idx][order]
    upto = np.concatenate(([0], np.cumsum(trace.dur[idx][order])))

    def total(lo: int, hi: int) -> int:
        return int(upto[np.searchsorted(ts, hi, side="left")] - upto[np.searchsorted(ts, lo, side="left")]) \
            if hi > lo else 0

    return total


def outermost_op(facts: Facts, i: int) -> int:
    """The op the user called above event i: the top of its chain of cpu_ops (-1 if none)."""
    trace = facts.trace
    cpu_op = trace.category_id("cpu_op")
    j, top = int(facts.parent[i]), -1
    while j >= 0:
        if int(trace.cat[j]) == cpu_op:
            top = j
        elif top >= 0:
            break
        j = int(facts.parent[j])
    return top


def cause_of(profiler_ns: int, total_ns: int, top_op: str | None) -> str:
    """What a cold step or region call is mostly made of, for the advice."""
    if profiler_ns * 2 >= total_ns:
        return PROFILER
    if top_op is None:
        return HOST
    return LIBRARY if top_op in GEMM_OPS else FIRST_CALLS
