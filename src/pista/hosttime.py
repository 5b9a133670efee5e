"""Where the host's time goes, per thread: forward, backward, optimizer, data, compile, Python between ops, and
waiting.

Each host event's self time goes to the nearest region above it (the optimizer's
`Optimizer.step#`/`zero_grad#`, the autograd engine's `evaluate_function` or a region named
backward, a region named for data or input loading, forward, an `nn.Module` or a compiled call).
What no region claims is the forward where it ends before the step's first autograd node (in a step
without one, inference, its ops), else `python`: Python between ops (in every fixture all of it is the
self time of record_function regions and ProfilerStep spans: the user's code outside any op).
Waiting is time the host is blocked, not overhead: the self time of sync calls, and a thread's time in
a backward region while an autograd thread does the work (the caller sleeps in `backward()`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from pista.query import (
    COMPILE_EVENT,
    DATALOADER_MARKER,
    DTOH_COPY,
    LOADER_REGION,
    SYNC_NAMES,
    cpu_activity_missing,
    levels,
    name_mask,
    pattern_mask,
)
from pista.trace.facts import Facts, merge_intervals

REGIONS = ("forward", "backward", "optimizer", "data", "compile", "python", "waiting")
_CODE = {r: i for i, r in enumerate(REGIONS)}
# Earlier entries win where regions nest (an optimizer step inside a region named "train"). Names of
# record_function regions (user annotations) only, but for torch's own markers (the optimizer's, the
# autograd engine's, the DataLoader's, whatever category the profiler gives them: torch 1.8's are
# 'Operator's): a cpu_op or a Python frame whose name holds "load" or "input" is not a data loader. Regions
# named for loading input are matched on word boundaries, frameworks' names left out (_common.LOADER_REGION: DDP's
# forward and 'BatchNorm affine=False' read as data before).
OPTIMIZER_CALL = re.compile(r"^Optimizer\.(step|zero_grad)#")
PATTERNS = (
    # Dynamo/Inductor at work in the window (query.COMPILE_EVENT): review 6's cs521a_myconv_inductor read "Python
    # between ops 793 ms (72%)" for a 959 ms `_compile.compile_inner (dynamo_timed)` region
    ("compile", COMPILE_EVENT, None),
    ("optimizer", OPTIMIZER_CALL, None),
    ("backward", re.compile(r"^autograd::engine::evaluate_function"), None),
    ("backward", re.compile(r"backward", re.I), "user_annotation"),
    ("data", DATALOADER_MARKER, None),
    ("data", LOADER_REGION, "user_annotation"),
    ("forward", re.compile(r"forward", re.I), "user_annotation"),
    ("forward", re.compile(r"^nn\.Module:"), None),
    # a compiled module's call (its backward runs under the autograd engine, above): series_mlp_compile's
    # forward showed 0 ms, its 2 ms in "python"
    ("forward", re.compile(r"^Torch-Compiled Region"), None),
)
AUTOGRAD = re.compile(r"^autograd::engine::evaluate_function")
# Blocking runtime calls beyond the syncs: a synchronous copy waits for the device.
BLOCKING = SYNC_NAMES | {"cudaMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2"}
# Host events per slice when measuring their overlap with the autograd engine: bounds the temporaries.
SLICE = 1 << 18
# Threads with less than this share of the host's self time are left out.
MIN_THREAD_SHARE = 0.01


def _host_regions(facts: Facts) -> np.ndarray:
    """Each event's region code (_CODE), the waits included: blocking calls, the launch of a device-to-host
    copy, and that of a copy it runs beside for most of its time."""
    trace = facts.trace
    region = _regions(facts)
    _forward_before_backward(facts, region)
    _closure_forward(facts, region)
    region[facts.is_host & name_mask(facts, BLOCKING)] = _CODE["waiting"]
    # the launch of a device-to-host copy waits for it (gpu/host_sync_item: 37.6 µs per step of
    # cudaMemcpyAsync under .item(), beside its stream syncs)
    dtoh = facts.is_device_work & trace.category_mask({"gpu_memcpy"}) & pattern_mask(facts, DTOH_COPY) & (facts.launcher >= 0)
    region[facts.launcher[dtoh]] = _CODE["waiting"]
    # so does the launch of any copy it runs beside for most of its time: from pageable memory the call stages the
    # copy and returns as it ends (review 4: a100_torchbench_memcpy's 32.4 ms cudaMemcpyAsync of 147 MiB, "forward")
    region[_blocking_copy_calls(facts)] = _CODE["waiting"]
    return region


def _self_time_by_region(facts: Facts, lanes: np.ndarray, region: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Self time in the window per (lane, region), flat (lane * len(REGIONS) + region), and each lane's first
    event in the window."""
    trace = facts.trace
    lo, hi = facts.window
    width = len(REGIONS)
    # ns, integers in float64: exact, whatever the order of the adds
    sums = np.zeros(lanes.size * width)
    first = np.full(lanes.size, -1, dtype=np.int64)
    for idx in _in_window(facts, lo, hi):
        inverse = np.searchsorted(lanes, trace.lane_keys(idx))
        sums += np.bincount(inverse * width + region[idx], weights=facts.self_time[idx], minlength=sums.size)
        seen, at = np.unique(inverse, return_index=True)
        new = first[seen] < 0
        first[seen[new]] = idx[at[new]]
    return sums, first


def host_time(facts: Facts) -> dict[str, dict[str, float]]:
    """{thread lane: {region: µs per step}} inside the window, busiest thread first; none where the trace records
    runtime calls but no op (CUDA activity alone: a4000_sevit_warm's 2.75 ms of runtime calls read as "forward
    100%"), whose host time cannot be split (pista.notices says so)."""
    if cpu_activity_missing(facts):
        return {}
    trace = facts.trace
    lo, hi = facts.window
    # SLICE rows at a time: full-length lanes and sums were the summary's peak
    lanes = np.unique(np.concatenate([np.unique(trace.lane_keys(idx)) for idx in _in_window(facts, lo, hi)]))
    if not lanes.size:
        return {}
    region = _host_regions(facts)
    width = len(REGIONS)
    sums, first = _self_time_by_region(facts, lanes, region)
    # a thread's self time while it sleeps in backward() moves from its region to waiting
    events, asleep = _waiting_for_autograd(facts)
    inside = (trace.ts[events] >= lo) & (trace.ts[events] < hi)
    events, asleep = events[inside], asleep[inside]
    inverse = np.searchsorted(lanes, trace.lane_keys(events))
    sums += np.bincount(inverse * width + _CODE["waiting"], weights=asleep, minlength=sums.size)
    sums -= np.bincount(inverse * width + region[events], weights=asleep, minlength=sums.size)
    return _by_thread(facts, sums.reshape(lanes.size, width), first, _lanes_with_ops(facts, lanes, lo, hi))


def _by_thread(facts: Facts, per_lane: np.ndarray, first: np.ndarray, working: np.ndarray) -> dict[str, dict[str, float]]:
    """The threads that run ops and hold MIN_THREAD_SHARE of the host's self time, busiest first: µs per step by
    region."""
    steps = len(facts.steps) or 1
    total = float(per_lane.sum()) or 1.0
    out = {}
    for k in np.argsort(-per_lane.sum(axis=1)).tolist():
        if per_lane[k].sum() >= MIN_THREAD_SHARE * total and working[k]:
            out[facts.lane_of(int(first[k]))] = {r: float(per_lane[k, j]) / steps / 1000.0
                                                 for j, r in enumerate(REGIONS)}
    return out


def _blocking_copy_calls(facts: Facts) -> np.ndarray:
    """The runtime calls that launched a copy and ran alongside it for most of their time: a pageable or
    synchronous copy, which the call stages or waits for (a100_torchbench_memcpy: the 32.4 ms call returns 57 µs
    before its 32.2 ms copy ends; an asynchronous launch returns before its copy starts)."""
    trace = facts.trace
    copies = np.flatnonzero(facts.is_device_work & trace.category_mask({"gpu_memcpy"}) & (facts.launcher >= 0))
    calls = facts.launcher[copies].astype(np.int64)
    start = np.maximum(trace.ts[copies], trace.ts[calls])
    end = np.minimum(trace.ts[copies] + trace.dur[copies], trace.ts[calls] + trace.dur[calls])
    return calls[(end - start) * 2 >= trace.dur[calls]]


def _lanes_with_ops(facts: Facts, lanes: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per lane: whether it runs an op or a runtime call in the window. A thread of Python frames alone is a
    background thread (review 4: vLLM's usage-reporting thread and tqdm's monitor, under tid 0, read as 'thread 0:
    Python between ops 100%'), not the step's host time."""
    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op", "cuda_runtime", "cuda_driver", "user_annotation"})
                         & (trace.ts >= lo) & (trace.ts < hi))
    return np.isin(lanes, np.unique(trace.lane_keys(ops)))


def _closure_forward(facts: Facts, region: np.ndarray) -> None:
    """A closure's forward inside the optimizer's step (Lightning's `optimizer.step(closure)`): what the
    step call runs before the first autograd node inside it is the forward, not the optimizer
    (savings/closure_unfused and healthy_closure_fused: 'optimizer 76%' of the host was mostly the forward)."""
    trace = facts.trace
    calls = np.flatnonzero(facts.is_host & pattern_mask(facts, OPTIMIZER_CALL))
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD))
    if calls.size == 0 or nodes.size == 0:
        return
    starts = np.sort(trace.ts[nodes])
    ends = trace.ts[calls] + trace.dur[calls]
    k = np.searchsorted(starts, trace.ts[calls], side="left")
    first = np.where(k < starts.size, starts[np.minimum(k, starts.size - 1)], np.iinfo(np.int64).max)
    mine = first < ends
    if not mine.any():
        return
    optimizer = np.flatnonzero(facts.is_host & (region == _CODE["optimizer"]))
    keys = trace.lane_keys(optimizer)
    for c, until in zip(calls[mine].tolist(), first[mine].tolist(), strict=True):
        lane = trace.lane_keys(np.array([c]))[0]
        hit = optimizer[(keys == lane) & (trace.ts[optimizer] >= trace.ts[c])
                        & (trace.ts[optimizer] + trace.dur[optimizer] <= until) & (optimizer != c)]
        region[hit] = _CODE["forward"]


def _forward_before_backward(facts: Facts, region: np.ndarray) -> None:
    """In a step that runs a backward, the host time no region claims before its first autograd node
    is the forward: an eager model without record_function regions or module events
    (big_gpt_eager_20steps: 15 ms a step of "python" was its forward). In a step without one
    (inference), its ops are (gpu/kv_flash: 10.9 ms of a 17.2 ms token; the rest, Python between
    them, stays other). Without steps, the window's ops no region claims are the model's (forward): their own
    time is not Python between ops (issue 35: 81-100% "Python between ops" on traces without steps)."""
    trace = facts.trace
    if not facts.steps:
        ops = facts.is_host & trace.category_mask({"cpu_op", "cuda_runtime", "cuda_driver"})
        region[ops & (region == _CODE["python"])] = _CODE["forward"]
        return
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD) & (facts.event_step >= 0))
    first = np.full(len(facts.steps), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, facts.event_step[nodes], trace.ts[nodes])
    training = first < np.iinfo(np.int64).max
    ops = facts.is_host & trace.category_mask({"cpu_op", "cuda_runtime", "cuda_driver"})
    for start in range(0, len(trace), SLICE):  # bounded temporaries
        rows = slice(start, start + SLICE)
        step = facts.event_step[rows]
        ahead = facts.is_host[rows] & (region[rows] == _CODE["python"]) & (step >= 0)
        ahead[ahead] = training[step[ahead]] | ops[rows][ahead]
        # wholly before it: a region around the whole step keeps its own self time (Python, the rest)
        ahead[ahead] = trace.ts[rows][ahead] + trace.dur[rows][ahead] <= first[step[ahead]]
        region[start + np.flatnonzero(ahead)] = _CODE["forward"]


def _in_window(facts: Facts, lo: int, hi: int) -> Iterator[np.ndarray]:
    """The host events that start in [lo, hi), SLICE rows of the trace at a time."""
    ts = facts.trace.ts
    for start in range(0, len(facts.trace), SLICE):
        rows = slice(start, start + SLICE)
        yield start + np.flatnonzero(facts.is_host[rows] & (ts[rows] >= lo) & (ts[rows] < hi))


def _regions(facts: Facts) -> np.ndarray:
    """Per event: the region of the first PATTERNS entry on its op-tree path (itself included), else
    other. One pass down the tree carrying a bit per entry, not a pass per entry."""
    trace = facts.trace
    bits = np.zeros(len(trace), dtype=np.uint16)  # room for 16 entries
    for k, (_, pattern, category) in enumerate(PATTERNS):
        marks = facts.is_host & pattern_mask(facts, pattern)
        if category is not None:
            marks &= trace.category_mask({category})
        bits[marks] |= np.uint16(1 << k)
    for level in levels(facts):  # parents before their children
        bits[level] |= bits[facts.parent[level]]
    region = np.full(len(trace), _CODE["python"], dtype=np.int8)
    for k in reversed(range(len(PATTERNS))):  # the earliest entry wins
        region[(bits & (1 << k)) != 0] = _CODE[PATTERNS[k][0]]
    return region


def _waiting_for_autograd(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """Host events' ns of self time on another thread while the autograd engine works (the caller
    asleep in backward(); big_gpt_eager_20steps: 37 ms per step of `train_step`'s self time), as
    (events, ns) where there is any."""
    trace = facts.trace
    none = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))
    engine = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD))
    if not engine.size:
        return none
    busy = merge_intervals(trace.ts[engine], trace.ts[engine] + trace.dur[engine])
    engine_lanes = np.unique(trace.lane_keys(engine))
    found = []  # the other threads' events that overlap it or have a negative self time, by slices
    for start in range(0, len(trace), SLICE):
        events = start + np.flatnonzero(facts.is_host[start:start + SLICE])
        events = events[~np.isin(trace.lane_keys(events), engine_lanes)]
        overlap = busy.covered(trace.ts[events], trace.ts[events] + trace.dur[events])
        hit = (overlap > 0) | (facts.self_time[events] < 0)
        found.append((events[hit], overlap[hit]))
    events = np.concatenate([e for e, _ in found])
    overlap = np.concatenate([o for _, o in found]).astype(np.float64)
    # what their children overlap, summed on the parents among them
    parent = facts.parent[events]
    child = np.flatnonzero(parent >= 0)
    at = np.minimum(np.searchsorted(events, parent[child]), max(events.size - 1, 0))
    is_found = events[at] == parent[child]
    children = np.bincount(at[is_found], weights=overlap[child[is_found]], minlength=events.size)
    self_ns = facts.self_time[events]
    # one that overlaps nothing gives 0, or its self time where that is negative (python_function
    # frames that overlap without nesting); such events add nothing to a parent's
    asleep = np.where(overlap > 0, np.clip(overlap - children, 0.0, self_ns), np.minimum(self_ns, 0))
    return events, asleep
