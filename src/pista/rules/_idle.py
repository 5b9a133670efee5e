"""The GPU-idle ledger: who claims which ns of GPU idle inside the steps, and the interval helpers
the rules share it out with: not a rule.

Every rule that puts a price on GPU idle reads it here, so each ns is claimed once: the syncs, compiling,
the profiler's buffer requests, cuDNN setting up new shapes, one-time set-up, regions that launch almost
nothing (gpu-idle's), and what is left, the per-op idle that launch-bound, many-calls and overhead-bound
share out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.findings import Record
from pista.query import (
    COMPILE_EVENT,
    DATALOADER_MARKER,
    DTOH_COPY,
    SYNC_NAMES,
    name_mask,
    nearest_in,
    pattern_mask,
)
from pista.rules._common import first_calls, kernel_launches, kernels, mark_ancestors, memcpys
from pista.rules._cudnn import slow_calls
from pista.trace.facts import INDEX, STEP_NAME, Facts, Intervals, indices, merge_intervals, per_facts

# the thresholds below are gpu-idle's (`pista explain gpu-idle`, [tool.pista.rules.gpu-idle])
THRESHOLDS_OF = "gpu-idle"

# A region launches "almost nothing" when it lasts at least this long (ns) and at least this long
# per launch under it: gpu/gpu_idle_dataloader's 'data_loading' lasts 13.0-14.7 ms with 1 launch;
# the regions of per-op loops pay 20-80 µs per launch (gpu/host_sync_item's 'train_step' 37 µs,
# gpu/launch_bound's 'tiny_ops' 22 µs); Optimizer.zero_grad launches nothing but lasts < 1 ms.
SLOW_REGION_NS = 1_000_000
SLOW_REGION_NS_PER_LAUNCH = 1_000_000
# The first call of something is one-time set-up when it lasts at least this long (ns) and this
# many times the median of its later calls: seed_mm64_cold's first 'matmul_add' 137.8 ms against
# ~0.1 ms (1100x), seed_mm4096_compile_cold's first compiled call 4.2 ms against 0.57 ms (7.4x);
# no call of 1 ms or more in the warm fixtures is even 2x its later calls.
COLD_MIN_NS = 1_000_000
COLD_RATIO = 5.0
# The profiler's own work on its overhead lane; the other events there (Runtime Triggered Module
# Loading, Lazy Function Loading) are CUDA's one-time lazy loading.
PROFILER_EVENTS = frozenset({"Activity Buffer Request", "Buffer Flush"})



def union(start: np.ndarray, end: np.ndarray) -> Intervals:
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    keep = end > start
    if keep.all():  # the usual case: no copies
        return merge_intervals(start, end)
    return merge_intervals(start[keep], end[keep])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    return a.intersect(b)


def subtract(a: Intervals, b: Intervals) -> Intervals:
    return a.subtract(b)


def spans(facts: Facts, idx: np.ndarray) -> Intervals:
    start = facts.trace.ts[idx]
    end = facts.trace.dur[idx].astype(np.int64)
    end += start
    return union(start, end)


def idle_under(facts: Facts, idx: np.ndarray, per_op: bool = False) -> Intervals:
    """The ledger's GPU idle (in the steps, on the busiest device) under these events' spans; with
    per_op, only its per-op part (the idle no sync, set-up or data region claims)."""
    book = ledger(facts)
    if book is None or idx.size == 0:
        return union(np.empty(0), np.empty(0))
    return intersect(book.per_op if per_op else book.idle, spans(facts, idx))


def outermost_ops(facts: Facts, events: np.ndarray) -> np.ndarray:
    """For each event: the top of the chain of cpu_ops above it (the op the user called), or the
    event itself when no op is above it."""
    cpu_op = facts.is_host & facts.trace.category_mask({"cpu_op"})
    out = np.asarray(events, dtype=np.int64).copy()
    at = np.arange(out.size, dtype=INDEX)  # the events still climbing, and their parents
    up = facts.parent[out]
    while at.size:
        live = (up >= 0) & cpu_op[up]  # a root's -1 reads the last event: masked by up >= 0
        at, up = at[live], up[live]
        out[at] = up
        up = facts.parent[up]
    return out


class SlowRegion(Record):
    index: int  # the region's (or first call's) event
    cause: str  # data | cold | compile
    launches: int


@dataclass(eq=False)
class Ledger:
    """GPU idle inside the steps (the window without steps) on the busiest device, and who claims
    each ns of it, in this order: the syncs (host-sync, trailing-sync, pageable-memcpy), compiling
    (recompilation), the profiler's buffer requests (profiler-overhead), cuDNN setting up new shapes
    (cudnn-setup), one-time set-up in a first call (cold-start, dead-window, lazy-loading), regions
    that launch almost nothing ("data": gpu-idle's). `per_op` is what is left, the idle while the
    host dispatches ops: launch-bound, many-calls and overhead-bound share it out, in that order."""

    device: int
    idle: Intervals
    sync: Intervals
    claims: dict[str, Intervals]  # compile, profiler, setup, cold, data
    sources: dict[str, np.ndarray]  # per cause: the events whose spans make its claim
    per_op: Intervals
    regions: list[SlowRegion]
    syncs_per_step: float  # sync calls under an op inside the steps
    sync_op: str  # the op that makes most of them ("" for none)
    # of them, those after the step's last kernel launch: the step's result read back (a decoding loop's
    # next token, gpu/resnet50_grad's argmax), which a CUDA graph of what comes before leaves outside
    end_syncs_per_step: float
    # ...and those before its first kernel launch: the input's upload (review 4's rtx3090_resnet_warm:
    # `inputs_to_cuda`'s pageable copy), which a CUDA graph of what follows leaves outside too
    start_syncs_per_step: float = 0.0

    def total(self, cause: str) -> int:
        return self.claims[cause].total


@per_facts
def ledger(facts: Facts) -> Ledger | None:
    """The ledger of a trace with GPU work (once per Facts), None without."""
    if not facts.has_gpu:
        return None
    trace = facts.trace
    device = max(facts.gpu_busy, key=lambda d: facts.gpu_busy[d].total)
    busy = facts.gpu_busy[device]
    windows = [(s.start, s.end) for s in facts.steps] or [facts.window]
    pieces = [busy.gaps(a, b) for a, b in windows]
    idle = union(np.concatenate([p.start for p in pieces]), np.concatenate([p.end for p in pieces]))
    del pieces
    in_window = facts.event_step >= 0 if facts.steps else np.ones(len(trace), dtype=bool)

    compile_ops = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    compiling = compile_ops & in_window
    overhead = np.flatnonzero(facts.is_overhead)
    start = trace.ts[overhead]
    overhead = overhead[(start < facts.window[1]) & (start + trace.dur[overhead] > facts.window[0])]
    is_profiler = name_mask(facts, PROFILER_EVENTS)[overhead]

    sync_calls = _sync_calls(facts, in_window)
    calls = np.flatnonzero(sync_calls)
    sync_calls[calls[nearest_in(facts, compile_ops, calls) >= 0]] = False  # compiling's: recompilation's
    del compile_ops
    sync = _sync_claim(facts, busy, sync_calls)
    cold = _cold_calls(facts, in_window)
    regions = _slow_regions(facts, in_window, compiling, cold)
    compile_regions = _regions_compiling(facts, in_window, compiling)

    def by_cause(cause: str) -> list[int]:
        return [r.index for r in regions if r.cause == cause]

    sources = {
        "compile": np.r_[np.flatnonzero(compiling), compile_regions].astype(np.int64),
        "profiler": overhead[is_profiler],
        "setup": slow_calls(facts)[0],
        "cold": np.r_[overhead[~is_profiler], cold, by_cause("cold")].astype(np.int64),
        "data": np.asarray(by_cause("data"), dtype=np.int64),
    }
    raw = {cause: spans(facts, idx) for cause, idx in sources.items()}
    rest = subtract(idle, sync)
    claims: dict[str, Intervals] = {}
    for cause in ("compile", "profiler", "setup", "cold", "data"):  # the most specific first
        claims[cause] = intersect(rest, raw[cause])
        rest = subtract(rest, raw[cause])
    # syncs an op makes mid-step (.item(), .cpu(), nonzero): a CUDA graph of the step cannot hold them
    op_syncs = np.flatnonzero(sync_calls & name_mask(facts, SYNC_NAMES))
    op_syncs = op_syncs[_under_op(facts, op_syncs)]
    names = trace.name[outermost_ops(facts, op_syncs)]
    sync_op = trace.names[int(np.bincount(names).argmax())] if names.size else ""
    steps = len(facts.steps) or 1
    out = Ledger(device, idle, intersect(idle, sync), claims, sources, rest, regions,
                 op_syncs.size / steps, sync_op, int(_after_last_kernel(facts, op_syncs).sum()) / steps,
                 int(_before_first_kernel(facts, op_syncs).sum()) / steps)
    return out


def _after_last_kernel(facts: Facts, calls: np.ndarray) -> np.ndarray:
    """Per call: whether it comes after the last kernel launch of its step (of the window without steps)."""
    bounds = _launch_bounds(facts)
    if bounds is None:
        return np.ones(calls.size, dtype=bool)
    slot, _, last = bounds
    return facts.trace.ts[calls] > last[slot[calls]]


def _before_first_kernel(facts: Facts, calls: np.ndarray) -> np.ndarray:
    """Per call: whether it ends before the first kernel launch of its step (of the window without steps)
    and some kernel launches after it."""
    bounds = _launch_bounds(facts)
    if bounds is None:
        return np.zeros(calls.size, dtype=bool)
    slot, first, _ = bounds
    trace = facts.trace
    return trace.ts[calls] + trace.dur[calls] <= first[slot[calls]]


def _launch_bounds(facts: Facts) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per event its step's slot (0: outside any step, or the window without steps), and per slot the first and
    last kernel launch's start; None where no kernel's launch is known."""
    trace = facts.trace
    launched = facts.launcher[np.flatnonzero(kernels(facts) & (facts.launcher >= 0))]
    if launched.size == 0:
        return None
    slot = (facts.event_step + 1) if facts.steps else np.zeros(len(trace), dtype=np.int64)
    first = np.full(len(facts.steps) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(len(facts.steps) + 1, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, slot[launched], trace.ts[launched])
    np.maximum.at(last, slot[launched], trace.ts[launched])
    return slot, first, last


def _under_op(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """Per event of idx: whether a cpu_op is above it in the op tree (climbing from idx only)."""
    cpu_op = facts.is_host & facts.trace.category_mask({"cpu_op"})
    return nearest_in(facts, cpu_op, idx, inclusive=False) >= 0


def _sync_calls(facts: Facts, allowed: np.ndarray) -> np.ndarray:
    """Runtime calls that block the host on the GPU (syncs, the launch of a device-to-host copy)."""
    calls = facts.is_host & name_mask(facts, SYNC_NAMES)
    dtoh = memcpys(facts) & pattern_mask(facts, DTOH_COPY) & (facts.launcher >= 0)
    calls[facts.launcher[dtoh]] = True
    return calls & allowed


def _sync_claim(facts: Facts, busy: Intervals, calls: np.ndarray) -> Intervals:
    """Host-sync's claim: after each blocking call, the GPU idle until the next device work, but no
    longer than the GPU work the call waited for. Without the sync the host would have dispatched the
    next op while that work ran; what idle is left beyond it is the dispatch itself, per-op overhead
    (gpu/host_sync_item: ~1 µs matmuls drained, 40 µs of dispatch after each: the syncs cost little,
    measured unprofiled 514 -> 521 µs per step without them)."""
    trace = facts.trace
    idx = np.flatnonzero(calls)
    if idx.size == 0:
        return union(np.empty(0), np.empty(0))
    start, end = trace.ts[idx], trace.ts[idx] + trace.dur[idx]
    waited = busy.covered(start, end)
    pos = np.searchsorted(busy.start, end)
    nxt = np.where(pos < busy.start.size, busy.start[np.minimum(pos, busy.start.size - 1)], facts.window[1])
    if facts.steps:
        stop = np.array([facts.steps[int(s)].end if s >= 0 else facts.window[1] for s in facts.event_step[idx]])
    else:
        stop = np.full(idx.size, facts.window[1])
    return union(end, np.maximum(end, np.minimum(np.minimum(nxt, stop), end + waited)))


def _slow_regions(facts: Facts, in_window: np.ndarray, compiling: np.ndarray, cold_calls: np.ndarray
                  ) -> list[SlowRegion]:
    """record_function regions (not the steps) and the DataLoader's marker that last long and during which (almost) nothing is
    launched on any thread, the profiler's own events inside them not counted, with their cause: compile when compile spans run
    inside; cold for a first call far slower than the later ones (cold_calls), or a region seen once whose time
    is mostly inside ops that launch GPU work (their first-call set-up); data when most of its time
    is host work that launches nothing (building a batch, I/O, sleeping). A region that recurs and
    spends its time inside GPU ops is per-op overhead, not claimed here."""
    trace = facts.trace
    # the user's record_function regions, and the DataLoader's marker in any category (torch 1.8's is a cpu_op)
    regions = trace.category_mask({"user_annotation"}) | pattern_mask(facts, DATALOADER_MARKER)
    region = np.flatnonzero(facts.is_host & regions & ~pattern_mask(facts, STEP_NAME) & in_window)
    del regions
    own = trace.dur[region] - sum_under(facts, facts.is_overhead, region, trace.dur)
    idx, own = region[own >= SLOW_REGION_NS], own[own >= SLOW_REGION_NS]
    if idx.size == 0:
        return []
    launch = kernel_launches(facts)
    compiles = _above(facts, compiling)
    cold = set(cold_calls.tolist())
    names, counts = np.unique(trace.name[region], return_counts=True)
    seen_once = set(names[counts == 1].tolist())
    gpu_ops = facts.is_host & trace.category_mask({"cpu_op"}) & _above(facts, launch)
    outer = indices(gpu_ops)
    del gpu_ops
    outer = outer[~_under_op(facts, outer)]  # an op above a GPU op is one too
    slow = np.zeros(len(trace), dtype=bool)
    slow[idx] = True
    region_of = nearest_in(facts, slow, outer, inclusive=False)
    under = region_of >= 0  # per slow region (idx is sorted), its GPU ops' own time
    outer = outer[under]
    outer_own = trace.dur[outer] - sum_under(facts, facts.is_overhead, outer, trace.dur)
    in_gpu_ops = np.bincount(np.searchsorted(idx, region_of[under]), minlength=idx.size, weights=outer_own).tolist()
    # launches during the region on any thread: a `backward` region on the main thread launches nothing
    # itself while the autograd thread launches the whole backward (gpu/gpt_bf16_fused, resnet50_bf16)
    when = np.sort(trace.ts[launch])
    during = np.searchsorted(when, trace.ts[idx] + trace.dur[idx]) - np.searchsorted(when, trace.ts[idx])
    out = []
    for i, mine, n, inside in zip(idx.tolist(), own.tolist(), during.tolist(), in_gpu_ops, strict=True):
        if compiles[i] or mine < SLOW_REGION_NS_PER_LAUNCH * max(n, 1):
            continue
        if i in cold or (int(trace.name[i]) in seen_once and inside >= 0.5 * mine):
            out.append(SlowRegion(i, "cold", n))
        elif inside < 0.5 * mine:
            out.append(SlowRegion(i, "data", n))
    return out


def _regions_compiling(facts: Facts, in_window: np.ndarray, compiling: np.ndarray) -> np.ndarray:
    """record_function regions (not the steps) with compile spans inside: guards, the new graph's
    first call and its autotuning run around the spans (gpu/recompile: 16.7 ms per step)."""
    trace = facts.trace
    region = facts.is_host & trace.category_mask({"user_annotation"}) & ~pattern_mask(facts, STEP_NAME) & in_window
    return np.flatnonzero(region & _above(facts, compiling))


def sum_under(facts: Facts, mask: np.ndarray, at: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
    """Per event of `at` (sorted), the sum of values over the events of mask below it in the op tree
    (itself not counted); without values, their count. Arrays the size of mask's events and `at`."""
    out = np.zeros(at.size, dtype=np.int64)
    idx = np.flatnonzero(mask)
    up = facts.parent[idx]
    vals = np.ones(idx.size, dtype=np.int64) if values is None else values[idx]
    while up.size and at.size:
        keep = up >= 0
        up, vals = up[keep], vals[keep]
        pos = np.minimum(np.searchsorted(at, up), at.size - 1)
        hit = at[pos] == up
        np.add.at(out, pos[hit], vals[hit])
        up = facts.parent[up]
    return out


def _above(facts: Facts, mask: np.ndarray) -> np.ndarray:
    """Mask of the events with an event of mask below them in the op tree (itself not counted)."""
    out = np.zeros(len(facts.trace), dtype=bool)
    mark_ancestors(facts, np.flatnonzero(mask), out)
    return out


def _cold_calls(facts: Facts, in_window: np.ndarray) -> np.ndarray:
    """One-time calls of a region or op: a first call that lasts COLD_RATIO times its later calls'
    median, or, in a window of several steps, the only call of its name that lasts COLD_RATIO times
    the median step (gpu/lazy_late_kernel: an evaluation's first aten::cross_entropy_loss, 62 ms in
    step 3 against 2.6 ms steps)."""
    trace = facts.trace
    cand = facts.is_host & trace.category_mask({"user_annotation", "cpu_op"}) & ~pattern_mask(facts, STEP_NAME)
    cand &= in_window
    # only a name with a call of COLD_MIN_NS or more can have a cold first call: the rest go first,
    # by masks over the events (a byte each), not index arrays of every candidate (8 bytes each)
    long_names = np.zeros(len(trace.names), dtype=bool)
    long_names[trace.name[cand & (trace.dur >= COLD_MIN_NS)]] = True
    cand &= long_names[trace.name]
    idx = indices(cand)
    del cand
    idx = first_calls(facts, idx)  # aten::mean inside aten::mean is one call
    if idx.size == 0:
        return idx
    idx = idx[np.lexsort((trace.ts[idx], trace.name[idx]))]
    names = trace.name[idx]
    first = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    step = float(np.median([s.dur for s in facts.steps])) if len(facts.steps) > 1 else None
    out = []
    for k, a in enumerate(first.tolist()):
        b = int(first[k + 1]) if k + 1 < first.size else idx.size
        dur = int(trace.dur[idx[a]])
        if dur < COLD_MIN_NS:
            continue
        if b - a >= 2:
            cold = dur >= COLD_RATIO * float(np.median(trace.dur[idx[a + 1:b]]))
        else:
            cold = step is not None and dur >= COLD_RATIO * step
        if cold:
            out.append(int(idx[a]))
    return np.asarray(out, dtype=np.int64)
