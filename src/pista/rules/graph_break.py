"""The graph-break rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
graph-break`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/graph_break.ftl."""

from __future__ import annotations

from collections import Counter

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.rules import _one_time as one_time
from pista.rules._breaks import Breaks, graph_breaks
from pista.rules._common import COMPILED_REGION, PROFILER_HOST_INFLATION, evidence, us
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals

ID = "graph-break"
# what runs between the graphs, by the cause it points at
BRANCH_OPS = frozenset({"aten::is_nonzero"})  # bool(tensor): a Python if/while on a tensor
READ_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::tolist"})  # a value read in Python
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
EVIDENCE_BREAKS = 2  # breaks shown, with their compiled call; presentation

BRANCH, READ, PYTHON = "branch", "read", "python"


class GraphBreak(Record):
    frame: int  # the broken function's Dynamo frame (its top-level region's)
    calls: int  # its calls in the steps that ran as several graphs
    steps: int
    graphs_per_call: float
    causes: tuple[str, ...]  # BRANCH, READ, PYTHON: what ran between the graphs, most breaks first
    ops_between: tuple[str, ...]  # the aten ops between the graphs, most common first
    gap_us_per_step: float  # host time between the graphs (as profiled)
    idle_us_per_step: float | None  # of it, the GPU idle (None without a GPU)
    host_inflation: float  # what the CPU-only impact divides the host time by


class CallNote(Record):
    """Note on a broken compiled call."""

    graphs: int


class GapNote(Record):
    """Note on the code between two graphs."""

    gap_us: float
    ops: tuple[str, ...]


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = graph_breaks(facts)
    if found is None:
        return []
    # the GPU idle in the gaps; without a GPU, the host's time in them, less the profiler's share of it
    idle = one_time.idle_ns(facts, found.gaps) if facts.has_gpu else None
    saved = found.gaps.total / PROFILER_HOST_INFLATION if idle is None else idle
    impact = ctx.per_step(saved)
    if impact.share < MIN_STEP_SHARE:
        return []
    trace = facts.trace
    per_gap = _ops_in(facts, found.gaps)
    ops = Counter(name for names in per_gap for name in names)
    causes = Counter(_cause(names) for names in per_gap)
    steps = ctx.step_count
    record = GraphBreak(
        frame=int(COMPILED_REGION.match(trace.event_name(int(found.calls[0]))).group(1)),  # type: ignore[union-attr]
        calls=int(found.calls.size), steps=steps,
        graphs_per_call=sum(g.size for g in found.graphs) / found.calls.size,
        causes=tuple(c for c, _ in causes.most_common()), ops_between=tuple(n for n, _ in ops.most_common()),
        gap_us_per_step=us(found.gaps.total) / steps,
        idle_us_per_step=None if idle is None else us(idle) / steps,
        host_inflation=PROFILER_HOST_INFLATION)
    return [Finding(ID, record, impact, _evidence(facts, found, per_gap), edit=_one_graph(facts, found))]


def _evidence(facts: Facts, found: Breaks, per_gap: list[list[str]]) -> list[Evidence]:
    """The compiled region's first call, then the first op after each of the first gaps, with the ops in it."""
    ev = [evidence(facts, int(found.calls[0]), CallNote(int(found.graphs[0].size)))]
    for k in range(min(EVIDENCE_BREAKS, found.gaps.start.size)):
        gap_ns = int(found.gaps.end[k] - found.gaps.start[k])
        ev.append(evidence(facts, found.first_after[k], GapNote(us(gap_ns), tuple(dict.fromkeys(per_gap[k])))))
    return ev


def _one_graph(facts: Facts, found: Breaks) -> Edit:
    """What one graph does: the host's work between the graphs goes, with the reads and launches in it, and
    so does each extra graph call's own wrapper time (its launches stay, made from the one graph's call)."""
    trace = facts.trace
    extra = np.concatenate([gs[1:] for gs in found.graphs]).astype(np.int64)
    wrappers = merge_intervals(trace.ts[extra], trace.ts[extra] + trace.dur[extra])
    launches = np.flatnonzero(facts.is_launch & facts.is_complete)
    launches = launches[wrappers.covered(trace.ts[launches], trace.ts[launches] + 1) > 0]
    own = wrappers.subtract(merge_intervals(trace.ts[launches], trace.ts[launches] + trace.dur[launches]))
    return Edit("one graph", host_scale_spans=((found.gaps, 0.0), (own, 0.0)))


def _ops_in(facts: Facts, gaps: Intervals) -> list[list[str]]:
    """Per gap, the aten ops that start in it, in time order."""
    trace = facts.trace
    ops = np.flatnonzero(facts.is_host & trace.category_mask({"cpu_op"}))
    ops = ops[np.argsort(trace.ts[ops], kind="stable")]
    lo, hi = np.searchsorted(trace.ts[ops], gaps.start), np.searchsorted(trace.ts[ops], gaps.end)
    names = [[trace.event_name(i) for i in ops[a:b].tolist()] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    return [[n for n in gap if n.startswith("aten::")] for gap in names]


def _cause(names: list[str]) -> str:
    if BRANCH_OPS & set(names):
        return BRANCH
    return READ if READ_OPS & set(names) else PYTHON

