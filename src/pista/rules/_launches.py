"""Tiny kernels launched one by one: the kernels of a step that run shorter than their launch, and the
per-op GPU idle just before them; and the CUDA graphs the steps already replay: not a rule.

launch-bound reports the tiny kernels; many-calls and overhead-bound take only the per-op idle left after
them. A kernel a graph launch replays (cudaGraphLaunch, hipGraphLaunch) is not launched one by one: it is
none of them, and a program that replays graphs is not told to capture one (issue 35).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.query import name_mask
from pista.rules._claims import specific_claims
from pista.rules._common import kernels
from pista.rules._idle import intersect, ledger, subtract, union
from pista.trace.facts import Facts, Intervals, per_facts

# the thresholds below are launch-bound's (`pista explain launch-bound`, [tool.pista.rules.launch-bound])
THRESHOLDS_OF = "launch-bound"

# At least this many kernels per step: gpu/launch_bound has 200; seed_mm64_* have 1-2 (a few big
# launches are overhead-bound's business, not launch-bound's).
MIN_KERNELS_PER_STEP = 50
# Median kernel duration (µs) at or below which kernels count as tiny: gpu/launch_bound 0.93 µs;
# series_mlp_compile 6.1 µs, series_mlp_eager 7.0 µs, big_gpt_eager_20steps 17.8 µs have real work.
MAX_MEDIAN_KERNEL_US = 5.0
# Median launch call / median kernel at or above which launching costs more than running:
# gpu/launch_bound 7.0x.
MIN_LAUNCH_TO_KERNEL = 1.0


# The runtime and driver calls that replay a captured graph: one call, all of its kernels.
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})


@dataclass(frozen=True)
class GraphReplays:
    """The CUDA (HIP) graphs the steps (the window without steps) replay."""

    per_step: float  # graph launches per step
    kernel_share: float  # of the steps' kernels, those a graph launch replays

    @property
    def graphed(self) -> str:
        """"" (no graph), "partly" (some of the kernels) or "mostly" (half of them or more)."""
        if self.per_step <= 0:
            return ""
        return "mostly" if self.kernel_share >= MOSTLY_GRAPHED else "partly"


# Half of the steps' kernels or more replayed by graphs: the step is graphed, and what is left of its idle is
# the host's work around the replays (sglang/vLLM decoding: one graph launch per step for 421-544 kernels,
# AMD-AGI/TraceLens' tl_vllm_graph_exec and tl_sglang_decode); under it, graphs hold part of the step
# (HolisticTraceAnalysis' hta_negq_rank0: 14 graph launches per step for 27 of its 1216 kernels).
MOSTLY_GRAPHED = 0.5


@per_facts
def graph_replays(facts: Facts) -> GraphReplays:
    graph = facts.is_host & name_mask(facts, GRAPH_LAUNCHES)
    k = kernels(facts)
    if facts.steps:
        graph &= facts.event_step >= 0
        k &= facts.event_step >= 0
    launches = int(graph.sum())
    if launches == 0:
        return GraphReplays(0.0, 0.0)
    idx = np.flatnonzero(k)
    by_graph = facts.launcher[idx]
    replayed = int(graph[by_graph[by_graph >= 0]].sum())
    return GraphReplays(launches / (len(facts.steps) or 1), replayed / max(idx.size, 1))


@dataclass(eq=False)
class TinyKernels:
    idx: np.ndarray  # the kernels in the steps
    tiny: np.ndarray  # the tiny ones
    claim: Intervals  # the per-op idle just before them


def launch_bound_idle(facts: Facts) -> Intervals:
    """The idle launch-bound claims (empty where it does not fire): many-calls and overhead-bound
    leave it out."""
    found = tiny_kernels(facts)
    return found.claim if found is not None else union(np.empty(0), np.empty(0))


@per_facts
def tiny_kernels(facts: Facts) -> TinyKernels | None:
    """The steps' kernels where most are tiny and launching them costs more than running them, with the
    per-op idle just before the tiny ones (None where they are not)."""
    book = ledger(facts)
    if book is None:
        return None
    trace = facts.trace
    k = kernels(facts)
    if facts.steps:
        k &= facts.event_step >= 0
    idx = np.flatnonzero(k)
    # a kernel a graph launch replays is not launched one by one
    graph = name_mask(facts, GRAPH_LAUNCHES)
    by = facts.launcher[idx]
    idx = idx[~((by >= 0) & graph[np.maximum(by, 0)])]
    if idx.size / (len(facts.steps) or 1) < MIN_KERNELS_PER_STEP:
        return None
    launchers = facts.launcher[idx]
    if not (launchers >= 0).any():
        return None
    kernel_med = float(np.median(trace.dur[idx]))
    launch_med = float(np.median(trace.dur[launchers[launchers >= 0]]))
    if kernel_med > MAX_MEDIAN_KERNEL_US * 1000 or launch_med < MIN_LAUNCH_TO_KERNEL * kernel_med:
        return None
    tiny = idx[(trace.dur[idx] <= MAX_MEDIAN_KERNEL_US * 1000) & (facts.launcher[idx] >= 0)]
    tiny = tiny[np.argsort(trace.ts[tiny], kind="stable")]
    free = subtract(book.per_op, specific_claims(facts))
    claim = intersect(free, waits_before(facts, book.device, tiny))
    return TinyKernels(idx, tiny, claim)


def waits_before(facts: Facts, device: int, work: np.ndarray) -> Intervals:
    """The GPU idle just before each of the given device work items, where one starts on an idle
    device: from the end of the device's previous work to its start (it waited for this launch)."""
    busy = facts.gpu_busy[device]
    start = facts.trace.ts[work]
    j = np.searchsorted(busy.start, start)
    opens = (j < busy.start.size) & (j > 0)
    opens &= busy.start[np.minimum(j, busy.start.size - 1)] == start
    j = j[opens]
    return union(busy.end[j - 1], busy.start[j])


def mean_step_us(facts: Facts) -> float:
    """The mean step (the window without steps), µs: what a per-step mean (a window's total over its steps) is a
    share of. Set against the median step, a part could exceed its whole where one step is long (issue 35:
    "30.3 ms of the 22.3 ms median step"; seed_mm64_cold: 46.1 ms of idle per step in a 368 µs median step)."""
    if facts.steps:
        return float(np.mean([s.dur for s in facts.steps])) / 1000.0
    lo, hi = facts.window
    return float(hi - lo) / 1000.0
