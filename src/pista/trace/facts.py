"""Derived facts the rules read: lanes, the op tree with self times, steps, launch <-> kernel links,
GPU busy and idle intervals. Computed once per trace, all as numpy columns aligned with the Trace.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import numpy as np

from pista.trace.model import (
    DEVICE_ANNOTATION_CATEGORIES,
    DEVICE_CATEGORIES,
    DEVICE_WORK_CATEGORIES,
    HOST_CATEGORIES,
    NO_ID,
    OVERHEAD_CATEGORIES,
    PH_COMPLETE,
    Trace,
    narrow_dtype,
)

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
# An event's index (parent, owner, launcher): int32 holds 2**31 events, a trace of ~500 GB of JSON.
INDEX = np.int32
# Op-tree depth: Kineto traces nest tens of levels deep (big_gpt_eager_20steps: 25).
DEPTH = np.int16
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
# Ops and record_function regions: what a kernel's External id points back to.
OWNER_CATEGORIES = frozenset({"cpu_op", "user_annotation"})


@dataclass(frozen=True)
class Lane:
    kind: str  # "cpu", "gpu", "overhead", "other"
    pid: int
    tid: int
    label: str
    events: np.ndarray  # indices of the lane's complete events, by start time


@dataclass(frozen=True)
class Step:
    number: int
    index: int  # event index of the ProfilerStep#N region
    start: int  # ns
    end: int  # ns

    @property
    def dur(self) -> int:
        return self.end - self.start


# Spans Intervals.covered measures at a time: a few int64 temporaries each, whatever the count.
COVERED_SLICE = 1 << 18


@dataclass(frozen=True)
class Intervals:
    """Sorted, disjoint [start, end) intervals in ns."""

    start: np.ndarray
    end: np.ndarray

    @property
    def total(self) -> int:
        return int((self.end - self.start).sum())

    def clip(self, lo: int, hi: int) -> Intervals:
        # only the intervals that reach into [lo, hi), found by bisection: rules clip per step or
        # per call, and a clip of every interval each time grew with the square of the trace
        first = int(np.searchsorted(self.end, lo, side="right"))
        last = int(np.searchsorted(self.start, hi, side="left"))
        s = np.clip(self.start[first:last], lo, hi)
        e = np.clip(self.end[first:last], lo, hi)
        keep = e > s
        return Intervals(s[keep], e[keep])

    def before(self, t: np.ndarray) -> np.ndarray:
        """Per time in t: ns of these intervals before it."""
        t = np.asarray(t, dtype=np.int64)
        if self.start.size == 0:
            return np.zeros(t.shape, dtype=np.int64)
        done = np.concatenate(([0], np.cumsum(self.end - self.start)))  # ns of the first k intervals
        k = np.searchsorted(self.start, t, side="right") - 1  # the last one starting at or before t
        kk = np.maximum(k, 0)
        inside = np.clip(t - self.start[kk], 0, self.end[kk] - self.start[kk])
        return np.where(k >= 0, done[kk] + inside, 0)

    def covered(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Per [start, end) span: ns of it inside these intervals; COVERED_SLICE spans at a time, so
        the temporaries stay bounded for a million ops."""
        start, end = np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64)
        if start.size <= COVERED_SLICE:
            covered: np.ndarray = self.before(end) - self.before(start)
            return covered
        return np.concatenate([self.before(end[lo:lo + COVERED_SLICE]) - self.before(start[lo:lo + COVERED_SLICE])
                               for lo in range(0, start.size, COVERED_SLICE)])

    def intersect(self, b: Intervals) -> Intervals:
        """The ns in both. Each interval of self meets a run of b's, found by bisection (touching is not
        overlap): arrays the size of the answer, where a sort of every end point of both took ~50 MiB under
        overhead-bound on a 1 GB trace."""
        a = self
        if a.start.size == 0 or b.start.size == 0:
            return EMPTY
        first = np.searchsorted(b.end, a.start, side="right")  # the first of b ending after a starts
        count = np.searchsorted(b.start, a.end, side="left") - first  # those starting before it ends
        np.maximum(count, 0, out=count)
        total = int(count.sum())
        if total == 0:
            return EMPTY
        of_a = np.repeat(np.arange(a.start.size), count)
        # the b of each piece: its run's first, plus its place in the run
        of_b = np.arange(total) - np.repeat(np.cumsum(count) - count - first, count)
        del first, count
        start = a.start[of_a]
        np.maximum(start, b.start[of_b], out=start)
        end = a.end[of_a]
        del of_a
        np.minimum(end, b.end[of_b], out=end)
        keep = end > start
        return merge_intervals(start[keep], end[keep])

    def subtract(self, b: Intervals) -> Intervals:
        """The ns of self outside b."""
        if self.start.size == 0 or b.start.size == 0:
            return self
        lo, hi = int(min(self.start[0], b.start[0])), int(max(self.end[-1], b.end[-1]))
        return self.intersect(b.gaps(lo, hi))

    def gaps(self, lo: int, hi: int) -> Intervals:
        """The complement inside [lo, hi)."""
        inside = self.clip(lo, hi)
        starts = np.concatenate(([lo], inside.end))
        ends = np.concatenate((inside.start, [hi]))
        keep = ends > starts
        return Intervals(starts[keep], ends[keep])


EMPTY = Intervals(np.empty(0, np.int64), np.empty(0, np.int64))


# Events per slice when indices() lists a mask's events (memory, not output).
INDICES_SLICE = 1 << 20


def indices(mask: np.ndarray) -> np.ndarray:
    """np.flatnonzero(mask) as INDEX, a slice of the mask at a time: flatnonzero's int64 answer, half
    of it wasted, was a rule's peak on a big trace (1.4 M ops of a 1 GB one: 11 MiB)."""
    out = np.empty(int(np.count_nonzero(mask)), dtype=INDEX)
    at = 0
    for lo in range(0, mask.size, INDICES_SLICE):
        part = np.flatnonzero(mask[lo:lo + INDICES_SLICE])
        out[at:at + part.size] = part + lo
        at += part.size
    return out


def merge_intervals(start: np.ndarray, end: np.ndarray) -> Intervals:
    if start.size == 0:
        return Intervals(np.empty(0, np.int64), np.empty(0, np.int64))
    # each temporary let go as soon as it is used, the running end computed in place: overhead-bound
    # merges a million ops' spans on a 1 GB trace, where each full-length copy is 8 MiB
    order = np.argsort(start, kind="stable")
    s = start[order]
    running_end = end[order]
    del order
    np.maximum.accumulate(running_end, out=running_end)
    new_block = np.empty(s.size, dtype=bool)
    new_block[0] = True
    np.greater(s[1:], running_end[:-1], out=new_block[1:])
    starts = s[new_block]
    del s
    # a block ends where the running end stands at its last interval (times may be negative)
    new_block[:-1] = new_block[1:]
    new_block[-1] = True
    return Intervals(starts, running_end[new_block].astype(np.int64, copy=False))


@dataclass(eq=False)
class Facts:
    trace: Trace
    is_complete: np.ndarray  # ph == 'X'
    is_host: np.ndarray  # host-thread work (ops, annotations, runtime calls)
    is_device_work: np.ndarray  # kernels, memcpy, memset
    is_device_annotation: np.ndarray
    is_overhead: np.ndarray
    is_launch: np.ndarray  # cuda runtime / driver calls
    parent: np.ndarray  # INDEX: the enclosing host event, -1 at the root
    depth: np.ndarray  # DEPTH (int32 past its range), 0 at the root
    self_time: np.ndarray  # ns: host events' duration minus their children's (int32 where all fit)
    owner: np.ndarray  # INDEX: device work -> host op/annotation with the same External id
    launcher: np.ndarray  # INDEX: device work -> the runtime call with the same correlation id
    steps: list[Step] = field(default_factory=list)
    event_step: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))  # index into steps or -1

    # -- lanes ---------------------------------------------------------------------------
    @cached_property
    def lanes(self) -> list[Lane]:
        trace = self.trace
        idx = np.flatnonzero(self.is_complete)
        if idx.size == 0:
            return []
        order = np.lexsort((trace.ts[idx], trace.tid[idx], trace.pid[idx]))
        idx = idx[order]
        pids, tids = trace.pid[idx], trace.tid[idx]
        boundaries = np.flatnonzero((np.diff(pids) != 0) | (np.diff(tids) != 0)) + 1
        lanes = []
        for chunk in np.split(idx, boundaries):
            first = int(chunk[0])
            pid, tid = int(trace.pid[first]), int(trace.tid[first])
            lanes.append(Lane(self._lane_kind(chunk, pid), pid, tid, trace.lane_label(pid, tid), chunk))
        return lanes

    def _lane_kind(self, chunk: np.ndarray, pid: int) -> str:
        """What a lane's events (`chunk`) are: profiler overhead, GPU work, host work, or other."""
        if self.is_overhead[chunk].any() or pid == -1:
            return "overhead"
        if (self.is_device_work[chunk] | self.is_device_annotation[chunk]).any():
            return "gpu"
        if self.is_host[chunk].any():
            return "cpu"
        return "other"

    def lane_of(self, i: int) -> str:
        return self.trace.lane_label(int(self.trace.pid[i]), int(self.trace.tid[i]))

    # -- time ----------------------------------------------------------------------------
    @cached_property
    def window(self) -> tuple[int, int]:
        """The profiled window: the steps if any, else the span of host and device work."""
        if self.steps:
            # kernels launched inside a step may finish after it: the window runs to their end
            end = max(s.end for s in self.steps)
            launched = self.is_device_work & (self.event_step >= 0)
            if launched.any():
                end = max(end, int((self.trace.ts[launched] + self.trace.dur[launched]).max()))
            return self.steps[0].start, end
        mask = self.is_host | self.is_device_work
        if not mask.any():
            return self.trace.start_ns, self.trace.end_ns
        ts, dur = self.trace.ts[mask], self.trace.dur[mask]
        return int(ts.min()), int((ts + dur).max())

    @cached_property
    def gpu_busy(self) -> dict[int, Intervals]:
        """Per device (pid of the GPU lanes): when any stream ran a kernel, copy or memset."""
        return self._busy_per_device(self.is_device_work)

    @cached_property
    def kernel_busy(self) -> dict[int, Intervals]:
        """Per device: when any stream ran a kernel (compute), copies and memsets left out."""
        return self._busy_per_device(self.is_device_work & self.trace.category_mask({"kernel"}))

    def _busy_per_device(self, mask: np.ndarray) -> dict[int, Intervals]:
        trace = self.trace
        idx = np.flatnonzero(mask)
        busy = {}
        for dev in np.unique(trace.pid[idx]):
            sel = idx[trace.pid[idx] == dev]
            busy[int(dev)] = merge_intervals(trace.ts[sel], trace.ts[sel] + trace.dur[sel])
        return busy

    @property
    def has_gpu(self) -> bool:
        return bool(self.is_device_work.any())

    def step_of(self, i: int) -> int | None:
        s = int(self.event_step[i])
        return self.steps[s].number if s >= 0 else None

    def children(self, i: int) -> np.ndarray:
        return np.flatnonzero(self.parent == i)


R = TypeVar("R")


def per_facts(fn: Callable[[Facts], R]) -> Callable[[Facts], R]:
    """Compute fn(facts) once per Facts: the results several rules and renderers read (what each
    kernel is for, the memory events, the idle ledger) are derived once per trace, not per reader.
    Callers treat the result as read-only."""
    cache: weakref.WeakKeyDictionary[Facts, R] = weakref.WeakKeyDictionary()

    @functools.wraps(fn)
    def once(facts: Facts) -> R:
        if facts not in cache:
            cache[facts] = fn(facts)
        return cache[facts]

    return once


def derive(trace: Trace) -> Facts:
    n = len(trace)
    is_complete = trace.ph == PH_COMPLETE
    is_host = is_complete & trace.category_mask(HOST_CATEGORIES) & (trace.pid != -1)
    is_device_work = is_complete & trace.category_mask(DEVICE_WORK_CATEGORIES)
    is_device_annotation = is_complete & trace.category_mask(DEVICE_ANNOTATION_CATEGORIES)
    is_overhead = is_complete & (trace.category_mask(OVERHEAD_CATEGORIES) | (trace.pid == -1))
    is_overhead &= ~trace.category_mask(DEVICE_CATEGORIES)
    is_launch = is_host & trace.category_mask(LAUNCH_CATEGORIES)

    # torch files the profiler's overhead activities under the profiling thread, so they nest
    # into its op tree (and out of their parents' self time); do the same for the table to match
    parent, depth, self_time = _op_tree(trace, is_host | is_overhead, _main_lane(trace, is_host), is_overhead)
    owner = _link(trace.external_id, is_device_work, trace.external_id,
                  is_host & trace.category_mask(OWNER_CATEGORIES))
    launcher = _link(trace.correlation, is_device_work, trace.correlation, is_launch)
    owner = _enclosing_owner(trace, owner, launcher, parent, is_host & trace.category_mask(OWNER_CATEGORIES))
    steps, event_step = _steps(trace, is_host, is_device_work, launcher)
    return Facts(
        trace=trace,
        is_complete=is_complete,
        is_host=is_host,
        is_device_work=is_device_work,
        is_device_annotation=is_device_annotation,
        is_overhead=is_overhead,
        is_launch=is_launch,
        parent=parent,
        depth=depth,
        self_time=self_time if n else np.empty(0, np.int64),
        owner=owner,
        launcher=launcher,
        steps=steps,
        event_step=event_step,
    )


def _main_lane(trace: Trace, is_host: np.ndarray) -> tuple[int, int]:
    """The thread that ran the profiled steps (else the busiest host thread)."""
    idx = np.flatnonzero(is_host)
    if idx.size == 0:
        return -1, 0
    steps = idx[np.isin(trace.name[idx], list(_step_numbers(trace.names)))]
    pick = steps if steps.size else idx
    lanes, counts = np.unique(np.stack([trace.pid[pick], trace.tid[pick]], axis=1), axis=0, return_counts=True)
    pid, tid = lanes[int(np.argmax(counts))]
    return int(pid), int(tid)


def _op_tree(trace: Trace, is_host: np.ndarray, main_lane: tuple[int, int] = (-1, 0),
             is_overhead: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nest host events per thread the way torch's key_averages does: a child starts before its
    parent ends and ends no later; ties go to the longer event as the parent."""
    n = len(trace)
    idx = indices(is_host)
    if idx.size == 0:
        return np.full(n, -1, dtype=INDEX), np.zeros(n, dtype=DEPTH), np.zeros(n, dtype=np.int64)
    # the host events only, here and below: full-length copies would make derive's peak
    pid, tid = trace.pid[idx], trace.tid[idx]
    if is_overhead is not None and is_overhead[idx].any():
        moved = is_overhead[idx]
        pid, tid = pid.astype(np.int64), tid.astype(np.int64)  # the main lane's ids may be wider
        pid[moved], tid[moved] = main_lane
    ts = trace.ts[idx]
    # longest first among equal starts; keyed on the ends (file order leaves them nearly sorted,
    # which the sort's first pass is quick on: durations took +20 ms on big_gpt_eager_20steps)
    later_first = ts + trace.dur[idx]
    np.negative(later_first, out=later_first)
    order = np.lexsort((later_first, ts, tid, pid))
    del later_first
    # one column at a time, each let go as its sorted copy is made: all at once held both sets
    # (~70 MiB of a 1 GB trace's derive, its peak)
    pid = pid[order]
    tid = tid[order]
    new_lane = np.empty(idx.size, dtype=bool)
    new_lane[0] = True
    new_lane[1:] = (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])
    del pid, tid
    idx = idx[order]
    ts = ts[order]
    del order
    end = ts + trace.dur[idx]

    parent_pos, depth_sorted = _nest(ts, end, new_lane)
    del new_lane
    # the full-length answers only now, past the nesting's peak
    has_parent = parent_pos >= 0
    parent = np.full(n, -1, dtype=INDEX)
    parent[idx[has_parent]] = idx[parent_pos[has_parent]]
    # int32 for a nest deeper than any real trace's, kept exact
    depth = np.zeros(n, dtype=DEPTH if depth_sorted.max() <= np.iinfo(DEPTH).max else np.int32)
    depth[idx] = depth_sorted
    del depth_sorted
    dur = end - ts
    del ts, end
    child_dur = np.zeros(idx.size, dtype=np.int64)  # by sorted position
    np.add.at(child_dur, parent_pos[has_parent], dur[has_parent])
    own = dur - child_dur
    del dur, child_dur
    # int32 where every self time fits (+-2.1 s: every fixture's do), as the id columns: 11 MiB of a
    # 1 GB trace's facts. Readers sum it with .sum() or as float weights, which do not wrap.
    self_time = np.zeros(n, dtype=narrow_dtype(own))
    self_time[idx] = own
    return parent, depth, self_time


def _nest(ts: np.ndarray, end: np.ndarray, new_lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent position (-1: none) and depth of each event, events sorted by lane, start, longest first.

    torch nests with a stack: pop the top while it ended before this event starts or ends before this
    event ends; what is left on top is the parent. That top is the nearest earlier event of the lane
    that contains this one, which pointer jumping finds for all events at once: start each event at
    its predecessor and, while that candidate does not contain it, jump to the candidate's own
    candidate. Everything skipped ends too early, so the first container found is the nearest."""
    n = ts.size
    candidate = np.arange(-1, n - 1, dtype=INDEX)
    candidate[new_lane] = -1
    open_ = indices(candidate >= 0)
    while open_.size:
        c = candidate[open_]
        contains = (end[c] >= end[open_]) & (end[c] > ts[open_])
        open_ = open_[~contains]
        candidate[open_] = candidate[candidate[open_]]
        open_ = open_[candidate[open_] >= 0]
    return candidate, chain_lengths(candidate)


def chain_lengths(up: np.ndarray) -> np.ndarray:
    """How many steps up (`up[i]`, -1 at a root) each node is from its root: its depth.

    Climbing one level per pass cost the sum of all depths, quadratic for a deep nest (100,000 nested
    ops took 36 s). Pointer doubling instead: each node holds the distance to a node further up and,
    each pass, adds that node's distance and jumps to that node's target, so the distances double and
    log2(depth) passes do."""
    depth = (up >= 0).astype(np.int32)
    jump = up.copy()
    active = indices(jump >= 0)
    while active.size:
        via = jump[active]
        depth[active] += depth[via]  # both gathered before either is written: one synchronous pass
        jump[active] = jump[via]
        active = active[jump[active] >= 0]
    return depth


def _link(keys_from: np.ndarray, from_mask: np.ndarray, keys_to: np.ndarray, to_mask: np.ndarray) -> np.ndarray:
    """For each event in from_mask, the first event in to_mask with the same key (-1 if none)."""
    n = keys_from.shape[0]
    out = np.full(n, -1, dtype=INDEX)
    targets = indices(to_mask & (keys_to != NO_ID))
    sources = np.flatnonzero(from_mask & (keys_from != NO_ID))
    if targets.size == 0 or sources.size == 0:
        return out
    target_keys = keys_to[targets]
    order = np.argsort(target_keys, kind="stable")
    sorted_keys, sorted_targets = target_keys[order], targets[order]
    del target_keys, targets, order  # one per target (every op): let go before the lookups
    pos = np.searchsorted(sorted_keys, keys_from[sources])
    pos_clipped = np.minimum(pos, sorted_keys.size - 1)
    hit = sorted_keys[pos_clipped] == keys_from[sources]
    out[sources[hit]] = sorted_targets[pos_clipped[hit]]
    return out


# Slack (ns) when checking that a kernel's owner holds its launch call: timestamps rounded to the µs.
OWNER_SLACK_NS = 1_000


def _enclosing_owner(trace: Trace, owner: np.ndarray, launcher: np.ndarray, parent: np.ndarray,
                     is_owner: np.ndarray) -> np.ndarray:
    """Owners by External id that cannot have launched their kernel, the op lying wholly before or after the launch
    call, replaced by the innermost op or region around that call: an External id can be used twice in one file
    (h100_tiny_transformer_fwd: 282 is both aten::mm's TF32 GEMM and an aten::empty 2.6 ms later, and the top
    kernels line read "from aten::empty"). Few or none in a file: the walk up the op tree is per such kernel."""
    work = np.flatnonzero((owner >= 0) & (launcher >= 0))
    if work.size == 0:
        return owner
    o, call = owner[work].astype(np.int64), launcher[work].astype(np.int64)
    ts, end = trace.ts, trace.ts + trace.dur
    wrong = (ts[o] > end[call] + OWNER_SLACK_NS) | (end[o] + OWNER_SLACK_NS < ts[call])
    for k, c in zip(work[wrong].tolist(), call[wrong].tolist(), strict=True):
        up = int(parent[c])
        while up >= 0 and not is_owner[up]:
            up = int(parent[up])
        owner[k] = up
    return owner


# Events per slice when placing events in steps: 40 MiB of temporaries at most.
STEP_SLICE = 1 << 20


def _steps(trace: Trace, is_host: np.ndarray, is_device_work: np.ndarray,
           launcher: np.ndarray) -> tuple[list[Step], np.ndarray]:
    event_step = np.full(len(trace), -1, dtype=np.int32)
    steps = _step_regions(trace, is_host)
    if steps:
        _place_in_steps(trace, steps, is_host, is_device_work, launcher, event_step)
    return steps, event_step


def _step_regions(trace: Trace, is_host: np.ndarray) -> list[Step]:
    """The host's ProfilerStep#N events, in time order."""
    step_name_ids = _step_numbers(trace.names)
    if not step_name_ids:
        return []
    candidates = np.flatnonzero(is_host & np.isin(trace.name, list(step_name_ids)))
    candidates = candidates[np.argsort(trace.ts[candidates], kind="stable")]
    return [
        Step(step_name_ids[int(trace.name[i])], int(i), int(trace.ts[i]), int(trace.ts[i] + trace.dur[i]))
        for i in candidates
    ]


def _step_numbers(names: list[str]) -> dict[int, int]:
    """The ids of the names ProfilerStep#N, with their N."""
    return {i: int(m.group(1)) for i, name in enumerate(names) if (m := STEP_NAME.match(name))}


def _place_in_steps(trace: Trace, steps: list[Step], is_host: np.ndarray, is_device_work: np.ndarray,
                    launcher: np.ndarray, event_step: np.ndarray) -> None:
    """Each host event's step by when it runs, device work's by when its launch ran, into `event_step`."""
    n = len(trace)
    starts = np.array([s.start for s in steps], dtype=np.int64)
    ends = np.array([s.end for s in steps], dtype=np.int64)
    # device work belongs to the step that launched it; a slice of the trace at a time, so the
    # temporaries (~40 bytes an event) stay bounded
    for lo in range(0, n, STEP_SLICE):
        relevant = lo + np.flatnonzero(is_host[lo:lo + STEP_SLICE] | is_device_work[lo:lo + STEP_SLICE])
        when = trace.ts[relevant]
        source = launcher[relevant]
        linked = is_device_work[relevant] & (source >= 0)
        when[linked] = trace.ts[source[linked]]
        pos = np.searchsorted(starts, when, side="right") - 1
        inside = pos >= 0
        inside[inside] = when[inside] < ends[pos[inside]]
        event_step[relevant[inside]] = pos[inside]
