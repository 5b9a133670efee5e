"""The inference-grad-mode rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
inference-grad-mode`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/inference_grad_mode.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record, Severity
from pista.query import name_mask
from pista.rules._common import PROFILER_HOST_INFLATION, evidence, inference_steps, new_shapes, us
from pista.rules._grad_mode import GradNodes, grad_nodes, node_us
from pista.rules._idle import union
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals

ID = "inference-grad-mode"
# launch-bound and many-calls leave this rule's claimed_idle out before they count (inference_mode() is the fix, not a graph)
CLAIMS_FIRST = True
TOP_OPS = 3  # the node-building op names named, most nodes first


class BuildsNodes(Record):
    """One op name's nodes per step."""

    name: str
    per_step: float


class InferenceGradMode(Record):
    steps: int  # the steps that run no backward
    of_steps: int  # all the window's steps
    nodes_per_step: float
    ops_per_step: float  # ops with a Sequence number (those not building a node among them)
    cost_us_per_step: float  # nodes x GRAD_NODE_US x PROFILER_HOST_INFLATION
    idle_us_per_step: float  # the per-op GPU idle in those steps (the cap; 0 without a GPU)
    capped: bool  # the per-op idle, not the nodes' cost, sets the impact
    node_us: float  # GRAD_NODE_US, CPU_GRAD_NODE_US without a GPU
    gpu: bool  # the trace has GPU work (the cost per node measured with CUDA)
    inflation: float  # PROFILER_HOST_INFLATION
    top: tuple[BuildsNodes, ...]
    growing_op: str  # the op whose input grows step after step (a KV cache's aten::cat), "" for none
    malloc_steps: int  # of the inference steps, those that call cudaMalloc (memory grows: a cache keeps the graph)
    has_steps: bool  # ProfilerStep markers: without, a training forward profiled alone looks the same

    @property
    def cache_keeps_graphs(self) -> bool:
        """A cache kept across steps carries every step's graph: an op's input grows step after step and
        most steps call cudaMalloc (gpu/gpt2_flash_grad: aten::cat, 7 of 8)."""
        return bool(self.growing_op) and 2 * self.malloc_steps >= self.steps


class NodeOp(Record):
    """Note on an op that built an autograd node."""

    seq: int


def claimed_idle(facts: Facts) -> Intervals:
    """The part of the steps' per-op idle that the nodes cost (the first part of each interval, the
    same share of each): overhead-bound, launch-bound and many-calls leave it out."""
    found = grad_nodes(facts)
    if found is None or found.idle.total == 0:
        return union(np.empty(0), np.empty(0))
    keep = min(1.0, found.saving_ns / found.idle.total)
    start = found.idle.start
    return union(start, start + ((found.idle.end - start) * keep).astype(np.int64))


def check(ctx: Context) -> list[Finding]:
    found = grad_nodes(ctx.facts)
    if found is None:
        return []
    facts = ctx.facts
    n = found.steps
    ids, counts = _top(facts, found)
    top = tuple(BuildsNodes(facts.trace.names[int(k)], c / found.read_steps) for k, c in zip(ids.tolist(), counts.tolist(),
                                                                                          strict=True))
    record = InferenceGradMode(
        steps=n, of_steps=len(facts.steps) or 1, nodes_per_step=found.nodes / found.read_steps,
        ops_per_step=found.ops.size / found.read_steps, cost_us_per_step=us(found.cost_ns) / n,
        idle_us_per_step=us(found.idle.total) / n if facts.has_gpu else 0.0,
        capped=facts.has_gpu and found.idle.total < found.cost_ns, node_us=node_us(facts), gpu=facts.has_gpu,
        inflation=PROFILER_HOST_INFLATION, top=top, growing_op=new_shapes(facts)["new_shape_op"],
        malloc_steps=_malloc_steps(facts), has_steps=bool(facts.steps))
    ev = [evidence(facts, int(i), NodeOp(int(s))) for i, s in _examples(facts, found, ids)]
    impact = ctx.per_step(found.saving_ns)
    # inference_mode(): each node's building goes, its measured unprofiled cost (_node_us) taken out where the
    # node's first op starts (a cost without the profiler, so the engine's unprofiled replay keeps it whole)
    first = found.ops[np.unique(found.seqs, return_index=True)[1]]
    edit = Edit("inference_mode", host_remove_ns=(facts.trace.ts[first].astype(np.int64),
                                                  np.full(first.size, node_us(facts) * 1000.0)))
    return [Finding(ID, record, impact, ev, severity=None if facts.steps else Severity.INFO, edit=edit)]


def _malloc_steps(facts: Facts) -> int:
    """The inference steps that call cudaMalloc: the caching allocator asks CUDA for more, step after
    step, where memory grows (gpu/gpt2_flash_grad: 7 of 8; its inference_mode twin none)."""
    steps = set(inference_steps(facts))
    calls = np.flatnonzero(facts.is_host & name_mask(facts, {"cudaMalloc"}))
    return len(steps & set(np.unique(facts.event_step[calls]).tolist())) if facts.steps else int(calls.size > 0)


def _top(facts: Facts, found: GradNodes) -> tuple[np.ndarray, np.ndarray]:
    """The name ids of the ops whose calls moved the number on most (built a node), most first, and
    their counts in the read steps."""
    names = facts.trace.name[found.ops]
    builds = np.zeros(found.ops.size, dtype=bool)
    order = np.argsort(found.seqs, kind="stable")
    # an op builds a node where the next number is taken: the last op holding each number
    last = np.r_[found.seqs[order][1:] != found.seqs[order][:-1], False]
    builds[order[last]] = True
    ids, counts = np.unique(names[builds], return_counts=True)
    top = np.argsort(-counts, kind="stable")[:TOP_OPS]
    return ids[top], counts[top]


def _examples(facts: Facts, found: GradNodes, ids: np.ndarray) -> list[tuple[int, int]]:
    """The first call of each of these op names in the first read step."""
    out, names = [], facts.trace.name[found.ops]
    for name_id in ids.tolist():
        hits = np.flatnonzero(names == name_id)
        if hits.size:
            out.append((int(found.ops[hits[0]]), int(found.seqs[hits[0]])))
    return out
