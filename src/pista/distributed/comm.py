"""Communication in one rank's trace: which events are collectives, how long they ran, and how much
of that time nothing else ran beside them (exposed communication).

Two kinds of events are told apart:

- communication *work*, the time the collective itself takes: NCCL kernels on a GPU stream
  (`ncclKernel_*`, `ncclDevKernel_*`), and on CPU backends the `gloo:*` regions that gloo's worker
  threads (`pt_gloo_runloop`) record while they move the data;
- collective *calls* on the host that only issue the work: `c10d::allreduce_`, `record_param_comms`,
  `nccl:all_reduce`-style record_function regions. They count collectives; they are not compute.

Compute is whatever else does work at the same place: other kernels/copies on the same GPU, or, for
host communication, the CPU ops of the threads that are not communication threads (collective calls
cut out). Exposed communication is communication work time during which no compute ran:
`|comm ∪ compute| - |compute|`, measured per step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from pista.trace.facts import Facts, Intervals, merge_intervals
from pista.trace.model import lane_key

COMM_KERNEL = re.compile(r"^nccl(Dev)?Kernel_")
HOST_COMM_WORK = re.compile(r"^gloo:")
COLLECTIVE_CALL = re.compile(r"^(c10d::|record_param_comms$|nccl:|gloo:|c10d_functional::|_c10d_functional::)")
HOST_DOMAIN = -1  # "device" key of communication that runs on host threads


@dataclass(frozen=True)
class StepComm:
    """One step's communication, ns."""

    step: int
    start: int
    end: int
    comm: int  # union of communication work
    exposed: int  # part of `comm` with no compute beside it
    collectives: int  # communication work events

    @property
    def dur(self) -> int:
        return self.end - self.start

    @property
    def overlap_share(self) -> float | None:
        return 1.0 - self.exposed / self.comm if self.comm else None

    def to_dict(self) -> dict[str, float | int | None]:
        share = self.overlap_share
        return {"step": self.step, "step_ms": self.dur / 1e6, "comm_ms": self.comm / 1e6,
                "exposed_ms": self.exposed / 1e6, "collectives": self.collectives,
                "overlap_share": share, "exposed_share_of_step": self.exposed / self.dur if self.dur else None}


@dataclass(frozen=True)
class Collective:
    """One communication work event: what the cross-rank matching needs (ns, this trace's clock)."""

    step: int | None
    name: str
    start: int
    end: int


@dataclass
class CommStats:
    domain: str  # "gpu", "host" or "none"
    comm: int = 0
    exposed: int = 0
    collectives: int = 0
    steps: list[StepComm] = field(default_factory=list)
    events: list[Collective] = field(default_factory=list)  # the communication work, by start
    call_events: list[Collective] = field(default_factory=list)  # outermost host calls, by start
    work_index: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # event ids of the work
    work_exposed: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # ns of each with no compute

    @property
    def calls(self) -> int:
        return len(self.call_events)

    @property
    def has_comm(self) -> bool:
        return self.collectives > 0

    @property
    def overlap_share(self) -> float | None:
        return 1.0 - self.exposed / self.comm if self.comm else None

    def to_dict(self) -> dict[str, object]:
        return {"domain": self.domain, "comm_ms": self.comm / 1e6, "exposed_ms": self.exposed / 1e6,
                "overlap_share": self.overlap_share, "collectives": self.collectives,
                "collective_calls": self.calls, "steps": [s.to_dict() for s in self.steps]}


def name_mask(facts: Facts, pattern: re.Pattern[str]) -> np.ndarray:
    """Events whose name matches, via the interned name table (one regex per distinct name)."""
    hits = np.fromiter((bool(pattern.match(n)) for n in facts.trace.names), dtype=bool,
                       count=len(facts.trace.names))
    return hits[facts.trace.name] if hits.size else np.zeros(len(facts.trace), dtype=bool)


def communication(facts: Facts) -> CommStats:
    """Classify the trace's communication and measure its overlap with compute, per step."""
    trace = facts.trace
    device_comm = facts.is_device_work & name_mask(facts, COMM_KERNEL)
    host_comm = facts.is_host & name_mask(facts, HOST_COMM_WORK)
    calls = facts.is_host & name_mask(facts, COLLECTIVE_CALL) & ~host_comm
    work = device_comm | host_comm
    call_events = _collectives(facts, _outermost(facts, calls))
    if not work.any():
        return _steps_only(facts, call_events)

    domains = _domains(facts, device_comm, host_comm, calls)
    stats = CommStats(domain="gpu" if device_comm.any() else "host", call_events=call_events)
    in_steps = _in_steps(facts, work)
    for selector, compute in domains:
        sel = selector & in_steps
        stats.comm, stats.exposed = _add(stats.comm, stats.exposed, _exposed(facts, sel, compute))
    stats.collectives = int(in_steps.sum())
    exposed_each = _exposed_each(facts, domains, in_steps)
    stats.steps = [_step_comm(facts, domains, s) for s in range(len(facts.steps))]
    idx = np.flatnonzero(in_steps)
    stats.work_index = idx[np.argsort(trace.ts[idx], kind="stable")]
    stats.work_exposed = exposed_each[stats.work_index]
    stats.events = _collectives(facts, in_steps)
    return stats


def _steps_only(facts: Facts, call_events: list[Collective]) -> CommStats:
    """A trace with no communication: its steps still count (a rank's pace, for the cross-rank check)."""
    steps = [StepComm(st.number, st.start, st.end, 0, 0, 0) for st in facts.steps]
    return CommStats(domain="none", call_events=call_events, steps=steps)


def _in_steps(facts: Facts, work: np.ndarray) -> np.ndarray:
    """The communication inside the steps; all of it where none is in a step."""
    inside = work & (facts.event_step >= 0)
    return inside if inside.any() else work


def _domains(facts: Facts, device_comm: np.ndarray, host_comm: np.ndarray, calls: np.ndarray
             ) -> list[tuple[np.ndarray, Intervals]]:
    """The places communication runs (each device; the host's comm threads), each with the compute that could
    hide it."""
    trace = facts.trace
    domains: list[tuple[np.ndarray, Intervals]] = []
    for dev in np.unique(trace.pid[device_comm]).tolist():
        on_dev = trace.pid == dev
        compute = facts.is_device_work & on_dev & ~device_comm
        domains.append((device_comm & on_dev, _union(facts, compute)))
    if host_comm.any():
        lane = lane_key(trace.pid, trace.tid)
        comm_threads = np.isin(lane, np.unique(lane[host_comm]))
        ops = facts.is_host & trace.category_mask({"cpu_op"}) & ~comm_threads
        compute = _subtract(_union(facts, ops & ~calls), _union(facts, calls))
        domains.append((host_comm, compute))
    return domains


def _exposed_each(facts: Facts, domains: list[tuple[np.ndarray, Intervals]], in_steps: np.ndarray) -> np.ndarray:
    """Per event, the ns of its communication no compute hides."""
    trace = facts.trace
    exposed_each = np.zeros(len(trace), dtype=np.int64)
    for selector, compute in domains:
        sel = np.flatnonzero(selector & in_steps)
        start, end = trace.ts[sel], trace.ts[sel] + trace.dur[sel]
        exposed_each[sel] = (end - start) - compute.covered(start, end)
    return exposed_each


def _step_comm(facts: Facts, domains: list[tuple[np.ndarray, Intervals]], s: int) -> StepComm:
    """Step s's communication, exposed and in all, and its count."""
    step = facts.steps[s]
    comm = exposed = 0
    count = 0
    for selector, compute in domains:
        sel = selector & (facts.event_step == s)
        count += int(sel.sum())
        comm, exposed = _add(comm, exposed, _exposed(facts, sel, compute))
    return StepComm(step.number, step.start, step.end, comm, exposed, count)


def _collectives(facts: Facts, mask: np.ndarray) -> list[Collective]:
    trace = facts.trace
    idx = np.flatnonzero(mask)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    return [Collective(facts.step_of(i), trace.event_name(i), int(trace.ts[i]), int(trace.ts[i] + trace.dur[i]))
            for i in idx.tolist()]


def _add(comm: int, exposed: int, pair: tuple[int, int]) -> tuple[int, int]:
    return comm + pair[0], exposed + pair[1]


def _union(facts: Facts, mask: np.ndarray) -> Intervals:
    ts = facts.trace.ts[mask]
    return merge_intervals(ts, ts + facts.trace.dur[mask])


def _exposed(facts: Facts, mask: np.ndarray, compute: Intervals) -> tuple[int, int]:
    """(|comm|, |comm| - |comm ∩ compute|) for the communication events under mask."""
    if not mask.any():
        return 0, 0
    comm = _union(facts, mask)
    lo, hi = int(comm.start[0]), int(comm.end[-1])
    near = compute.clip(lo, hi)
    both = merge_intervals(np.concatenate((comm.start, near.start)), np.concatenate((comm.end, near.end)))
    return comm.total, both.total - near.total


def _subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b, both sorted and disjoint."""
    if a.start.size == 0 or b.start.size == 0:
        return a
    lo, hi = int(a.start[0]), int(a.end[-1])
    holes = b.gaps(lo, hi)  # where b is absent
    # a ∩ holes: both are disjoint sorted sets; intersect by sweeping the merged boundaries
    points = np.unique(np.concatenate((a.start, a.end, holes.start, holes.end)))
    mids = (points[:-1] + points[1:]) // 2
    inside_a = _contains(a, mids)
    inside_h = _contains(holes, mids)
    keep = inside_a & inside_h & (points[1:] > points[:-1])
    return merge_intervals(points[:-1][keep], points[1:][keep])


def _contains(iv: Intervals, x: np.ndarray) -> np.ndarray:
    pos = np.searchsorted(iv.start, x, side="right") - 1
    ok = pos >= 0
    out = np.zeros(x.shape, dtype=bool)
    out[ok] = x[ok] < iv.end[pos[ok]]
    return out


def _outermost(facts: Facts, mask: np.ndarray) -> np.ndarray:
    """Events under mask whose parent is not under mask (one count per collective call)."""
    parent = facts.parent
    has_parent = parent >= 0
    nested = np.zeros_like(mask)
    nested[has_parent] = mask[parent[has_parent]]
    return mask & ~nested
