"""What a rule's `check` receives: a `Context` (the facts, the rebuilt table, the `Summary` of the window) and
`Steps`, what impacts are shared out by (the steps in the window and the median step's time). Below the rules
and the analysis that runs them (pista.analysis builds the Summary and the Context, then runs the catalogue)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from pista.finding import Impact
from pista.trace.facts import Facts, merge_intervals, per_facts

if TYPE_CHECKING:
    from pista.table import Table
    from pista.trace.model import Trace


@dataclass
class Summary:
    self_cpu_total_us: float
    self_device_total_us: float
    verdict: str  # overhead-bound | compute-bound | balanced | input-bound | cpu-only (pista.policy)
    window_us: float
    gpu_busy_us: float
    gpu_busy_share: float | None
    kernel_busy_share: float | None  # kernels only: copies and memsets are not compute
    steps: int
    step_numbers: list[int]
    devices: list[str]
    events: int
    # µs of device work per step for each purpose (pista.purpose.PURPOSES), 0 where none ran
    gpu_time_by_purpose: dict[str, float] = field(default_factory=dict)
    # per host thread: µs of self time per step in forward, backward, optimizer, data, other, and
    # waiting (blocked in syncs, or asleep while the autograd thread works): pista.hosttime
    host_time_by_region: dict[str, dict[str, float]] = field(default_factory=dict)
    # profile_memory=True traces: per device, peak_allocated_bytes and peak_reserved_bytes
    memory: list[dict[str, Any]] = field(default_factory=list)
    # the median step's wall time (at least its GPU busy time), or the window's without steps: what
    # impact shares are of, and what `pista check --baseline` compares
    step_us: float = 0.0
    # the engine's replay of the steps (pista.timeline): its error against the trace unchanged, the mean
    # step as replayed, and as predicted without the profiler; None without device work to replay
    replay_error: float | None = None
    replayed_step_us: float | None = None
    unprofiled_step_us: float | None = None
    # the host's time dominates the device's (pista.policy.verdict_of said overhead-bound), whether or not the
    # printed verdict says input-bound: per-op overhead is still there to find once the input is fixed
    host_bound: bool = False
    # the share of the median step the host spends in data regions (pista.hosttime's "data", the busiest thread)
    input_share: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(eq=False)
class Context:
    """What a rule's `check` receives."""

    facts: Facts
    table: Table
    summary: Summary

    @property
    def trace(self) -> Trace:
        return self.facts.trace

    @property
    def step_count(self) -> int:
        """Steps the window holds (1 without steps: the window is the unit)."""
        return steps_of(self.facts).count

    @property
    def step_ns(self) -> float:
        return self.summary.step_us * 1000.0

    def per_step(self, total_ns: float) -> Impact:
        """The impact of saving total_ns over the whole window: per step, and its share of the step."""
        return steps_of(self.facts).per_step(total_ns)

    def step_impact(self, per_step_ns: float) -> Impact:
        """The impact of saving per_step_ns in every step."""
        return steps_of(self.facts).step_impact(per_step_ns)

    def once(self, total_ns: float) -> Impact:
        """The impact of a one-time cost of total_ns inside the window."""
        return steps_of(self.facts).once(total_ns)

    @property
    def busy_share(self) -> float:
        """The window's GPU busy share: GPU time saved shortens a step only where the GPU is the
        limit, and a host-bound step hides most of it (gpu/gpt2_conv1d, the layout twins)."""
        return steps_of(self.facts).busy


@dataclass(frozen=True)
class Steps:
    """What impacts are shared out by: the steps in the window (1 without steps) and the median
    step's ns (step_ns). A rule whose idle overhead-bound leaves out (`claimed_idle(facts)`) decides
    whether it fires from these, without a Context."""

    count: int
    ns: float
    busy: float  # the window's GPU busy share (1 without a GPU): see Context.busy_share
    window_ns: float = 1.0  # the window's wall time: what a one-time cost's share is of

    def per_step(self, total_ns: float) -> Impact:
        """The impact of saving total_ns over the whole window: per step, and its share of the step."""
        us = max(float(total_ns), 0.0) / self.count / 1000.0
        return Impact(us, min(1.0, us * 1000.0 / max(self.ns, 1.0)))

    def step_impact(self, per_step_ns: float) -> Impact:
        """The impact of saving per_step_ns in every step."""
        return self.per_step(per_step_ns * self.count)

    def once(self, total_ns: float) -> Impact:
        """The impact of a one-time cost of total_ns: all of it, and its share of the window."""
        ns = max(float(total_ns), 0.0)
        return Impact(ns / 1000.0, min(1.0, ns / max(self.window_ns, 1.0)), once=True)


@per_facts
def steps_of(facts: Facts) -> Steps:
    lo, hi = facts.window
    busy = window_busy_ns(facts) / max(hi - lo, 1)
    return Steps(len(facts.steps) or 1, step_ns(facts), busy if facts.has_gpu and busy > 0 else 1.0,
                 float(max(hi - lo, 1)))


def window_busy_ns(facts: Facts) -> int:
    """The busiest device's busy ns inside the window."""
    lo, hi = facts.window
    return max((b.clip(lo, hi).total for b in facts.gpu_busy.values()), default=0)


def step_ns(facts: Facts) -> float:
    """The median step's wall time in ns (the window's without steps): what shares are of. On a
    GPU-bound trace the host's ProfilerStep spans end before their GPU work does (seed_mm4096_warm:
    160 µs host steps for 213 µs of GPU work each), so a step lasts at least its GPU busy time."""
    lo, hi = facts.window
    if not facts.steps:
        return float(max(hi - lo, 1))
    # per step: its host span or the busy time of the device work it launched, whichever is longer;
    # then the median, so one cold step does not lengthen the others (seed_mm64_cold)
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.event_step >= 0))
    work = work[np.argsort(facts.event_step[work], kind="stable")]
    bounds = np.searchsorted(facts.event_step[work], np.arange(len(facts.steps) + 1))
    lengths = []
    for k, s in enumerate(facts.steps):
        mine = work[bounds[k]:bounds[k + 1]]
        busy = merge_intervals(trace.ts[mine], trace.ts[mine] + trace.dur[mine]).total if mine.size else 0
        lengths.append(max(s.dur, busy))
    return float(np.median(lengths))
