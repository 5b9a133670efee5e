"""The timeline of the profiled steps, and its replay with edits applied (issue 33).

A Daydream-style model (USENIX ATC 2020) built from the facts, not from raw JSON:

- the host, as one program order: every runtime call that launches device work or waits for it, on
  every host thread of the trace, in time order; between two such calls the host works for the time
  the trace shows (the main thread and the autograd thread take turns, so one order serves both);
- launch -> device work (correlation ids); each device stream runs its work in order, a piece of
  work starting once its launch has reached the GPU (the launch latency the trace shows) and the
  stream is free (plus the gap the trace shows between queued work);
- a sync (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, their cu*/hip* twins)
  blocks the host until the work queued before it on the streams it waited for is done, then costs
  its own time; a call whose own copy or kernel ends inside it (a pageable or blocking memcpy)
  blocks until that work is done.

`replay(edit)` runs the model with an edit applied (host time removed or scaled, device work removed
or resized, waits dropped) and returns each step's time. Unchanged, it reproduces the trace: the
difference per step is `replay_error`. A step ends when both its host part and the device work it
launched are done (the next step's host start, or the last kernel); that is what a user's timer
around N steps with a sync at the end measures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

if TYPE_CHECKING:
    from pista.trace.model import Trace

# A runtime call named like this waits for device work (CUDA runtime and driver, HIP).
SYNC_CALL = re.compile(r"^(cuda|cu|hip)(Device|Stream|Event|Ctx)Synchronize$")
DEVICE_SYNC_CALL = re.compile(r"^(cuda|cu|hip)(Device|Ctx)Synchronize$")
# Device work starting within this many ns of the end of the work before it on its stream was queued
# behind it (H200 fixtures: back-to-back kernels start 0.5-2 µs apart; gpu/launch_bound's tiny kernels,
# launched 10-20 µs apart, start 5 µs or more after the previous one ended).
QUEUED_GAP_NS = 3_000
# A launch that reaches the GPU later than this waited for something else than the launch path (the H100's
# launch-to-start is 6.5-8.7 µs on an idle GPU in savings/h100/sync_timing_infer; 50-200 µs under load).
MAX_LAUNCH_LATENCY_NS = 1_000_000
DEFAULT_LAUNCH_LATENCY_NS = 8_000.0
# A wait counts as the call's when the awaited work ends within the call (plus this slack, ns): a
# cudaStreamSynchronize returns 3-15 µs after its last kernel ends on the H200 fixtures.
WAIT_SLACK_NS = 50_000


@dataclass(frozen=True)
class EditCounts:
    """What an edit changes, counted (the text of a replayed impact is built from these)."""

    removed: int  # events removed: host ops (with the calls and work under them) or device work
    scaled_host: int
    resized_work: int
    unblocked: int
    readied: int = 0  # device work that no longer waits, once launched, for something the trace does not show


@dataclass(frozen=True)
class Edit:
    """A counterfactual change to the timeline, what a fix does. All fields optional.

    - `remove`: event indices: host events whose time is taken out, with every call under them
      (their launches' device work goes too, their waits with them); device work removed as well.
    - `host_scale`: (event indices, factor) pairs: the host time under those events is multiplied by
      the factor (a fused or compiled call doing the same work with fewer ops); calls under them stay.
    - `host_remove_ns`: (times ns, amounts ns): host time taken out at those instants (the profiler's
      own cost per recorded event).
    - `device_dur`: (work indices, new durations ns): device work resized (a faster dtype, an aligned
      shape, a fused kernel moving its bytes once).
    - `unblock`: runtime call indices that no longer wait (the value stays on the GPU; a pinned copy).
    - `ready`: device work indices that run as soon as they are launched and their stream is free: the wait the
      trace shows between their launch and their start, with nothing running (another rank, an event, work the
      trace does not hold), taken out (their launch latency becomes the trace's typical one).
    """

    label: str = ""
    remove: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    host_scale: tuple[tuple[np.ndarray, float], ...] = ()
    host_remove_ns: tuple[np.ndarray, np.ndarray] | None = None
    device_dur: tuple[np.ndarray, np.ndarray] | None = None
    unblock: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    host_scale_spans: tuple[tuple[Intervals, float], ...] = ()  # host time in these spans (any thread) scaled
    ready: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    # the most the fix can save per step (ns), where the rule can bound it from the trace and the replay cannot:
    # queued-wait's stall (hta_negq_rank0, a replay 62% off its trace, had freed 146 ms a step for a 100 ms stall)
    most_ns: float = float("inf")

    def __add__(self, other: Edit) -> Edit:
        """Both edits at once (the later one's resized durations win where both resize)."""
        dur = _join_pairs(self.device_dur, other.device_dur)
        cut = _join_pairs(self.host_remove_ns, other.host_remove_ns)
        return Edit(f"{self.label}+{other.label}".strip("+"),
                    np.concatenate((self.remove, other.remove)).astype(np.int64),
                    self.host_scale + other.host_scale, cut, dur,
                    np.concatenate((self.unblock, other.unblock)).astype(np.int64),
                    self.host_scale_spans + other.host_scale_spans,
                    np.concatenate((self.ready, other.ready)).astype(np.int64))

    @property
    def counts(self) -> EditCounts:
        scaled = sum(int(e.size) for e, f in self.host_scale if f < 1.0) + \
            sum(int(i.start.size) for i, f in self.host_scale_spans if f < 1.0)
        return EditCounts(int(np.unique(self.remove).size), scaled,
                          0 if self.device_dur is None else int(self.device_dur[0].size), int(np.unique(self.unblock).size),
                          int(np.unique(self.ready).size))

    def footprint(self, facts: Facts) -> Intervals:
        """The host time this edit changes (removes or shortens): what a symptom found after it must not
        claim again."""
        trace = facts.trace
        idx = self._shortened_host_events(facts)
        spans = [s for s, f in self.host_scale_spans if f < 1.0]
        return merge_intervals(np.concatenate([trace.ts[idx], *(s.start for s in spans)]),
                               np.concatenate([trace.ts[idx] + trace.dur[idx], *(s.end for s in spans)]))

    def _shortened_host_events(self, facts: Facts) -> np.ndarray:
        """The host events this edit removes or scales down (with repeats)."""
        events = [e for e, f in self.host_scale if f < 1.0]
        if self.remove.size:
            events.append(self.remove[facts.is_host[self.remove]])
        return np.concatenate(events).astype(np.int64) if events else np.empty(0, np.int64)

    def outside(self, facts: Facts, taken: Intervals) -> Edit:
        """The same edit on the host time outside `taken` (its scaled events become spans there); removals,
        resized work and dropped waits are kept as they are."""
        if not taken.start.size:
            return self
        trace = facts.trace
        spans = tuple((_spans_of(trace, e).subtract(taken), f)
                      for e, f in self.host_scale)
        spans += tuple((s.subtract(taken), f) for s, f in self.host_scale_spans)
        return Edit(self.label, self.remove, (), self.host_remove_ns, self.device_dur, self.unblock, spans, self.ready,
                    self.most_ns)

    @property
    def empty(self) -> bool:
        return (not self.remove.size and not self.host_scale and not self.host_scale_spans and self.host_remove_ns is None
                and self.device_dur is None and not self.unblock.size and not self.ready.size)


def _spans_of(trace: Trace, events: np.ndarray) -> Intervals:
    """The time the events cover, overlaps merged."""
    return merge_intervals(trace.ts[events], trace.ts[events] + trace.dur[events])


def _join_pairs(a: tuple[np.ndarray, np.ndarray] | None,
                b: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, np.ndarray] | None:
    if a is None or b is None:
        return a if b is None else b
    return np.concatenate((a[0], b[0])), np.concatenate((a[1], b[1]))


NO_EDIT = Edit("as profiled")


@dataclass(frozen=True)
class Replay:
    """Per step: its time (ns) as replayed; `ends` the step ends, `start` the first step's start."""

    start: int
    ends: np.ndarray  # int64 per step
    waited_ns: float = 0.0  # the host blocked in waits, over the steps
    stream_busy_ns: dict[int, float] = field(default_factory=dict)  # per stream: the work the steps ran on it

    @property
    def step_ns(self) -> np.ndarray:
        return np.diff(np.concatenate(([self.start], self.ends)))

    @property
    def total_ns(self) -> int:
        return int(self.ends[-1] - self.start) if self.ends.size else 0

    @property
    def median_ns(self) -> float:
        """The median step: what a user's timer over many steady steps reads; a first step that absorbs a
        backlog or a one-time cost does not move it (savings/h100/loop_ensemble's fixed twin: a 4 ms first step
        for 0.4 ms steady ones)."""
        return float(np.median(self.step_ns)) if self.ends.size else 0.0


@dataclass
class Timeline:
    """The model (see the module docstring). Arrays over `points` (host calls that launch or wait, in
    time order, and the step starts) and `work` (device work with its stream and launch)."""

    facts: Facts
    # points
    p_event: np.ndarray  # event index (-1: a step marker)
    p_ts: np.ndarray
    p_end: np.ndarray
    p_sync: np.ndarray  # bool: waits for device work
    p_wait_all: np.ndarray  # bool: waits for every stream (a device sync)
    p_wait_stream: np.ndarray  # the stream it waits for otherwise (-1: none seen)
    p_cost: np.ndarray  # its own time beyond the wait
    # work
    w_event: np.ndarray
    w_point: np.ndarray  # the launching point; for work launched outside the model, the point before it ran
    w_owned: np.ndarray  # bool: launched by its point (removing the point removes the work)
    w_stream: np.ndarray  # dense stream number
    w_start: np.ndarray
    w_dur: np.ndarray
    w_latency: np.ndarray  # launch start -> ready to run
    w_gap: np.ndarray  # least gap after the previous work on its stream
    w_step: np.ndarray
    streams: int
    stream_busy_until: np.ndarray  # per stream: the end of its work that started before the first step
    # steps
    marker_points: np.ndarray  # point index of each step's start marker, and one for the last step's host end

    @cached_property
    def observed(self) -> Replay:
        """The steps as the trace shows them, by the same definition of a step's end as the replay's."""
        return _steps(self, self.p_ts.astype(np.float64), (self.w_start + self.w_dur).astype(np.float64),
                      np.ones(self.w_event.size, dtype=bool))

    @cached_property
    def typical_latency(self) -> float:
        """The median launch latency of the work the model launches (launch start -> ready to run)."""
        owned = self.w_latency[self.w_owned]
        return float(np.median(owned)) if owned.size else 0.0

    @cached_property
    def baseline(self) -> Replay:
        return _replay(self, NO_EDIT)

    @property
    def error(self) -> float:
        """The unchanged replay's error: |replayed - observed| over observed, the window's steps summed."""
        observed = self.observed.total_ns
        return abs(self.baseline.total_ns - observed) / observed if observed > 0 else 0.0

    def saving_ns(self, edit: Edit, base: Edit = NO_EDIT) -> float:
        """The median step's ns that `edit` saves on top of `base`."""
        before, after = self.replay(base), self.replay(base + edit)
        return before.median_ns - after.median_ns

    def replay(self, edit: Edit) -> Replay:
        return self.baseline if edit.empty else _replay(self, edit)

    def stream_label(self, stream: int) -> str:
        """The lane a dense stream number stands for ("GPU 0 stream 7")."""
        first = np.flatnonzero(self.w_stream == stream)
        return self.facts.lane_of(int(self.w_event[first[0]])) if first.size else f"stream {stream}"


def _interval_weights(facts: Facts, edit: Edit) -> list[tuple[Intervals, float]]:
    """Host intervals whose time the edit takes out, with the fraction taken (1: all of it)."""
    trace = facts.trace
    out = []
    host = edit.remove[facts.is_host[edit.remove] | facts.is_launch[edit.remove]] if edit.remove.size else edit.remove
    if host.size:
        out.append((_spans_of(trace, host), 1.0))
    for events, factor in edit.host_scale:
        if events.size and factor < 1.0:
            out.append((_spans_of(trace, events), 1.0 - factor))
    out.extend((spans, 1.0 - factor) for spans, factor in edit.host_scale_spans if factor < 1.0)
    return out


def _removed(weights: list[tuple[Intervals, float]], cut: tuple[np.ndarray, np.ndarray] | None,
             a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per [a, b): the host ns the edit takes out of it, at most b - a. Where spans overlap their factors
    multiply (a region a fix shortens, inside dispatch the profiler inflated: the fix keeps its share of the
    unprofiled time, not of the profiled one)."""
    out = _scaled_out(weights, a, b)
    if cut is not None and cut[0].size:
        order = np.argsort(cut[0], kind="stable")
        out += _sum_at(cut[0][order], cut[1][order], a, b)
    removed: np.ndarray = np.minimum(out, np.maximum(b - a, 0))
    return removed


def _scaled_out(weights: list[tuple[Intervals, float]], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The time the weighted spans take out of each [a, b): a piecewise-constant share taken, the product of
    every span's share kept, summed by a running total over the pieces."""
    weights = [(iv, w) for iv, w in weights if iv.start.size and w > 0]
    if not weights:
        return np.zeros(a.shape, dtype=np.float64)
    bounds = np.unique(np.concatenate([np.concatenate((iv.start, iv.end)) for iv, _ in weights]))
    keep = np.ones(max(bounds.size - 1, 0), dtype=np.float64)
    for iv, w in weights:
        k = np.searchsorted(iv.start, bounds[:-1], side="right") - 1
        inside = (k >= 0) & (bounds[:-1] < iv.end[np.maximum(k, 0)])
        keep[inside] *= max(0.0, 1.0 - w)
    taken = 1.0 - keep
    total = np.concatenate(([0.0], np.cumsum(np.diff(bounds) * taken)))

    def before(t: np.ndarray) -> np.ndarray:
        k = np.clip(np.searchsorted(bounds, t, side="right") - 1, 0, max(bounds.size - 1, 0))
        part = np.where(k < taken.size, (np.clip(t, bounds[0], bounds[-1]) - bounds[k]) * taken[np.minimum(k, taken.size - 1)], 0.0)
        return np.where(t <= bounds[0], 0.0, total[k] + part)

    scaled: np.ndarray = before(b.astype(np.float64)) - before(a.astype(np.float64))
    return scaled


def _sum_at(times: np.ndarray, amounts: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per [a, b): the amounts at sorted times inside it."""
    total = np.concatenate(([0.0], np.cumsum(amounts)))
    return total[np.searchsorted(times, b, side="left")] - total[np.searchsorted(times, a, side="left")]


def _inside(weights: list[tuple[Intervals, float]], t: np.ndarray) -> np.ndarray:
    """Per time: whether it falls inside an interval the edit removes whole."""
    out = np.zeros(t.shape, dtype=bool)
    for intervals, w in weights:
        if w >= 1.0 and intervals.start.size:
            k = np.searchsorted(intervals.start, t, side="right") - 1
            ok = k >= 0
            out[ok] |= t[ok] < intervals.end[k[ok]]
    return out


def _replay(tl: Timeline, edit: Edit) -> Replay:
    weights = _interval_weights(tl.facts, edit)
    n = tl.p_ts.size
    if n == 0:
        return Replay(0, np.zeros(0, np.int64))
    dropped = _inside(weights, tl.p_ts) & (tl.p_event >= 0)
    waited = tl.p_sync & ~dropped  # the calls that waited in the trace
    sync = waited & ~np.isin(tl.p_event, edit.unblock) if edit.unblock.size else waited
    # host advance from each point to the next: the time between their starts, less what the edit takes
    # out; a wait's own interval is never scaled, it is replayed (below, or its own cost where it no longer
    # waits), and only dropped with its caller
    nxt = np.concatenate((tl.p_ts[1:], tl.p_ts[-1:]))
    own = np.minimum(tl.p_end, nxt) - tl.p_ts
    from_ = np.where(waited, tl.p_ts + own, tl.p_ts)
    advance = (nxt - tl.p_ts) - _removed(weights, edit.host_remove_ns, from_, nxt)
    advance -= np.where(waited, own, 0)
    advance += np.where(waited & ~sync, np.minimum(tl.p_cost, own), 0)
    w_keep, w_dur = _work_after(tl, edit, dropped)
    return _run(tl, advance, sync, w_keep, w_dur, _latency_after(tl, edit))


def _latency_after(tl: Timeline, edit: Edit) -> np.ndarray:
    """Each work's launch latency, the trace's typical one for the work the edit readies (never longer than it
    was)."""
    if not edit.ready.size or not tl.w_event.size:
        return tl.w_latency
    pos = np.clip(np.searchsorted(tl.w_event, edit.ready), 0, tl.w_event.size - 1)
    pos = pos[tl.w_event[pos] == edit.ready]
    out = tl.w_latency.copy()
    out[pos] = np.minimum(out[pos], tl.typical_latency)
    return out


def _work_after(tl: Timeline, edit: Edit, dropped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.ones(tl.w_event.size, dtype=bool)
    keep[tl.w_owned] = ~dropped[tl.w_point[tl.w_owned]]
    if edit.remove.size:
        keep &= ~np.isin(tl.w_event, edit.remove)
    dur = tl.w_dur.astype(np.float64)
    if edit.device_dur is not None and edit.device_dur[0].size:
        pos = np.searchsorted(tl.w_event, edit.device_dur[0])
        pos = np.clip(pos, 0, max(tl.w_event.size - 1, 0))
        ok = tl.w_event[pos] == edit.device_dur[0]
        dur[pos[ok]] = edit.device_dur[1][ok]
    return keep, dur


def _run(tl: Timeline, advance: np.ndarray, sync: np.ndarray, w_keep: np.ndarray, w_dur: np.ndarray,
         w_lat: np.ndarray) -> Replay:
    """The replay proper: segments between syncs, each vectorized (see _stream_ends)."""
    n = tl.p_ts.size
    h = np.empty(n, dtype=np.float64)
    w_end = np.zeros(tl.w_event.size, dtype=np.float64)
    stream_end = tl.stream_busy_until.astype(np.float64).copy()
    order = np.flatnonzero(w_keep)  # work by launching point, kept only, in the order it ran
    order = order[np.lexsort((tl.w_start[order], tl.w_point[order]))]
    w_first = np.searchsorted(tl.w_point[order], np.arange(n + 1))
    cuts = np.concatenate((np.flatnonzero(sync), [n]))
    t = float(tl.p_ts[0])
    lo = 0
    waited = 0.0
    for cut in cuts:
        hi = int(cut) + 1 if cut < n else n
        seg = slice(lo, hi)
        h[seg] = t + np.concatenate(([0.0], np.cumsum(advance[lo:hi - 1])))
        works = order[w_first[lo]:w_first[hi]]
        if works.size:
            _stream_ends(tl, works, h, w_dur, w_end, stream_end, w_lat)
        if cut < n:
            p = int(cut)
            wait = _awaited(tl, p, stream_end)
            waited += max(0.0, wait - h[p])
            done = max(h[p], wait) + tl.p_cost[p]
            t = done + advance[p]
        lo = hi
    out = _steps(tl, h, w_end, w_keep)
    return Replay(out.start, out.ends, waited, _stream_busy(tl, w_keep, w_dur))


def _stream_busy(tl: Timeline, w_keep: np.ndarray, w_dur: np.ndarray) -> dict[int, float]:
    """Per stream: the replayed work the steps ran on it (ns), streams with none left out."""
    mine = w_keep & (tl.w_step >= 0)
    busy = np.bincount(tl.w_stream[mine], weights=w_dur[mine], minlength=tl.streams) if mine.any() else np.zeros(0)
    return {s: float(b) for s, b in enumerate(busy) if b > 0}


def _awaited(tl: Timeline, p: int, stream_end: np.ndarray) -> float:
    if tl.p_wait_all[p]:
        return float(stream_end.max()) if stream_end.size else -np.inf
    s = int(tl.p_wait_stream[p])
    return float(stream_end[s]) if s >= 0 else -np.inf


def _stream_ends(tl: Timeline, works: np.ndarray, h: np.ndarray, w_dur: np.ndarray, w_end: np.ndarray,
                 stream_end: np.ndarray, w_lat: np.ndarray) -> None:
    """Per stream, in launch order: end_i = max(ready_i + d_i, end_{i-1} + gap_i + d_i), solved in closed
    form, end_i = C_i + max(carry, cummax_j(ready_j + d_j - C_j)) with C the running sum of gap + d."""
    ready = h[tl.w_point[works]] + w_lat[works]
    streams = tl.w_stream[works]
    for s in np.unique(streams):
        mine = works[streams == s]
        r = ready[streams == s]
        d = w_dur[mine]
        c = np.cumsum(tl.w_gap[mine] + d)
        best = np.maximum.accumulate(r + d - c)
        end = c + np.maximum(best, stream_end[s])
        w_end[mine] = end
        stream_end[s] = end[-1]


def _steps(tl: Timeline, h: np.ndarray, w_end: np.ndarray, w_keep: np.ndarray) -> Replay:
    marks = h[tl.marker_points]
    ends = marks[1:].copy()
    mine = w_keep & (tl.w_step >= 0)
    if mine.any():
        np.maximum.at(ends, tl.w_step[mine], w_end[mine])
    return Replay(int(marks[0]), np.maximum.accumulate(ends).astype(np.int64))


@per_facts
def timeline(facts: Facts) -> Timeline | None:
    """The facts' timeline (a CPU-only trace's is its host alone); None for a trace with no host events."""
    if not (facts.is_host.any() or facts.has_gpu):
        return None
    return _build(facts)


def _build(facts: Facts) -> Timeline:
    trace = facts.trace
    lo, hi = _span(facts)
    work = np.flatnonzero(facts.is_device_work & facts.is_complete)
    # the steps' work: what ran inside them, and what they launched that ran after the last one's host end
    if facts.steps:
        work = work[((trace.ts[work] >= lo) & (trace.ts[work] < hi)) | (facts.event_step[work] >= 0)]
    work = work[np.argsort(trace.ts[work], kind="stable")]
    launchers = facts.launcher[work]
    calls = np.flatnonzero(facts.is_launch & facts.is_complete)
    calls = calls[(trace.ts[calls] >= lo) & (trace.ts[calls] < hi)]
    names = trace.name_array
    # the sync calls, by their interned names (one regex a name, not one an event: a 1 GB trace has millions)
    sync_name = np.array([bool(SYNC_CALL.match(str(n))) for n in names], dtype=bool)
    calls = calls[sync_name[trace.name[calls]] | np.isin(calls, launchers)]
    marker_ts = _markers(facts, lo, hi)
    p_event = np.concatenate((calls, np.full(marker_ts.size, -1)))
    p_ts = np.concatenate((trace.ts[calls], marker_ts)).astype(np.int64)
    p_end = np.concatenate((trace.ts[calls] + trace.dur[calls], marker_ts)).astype(np.int64)
    order = np.lexsort((p_event < 0, p_ts))  # a marker after a call at the same instant
    p_event, p_ts, p_end = p_event[order], p_ts[order], p_end[order]
    markers = np.flatnonzero(p_event < 0)
    stream_of = _dense_streams(facts, work)
    tl = _with_work(facts, work, launchers, stream_of, p_event, p_ts)
    p_sync, wait_all, wait_stream, cost = _waits(facts, tl, p_event, p_ts, p_end, sync_name)
    streams = int(stream_of.max()) + 1 if stream_of.size else 0
    return Timeline(facts, p_event, p_ts, p_end, p_sync, wait_all, wait_stream, cost, *tl, streams,
                    _busy_before(facts, work, stream_of, lo, streams), markers)


def _busy_before(facts: Facts, work: np.ndarray, stream_of: np.ndarray, lo: int, streams: int) -> np.ndarray:
    """Per stream: when the work that started before the first step ends (work of the step before the window
    that the first kernels queue behind: elementwise_chain's first kernel starts 68 µs after its launch)."""
    trace = facts.trace
    out = np.full(max(streams, 1), -np.inf)
    if not facts.steps or not work.size:
        return out
    keys = trace.pid[work].astype(np.int64) * (1 << 32) + trace.tid[work].astype(np.int64)
    known = np.unique(keys)
    early = np.flatnonzero(facts.is_device_work & facts.is_complete & (trace.ts < lo))
    early_keys = trace.pid[early].astype(np.int64) * (1 << 32) + trace.tid[early].astype(np.int64)
    pos = np.searchsorted(known, early_keys)
    ok = (pos < known.size) & (known[np.clip(pos, 0, known.size - 1)] == early_keys)
    np.maximum.at(out, pos[ok], (trace.ts[early] + trace.dur[early])[ok].astype(np.float64))
    return out


def _span(facts: Facts) -> tuple[int, int]:
    if facts.steps:
        return facts.steps[0].start, facts.steps[-1].end
    lo, hi = facts.window
    return int(lo), int(hi) + 1


def _markers(facts: Facts, lo: int, hi: int) -> np.ndarray:
    """Each step's host start, then the last step's host end (the window's bounds without steps)."""
    if not facts.steps:
        return np.array([lo, hi], np.int64)
    return np.array([s.start for s in facts.steps] + [facts.steps[-1].end], np.int64)


def _dense_streams(facts: Facts, work: np.ndarray) -> np.ndarray:
    trace = facts.trace
    keys = trace.pid[work].astype(np.int64) * (1 << 32) + trace.tid[work].astype(np.int64)
    return np.unique(keys, return_inverse=True)[1].astype(np.int64).reshape(-1) if work.size else \
        np.zeros(0, np.int64)


# Timeline's work columns, w_event to w_step, in its order
_WorkColumns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                     np.ndarray]


def _with_work(facts: Facts, work: np.ndarray, launchers: np.ndarray, stream_of: np.ndarray,
               p_event: np.ndarray, p_ts: np.ndarray) -> _WorkColumns:
    trace = facts.trace
    sorted_events = np.argsort(p_event, kind="stable")
    pos = np.searchsorted(p_event[sorted_events], launchers)
    pos = np.clip(pos, 0, max(p_event.size - 1, 0))
    found = (launchers >= 0) & (p_event[sorted_events[pos]] == launchers) if p_event.size else np.zeros(0, bool)
    start = trace.ts[work].astype(np.int64)
    dur = trace.dur[work].astype(np.int64)
    # work launched outside the model (before the window, by a thread it does not follow) is ready when it
    # started, counted from the point before it, so the streams still carry it
    before = np.clip(np.searchsorted(p_ts, start, side="right") - 1, 0, max(p_ts.size - 1, 0))
    w_point = np.where(found, sorted_events[pos], before).astype(np.int64)
    w_point = np.where(found, w_point, np.minimum(w_point, _next_owned(stream_of, start, w_point, found)))
    gap, queued, prev_gap = _queue_gaps(stream_of, start, dur)
    latency = (start - p_ts[w_point]).astype(np.float64) if p_ts.size else np.zeros(work.size)
    # work that started long after its launch, a little after the work before it on its stream, ran behind
    # that work all the same (a gap of some µs after it): queued, its gap kept (savings/h100/elementwise_rmsnorm's
    # GEMMs 12-20 ms after their launches, 5-10 µs after the kernel before them, had pinned the replayed steps)
    late = found & ~queued & (latency > MAX_LAUNCH_LATENCY_NS) & (prev_gap >= 0) & (prev_gap <= MAX_LAUNCH_LATENCY_NS)
    gap = np.where(late, prev_gap, gap)
    queued = queued | late
    free = ~queued & found
    # the typical launch latency, from work that started as soon as it could: a latency past
    # MAX_LAUNCH_LATENCY_NS waited for something else (work before the window, another stream); with none
    # left, DEFAULT_LAUNCH_LATENCY_NS (savings/h100/elementwise_rmsnorm: its 4 free kernels had started 9-20 ms
    # after their launches behind the window's first GEMMs, and every queued kernel was pinned to its start)
    plausible = free & (latency <= MAX_LAUNCH_LATENCY_NS)
    typical = float(np.median(latency[plausible])) if plausible.any() else DEFAULT_LAUNCH_LATENCY_NS
    latency = np.where(queued & found, np.minimum(latency, typical), latency)
    # without steps the window is the one step: its end is the GPU's as well as the host's (a sync at the
    # end that waits for the last kernels saves nothing once taken out: tl_mi210_gpu_only's 1.3 ms
    # hipDeviceSynchronize was a 22% saving, the GPU's tail left out of the replayed window)
    step = facts.event_step[work].astype(np.int64) if facts.steps else np.zeros(work.size, np.int64)
    order = np.argsort(work, kind="stable")  # by event index, for lookups by index
    return (work[order], w_point[order], found[order], stream_of[order], start[order], dur[order], latency[order],
            gap[order], step[order])


def _next_owned(stream_of: np.ndarray, start: np.ndarray, point: np.ndarray, owned: np.ndarray) -> np.ndarray:
    """Per work: the point of the next work its stream runs that the model launches (a large number where none
    does). Work launched before the window (attn_manual: kernels of the unrecorded step before it, still running
    10 ms into the first step) sits ahead of it in the stream's queue."""
    big = np.int64(1) << 40
    order = np.lexsort((start, stream_of))
    key = stream_of[order] * big + np.where(owned[order], point[order], big - 1)
    nxt = np.minimum.accumulate(key[::-1])[::-1]
    out = np.empty(start.size, dtype=np.int64)
    out[order] = nxt - stream_of[order] * big
    return out


def _queue_gaps(stream_of: np.ndarray, start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per work (in start order): the gap after the previous work on its stream, and whether it was queued
    behind it (started within QUEUED_GAP_NS of its end). Work not queued keeps no gap: its start is its
    launch's."""
    gap = np.zeros(start.size, dtype=np.float64)
    queued = np.zeros(start.size, dtype=bool)
    prev_gap = np.full(start.size, -1.0)  # the gap after the previous work on its stream (-1: first on it)
    order = np.lexsort((start, stream_of))
    same = np.concatenate(([False], stream_of[order][1:] == stream_of[order][:-1]))
    prev_end = np.concatenate(([0], (start + dur)[order][:-1]))
    g = start[order] - prev_end
    q = same & (g <= QUEUED_GAP_NS)
    gap[order] = np.where(q, np.maximum(g, 0), 0)
    queued[order] = q
    prev_gap[order] = np.where(same, np.maximum(g, 0), -1.0)
    return gap, queued, prev_gap


def _waits(facts: Facts, tl: tuple[np.ndarray, ...], p_event: np.ndarray, p_ts: np.ndarray, p_end: np.ndarray,
           sync_name: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per point: whether it waits, for every stream or for one, and its own time beyond the wait."""
    w_event, w_point, w_owned, w_stream, w_start, w_dur = tl[:6]
    w_end = w_start + w_dur
    n = p_event.size
    sync = np.zeros(n, bool)
    wait_all = np.zeros(n, bool)
    wait_stream = np.full(n, -1, np.int64)
    waited_until = np.full(n, -np.inf)
    trace = facts.trace
    # a call whose own work ends inside it blocks on that work (a pageable or synchronous copy)
    own = w_owned & (w_end <= p_end[w_point]) & (w_end > p_ts[w_point])
    for w in np.flatnonzero(own):
        p = int(w_point[w])
        sync[p], wait_stream[p] = True, int(w_stream[w])
        waited_until[p] = max(waited_until[p], float(w_end[w]))
    # work launched outside the model was queued before the point it runs after (no launch record: a
    # sync that starts before it runs waits for it; tl_h100_qwen05's step-start cudaDeviceSynchronize
    # waits 14.1 ms for 430 kernels launched before the window, counted before as its own time as well
    # as its wait: the replayed step 28% long, and the sync 'saving' 25%)
    launched_at = np.where(w_owned, p_ts[w_point], np.minimum(w_start, p_ts[w_point] - 1)) if p_ts.size else w_start
    by_launch = np.argsort(launched_at, kind="stable")
    launch_ts = launched_at[by_launch]
    events = p_event >= 0
    candidates = np.flatnonzero(events)[sync_name[trace.name[p_event[events]]]] if events.any() else np.empty(0, int)
    for p in candidates.tolist():
        name = trace.event_name(int(p_event[p]))
        sync[p] = True
        before = by_launch[:np.searchsorted(launch_ts, p_ts[p], side="left")]
        _wait_target(p, before, w_stream, w_end, p_ts, p_end, bool(DEVICE_SYNC_CALL.match(name)),
                     wait_all, wait_stream, waited_until)
    cost = (p_end - np.maximum(p_ts, waited_until)).astype(np.float64)
    return sync, wait_all, wait_stream, np.clip(cost, 0, None)


def _wait_target(p: int, before: np.ndarray, w_stream: np.ndarray, w_end: np.ndarray, p_ts: np.ndarray,
                 p_end: np.ndarray, device: bool, wait_all: np.ndarray, wait_stream: np.ndarray,
                 waited_until: np.ndarray) -> None:
    """What a sync call waited for: the streams whose work launched before it ended inside it."""
    if before.size == 0:
        wait_all[p] = device
        return
    recent = before[-4096:]  # the queue a sync can wait on is bounded (the launch queue holds ~1024)
    inside = recent[(w_end[recent] > p_ts[p]) & (w_end[recent] <= p_end[p] + WAIT_SLACK_NS)]
    if device or np.unique(w_stream[inside]).size > 1:
        wait_all[p] = True
    target = inside if inside.size else recent[-1:]
    wait_stream[p] = int(w_stream[target[np.argmax(w_end[target])]])
    if inside.size:
        waited_until[p] = float(min(w_end[inside].max(), p_end[p]))
