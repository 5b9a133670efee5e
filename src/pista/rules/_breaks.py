"""Graph breaks: compiled calls that Dynamo broke into several graphs, and the host spans between
those graphs: not a rule.

graph-break reports them; host-sync leaves the syncs between the graphs to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pista.query import nearest_ancestor, pattern_mask
from pista.rules._common import COMPILED_REGION, GRAPH_CALL
from pista.rules._one_time import EMPTY
from pista.trace.facts import Facts, Intervals, per_facts

AOT_FORWARD = re.compile(r"^CompiledFunction$")


@dataclass(eq=False)
class Breaks:
    calls: np.ndarray  # the top-level region calls that break, in time order
    graphs: list[np.ndarray]  # each call's graph calls, in time order
    gaps: Intervals  # host spans between consecutive graphs of a call
    first_after: list[int]  # per gap: the graph call after it (its evidence)


def gaps(facts: Facts) -> Intervals:
    """The host spans between the graphs of broken compiled calls (empty where nothing breaks):
    host-sync leaves the syncs in them to graph-break."""
    found = graph_breaks(facts)
    return found.gaps if found is not None else EMPTY


@per_facts
def graph_breaks(facts: Facts) -> Breaks | None:
    """The compiled calls that hold another frame's region (a resume function) and two graphs or more."""
    trace = facts.trace
    region = facts.is_host & pattern_mask(facts, COMPILED_REGION)
    if facts.steps:
        region &= facts.event_step >= 0
    outer = nearest_ancestor(facts, region, inclusive=False)
    nested = np.flatnonzero(region & (outer >= 0))
    if nested.size == 0:
        return None
    top = _top_of(outer, np.flatnonzero(region))
    graph_calls = np.flatnonzero(facts.is_host & pattern_mask(facts, GRAPH_CALL))
    if graph_calls.size == 0:
        # torch versions that record no `## Call CompiledFxGraph`: a training graph's forward is AOTAutograd's
        # `CompiledFunction` (review 4's rtx4090d_graph_breaks: 4 regions a call, 0/0 holding 1/0-3/0, unnamed)
        graph_calls = np.flatnonzero(facts.is_host & pattern_mask(facts, AOT_FORWARD))
    owner = nearest_ancestor(facts, region)[graph_calls]  # the region each graph call runs in
    keep = owner >= 0
    graph_calls, owner = graph_calls[keep], owner[keep]
    by_call: dict[int, list[int]] = {}
    for g, r in zip(graph_calls.tolist(), owner.tolist(), strict=True):
        by_call.setdefault(top[r], []).append(g)
    broken = sorted((c for c, gs in by_call.items() if len(gs) >= 2), key=lambda c: int(trace.ts[c]))
    if not broken:
        return None
    graphs = [np.array(sorted(by_call[c], key=lambda g: int(trace.ts[g])), dtype=np.int64) for c in broken]
    starts, ends, after = [], [], []
    for gs in graphs:
        for a, b in zip(gs[:-1].tolist(), gs[1:].tolist(), strict=True):
            starts.append(int(trace.ts[a] + trace.dur[a]))
            ends.append(int(trace.ts[b]))
            after.append(b)
    order = np.argsort(np.asarray(starts, dtype=np.int64), kind="stable")
    s, e = np.asarray(starts, dtype=np.int64)[order], np.asarray(ends, dtype=np.int64)[order]
    keep_gap = e > s
    return Breaks(np.array(broken, dtype=np.int64), graphs, Intervals(s[keep_gap], e[keep_gap]),
                  [after[k] for k in order[keep_gap].tolist()])


def _top_of(outer: np.ndarray, regions: np.ndarray) -> dict[int, int]:
    """Each region call's outermost region (itself where none holds it)."""
    top: dict[int, int] = {}
    for r in regions.tolist():
        j = r
        while outer[j] >= 0:
            j = int(outer[j])
        top[r] = j
    return top
