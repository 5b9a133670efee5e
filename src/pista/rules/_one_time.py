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

import re
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pista.findings import Context, Finding
from pista.query import COMPILE_EVENT, nearest_ancestor, pattern_mask
from pista.rules import catalogue
from pista.rules._common import busy_ns_many, kernel_launches, kernels
from pista.rules._idle import COLD_RATIO, subtract, sum_under
from pista.trace.facts import STEP_NAME, Facts, Intervals, merge_intervals, per_facts

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
# Start-up a window may hold with no load event to show it (CUDA before 11.7, older CUPTI, ROCm; issue 35:
# context creation, the first cuBLAS/cuDNN calls and a 1.3 s first cudaLaunchKernel took 74-100% of four
# foreign windows): a runtime or driver call at least STARTUP_CALL_NS long that neither waits, copies nor
# allocates (warm, these calls take 1-50 µs: gpu/window_sync_warm's longest cudaLaunchKernel 37 µs; cold,
# gpu/window_sync_cold's first cudaLaunchKernel 4.0 ms, seed_mm64_cold's 5.6 ms, hta_alexnet's
# cudaStreamCreateWithFlags 733 ms), and an op's first call with STARTUP_SELF_NS of host time in no
# recorded call (cuBLAS's or cuDNN's set-up: gpu/window_sync_cold's first aten::mm 91.6 ms, aten::add
# 11.1 ms; warm GEMMs 20-230 µs in every fixture).
STARTUP_CALL_NS = 1_000_000
STARTUP_SELF_NS = 5_000_000
# waits, copies, allocations and graph replays: long for other reasons than start-up (a cudaFree that
# is the window's first runtime call is the context's creation: cudaFree(0) is how programs make it)
NOT_STARTUP = re.compile(r"Synchroni[sz]e|Memcpy|Memset|Malloc|Free|HostAlloc|HostRegister|Query|WaitEvent|Graph")
CONTEXT_CALLS = frozenset({"cudaFree", "hipFree"})
# An allocation call that long outside any op, with the device idle through most of it (under IDLE_ALLOCATION_BUSY
# of it busy), is start-up as well: a cudaFree waits for the work queued before it, but here the GPU has none, so
# the time is the driver's, mapping or releasing memory for a process still starting (review 4: a4000_sevit_cold,
# CUDA activity alone, its cudaFree of 3.0 s and 0.97 s in the first seconds of a 12 s window, the GPU idle, read as
# 4.4 s of "Python between ops"). Under an op, the op's first call is judged whole (cudnn-setup's, dead-window's).
ALLOCATION = re.compile(r"Malloc|Free|HostAlloc")
IDLE_ALLOCATION_BUSY = 0.5
# A slow launch whose device work starts later after the call returns than the call itself took waited for a
# free slot in a full launch queue (the host far ahead of the GPU), not for a module to load: a cold launch's
# kernel starts within 0.1 ms of its return (kineto_resnet50_autograd_api's 1.57 s first cudaLaunchKernel -8 µs,
# tl_normalization's 331 ms first hipLaunchKernel 6 µs, hta_alexnet's 3.1 s -3 µs), a blocked one 65-176 ms
# after it (foreign/hta_negq_rank0's 1.2-7.0 ms cudaLaunchKernel in NEMetric:update, every step; hta_ns_resolution's
# 1.0-2.0 ms in the backward, steps 102-105).
QUEUED_LAUNCH_RATIO = 1.0
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


def first_pass(slow: Sequence[tuple[object, int]], others: Sequence[tuple[object, int]]) -> bool:
    """Whether every slow call's key (its op and input shape) runs again, in one of the other calls, after the
    last slow call: the set-up was a first pass over shapes that repeat (a cold forward), not shapes that keep
    changing (gpu/kv_decode: each token's length reused by its 12 layers, never after; cudnn-setup's and
    gemm-heuristics' test in a window without steps). Each call as (key, start ns)."""
    done = max(ts for _, ts in slow)
    after = {key for key, ts in others if ts > done}
    return all(key in after for key, _ in slow)


# -- events ------------------------------------------------------------------------------------

def startup_calls(facts: Facts, taken: Intervals) -> dict[int, list[int]]:
    """startup_ops' calls that start outside taken."""
    trace = facts.trace
    return {op: mine for op, mine in startup_ops(facts).items() if not covered(taken, trace.ts[[op]])[0]}


def _may_start_up(name: str, first: bool, idle_outside_ops: bool) -> bool:
    """Whether a long runtime call may be start-up by its name: any but NOT_STARTUP's, which are one only as the
    window's first call where they create the context (CONTEXT_CALLS), or as an allocation outside any op with
    the device idle."""
    return (not NOT_STARTUP.search(name) or (first and name in CONTEXT_CALLS)
            or (idle_outside_ops and bool(ALLOCATION.search(name))))


@per_facts
def startup_ops(facts: Facts) -> dict[int, list[int]]:
    """The calls in the window that start CUDA up without a load event to show it: per
    outermost op (or the runtime call itself, outside any op), its long start-up runtime calls (empty: its
    own untraced host time is the set-up). A call counts where the other calls of its name take under
    1 / COLD_RATIO of it (hta_cupti_profiler's CUPTI range profiling makes every launch 68 ms: no start-up),
    and only in a window with device work (a CPU-only run's device queries start nothing it uses)."""
    trace = facts.trace
    lo, hi = facts.window
    if not kernels(facts).any():
        return {}
    runtime = facts.is_host & trace.category_mask({"cuda_runtime", "cuda_driver"}) & (trace.ts >= lo) & (trace.ts < hi)
    calls = np.flatnonzero(runtime)
    calls = calls[np.argsort(trace.ts[calls], kind="stable")]
    out: dict[int, list[int]] = {}
    waited = _queued_launches(facts)
    long = calls[trace.dur[calls] >= STARTUP_CALL_NS]
    idle = busy_ns_many(facts, trace.ts[long], trace.ts[long] + trace.dur[long]) < IDLE_ALLOCATION_BUSY * trace.dur[long]
    for i, device_idle in zip(long.tolist(), idle.tolist(), strict=True):
        name = trace.event_name(i)
        op = outermost_op(facts, i)
        if _may_start_up(name, i == int(calls[0]), device_idle and op < 0) and _cold_call(facts, i) \
                and i not in waited:
            out.setdefault(op if op >= 0 else i, []).append(i)
    out = _once(facts, out)
    for op in _untraced_first_calls(facts).tolist():
        out.setdefault(op, [])
    # a call that holds compiling (a compiled region's first call) is recompilation's, not start-up
    compiling = compile_spans(facts)
    out = {op: mine for op, mine in out.items()
           if _cold_call(facts, op) and compiling.clip(int(trace.ts[op]), int(trace.ts[op] + trace.dur[op])).total == 0}
    return dict(sorted(out.items(), key=lambda kv: int(trace.ts[kv[0]])))


def _queued_launches(facts: Facts) -> set[int]:
    """Launch calls whose first device work started QUEUED_LAUNCH_RATIO times the call's own time or more after
    it returned: the call waited for room in the launch queue (back-pressure), not for start-up."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    if work.size == 0:
        return set()
    launch = facts.launcher[work].astype(np.int64)
    first = np.full(len(trace), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, launch, trace.ts[work].astype(np.int64))
    calls = np.unique(launch)
    end = trace.ts[calls] + trace.dur[calls]
    late = first[calls] - end >= QUEUED_LAUNCH_RATIO * trace.dur[calls]
    return set(calls[late & (trace.dur[calls] > 0)].tolist())


def _once(facts: Facts, found: dict[int, list[int]]) -> dict[int, list[int]]:
    """The start-up calls whose op (its name, and the call's) shows one in a single step: one that recurs in
    later steps is what the op costs every step (foreign/hta_negq_rank0's slow launches in NEMetric:update's
    aten::add_, aten::mul and aten::log2, in each of its five steps), not a first call."""
    if len(facts.steps) < 2:
        return found
    trace = facts.trace
    seen: dict[tuple[str, str], set[int]] = defaultdict(set)
    for op, mine in found.items():
        for i in mine:
            step = int(facts.event_step[i])
            if step >= 0:
                seen[(trace.event_name(op), trace.event_name(i))].add(step)
    out: dict[int, list[int]] = {}
    for op, mine in found.items():
        keep = [i for i in mine if len(seen[(trace.event_name(op), trace.event_name(i))]) < 2]
        if keep:
            out[op] = keep
    return out


def _outermost_ops(facts: Facts) -> np.ndarray:
    """The torch ops (named `ns::op`, not the steps that old traces record as ops) in the window that no
    op holds, in time order."""
    trace = facts.trace
    lo, hi = facts.window
    ops = facts.is_host & trace.category_mask({"cpu_op"})
    outer = np.flatnonzero(ops & ~(ops[facts.parent] & (facts.parent >= 0)) & (trace.ts >= lo) & (trace.ts < hi))
    torch_op = np.array(["::" in name and not STEP_NAME.match(name) for name in trace.names], dtype=bool)
    outer = outer[torch_op[trace.name[outer]]]
    return outer[np.argsort(trace.ts[outer], kind="stable")]


def _untraced_first_calls(facts: Facts) -> np.ndarray:
    """The first call of each outermost op name that launches device work and spends STARTUP_SELF_NS of
    host time in no recorded call (its own and its ops' self time)."""
    trace = facts.trace
    outer = _outermost_ops(facts)
    if outer.size == 0:
        return outer
    _, first = np.unique(trace.name[outer], return_index=True)
    outer = np.sort(outer[first])
    outer = outer[trace.dur[outer] >= STARTUP_SELF_NS]
    if outer.size == 0:
        return outer
    ops = facts.is_host & trace.category_mask({"cpu_op"})
    own = facts.self_time[outer] + sum_under(facts, ops, outer, facts.self_time)
    launches = sum_under(facts, kernel_launches(facts), outer)
    return outer[(own >= STARTUP_SELF_NS) & (launches > 0)]


def _cold_call(facts: Facts, i: int) -> bool:
    """Whether a call is far slower than the other calls of its name at its depth (true where it has none)."""
    trace = facts.trace
    same = np.flatnonzero((trace.name == trace.name[i]) & (facts.depth == facts.depth[i]) & facts.is_host)
    same = same[same != i]
    return same.size == 0 or float(trace.dur[i]) >= COLD_RATIO * float(np.median(trace.dur[same]))


def cold_op(facts: Facts, i: int) -> bool:
    """Whether an op call's own (self) time is COLD_RATIO times that of the other calls of its name (true where
    it has none): a first call's untraced set-up, not the work the op does every call."""
    counts, sums, medians = _op_self_times(facts)
    name = int(facts.trace.name[i])
    n, own = int(counts[name]), max(float(facts.self_time[i]), 0.0)
    if n <= 1:
        return True
    other = (float(sums[name]) - own) if n == 2 else float(medians[name])
    return own >= COLD_RATIO * max(other, 1.0)


@per_facts
def _op_self_times(facts: Facts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per interned name: how many host cpu_op calls have it, their self time summed, and its median."""
    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}))
    size = len(trace.names)
    own = np.maximum(facts.self_time[ops], 0).astype(np.float64)
    names = trace.name[ops].astype(np.int64)
    counts = np.bincount(names, minlength=size)
    sums = np.bincount(names, weights=own, minlength=size)
    medians = np.zeros(size, dtype=np.float64)
    order = np.lexsort((own, names))
    bounds = np.concatenate(([0], np.cumsum(counts)))
    for k in np.flatnonzero(counts >= 3).tolist():
        a, b = int(bounds[k]), int(bounds[k + 1])
        medians[k] = float(np.median(own[order[a:b]]))
    return counts, sums, medians


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
