"""What:
Inference with grad mode on: steps that run no backward (no autograd engine node, no optimizer
step) while their ops record autograd nodes, because the loop is not under `torch.inference_mode()`
or `torch.no_grad()`. Torch records each op's `Sequence number` only in grad mode, and the number
moves on by one for each node the forward builds, so the distinct numbers in a step count its nodes.

Why:
Each node is host work inside the op (the backward function, its edges, the tensors it saves), and
the forward keeps every activation it saves for a backward that never runs, until its output goes:
more time a call where the host is the limit (decoding, small batches) and more memory at any size.
`model.eval()` does not turn it off; `generate()` in transformers does, a hand-written loop does not.

Example:
gpu/gpt2_flash_grad (GPT-2 124M, batch-1 decoding, H200): 444 nodes a token; the KV cache carries
the autograd history of every earlier token, so memory grows token after token (allocator-churn).
Unprofiled, in one process (gpu/grad_time.py), torch.inference_mode() took the token from 6.21 to 4.94
ms, and ResNet-50 bf16 inference from 5.20 to 4.22 ms (batch 32) and 7.67 to 6.29 ms (batch 8), and
ResNet-50's peak memory from 1434 to 267 MiB and 426 to 130 MiB.

Impact:
Per step, the nodes times GRAD_NODE_US (the median of the twins' saving per node: GPT-2 2.75 µs,
ResNet-50 5.6 and 8.2; CPU_GRAD_NODE_US, 2.0, without a GPU: a CPU MLP's twins) times the profiler's
inflation of host time (PROFILER_HOST_INFLATION, 2, as overhead-bound takes it), at most the step's
per-op GPU idle (what the host's dispatch holds up) where a GPU ran. gpu/gpt2_flash_grad 5.0 ms of
an 18.6 ms token; gpu/resnet50_grad 2.0 ms of a 22.4 ms step (the profiled twins differ by about 9
ms, part of it the two processes' machine; unprofiled each saved 19-20%); gpu/cpu_infer_grad 196 µs
of a 0.96 ms step (unprofiled 91-117 µs of 715). The memory is not in the impact (a trace without
memory events cannot show it). overhead-bound, launch-bound and many-calls leave this idle to this
rule (`claimed_idle`). Under 1% of the step the rule is silent, and where no op builds a node (a
loop over tensors that need no grad) it does not fire. Without ProfilerStep markers it is info, with
that condition said: a training forward profiled alone, its backward outside the window, looks the
same.

Fix:
Run the loop under `with torch.inference_mode():` (or `torch.no_grad()` where its tensors must meet
autograd later), around the model calls, with `model.eval()` as well.
"""

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
SEVERITY_EXCEPTION = ("info without ProfilerStep markers: a training forward profiled alone, its backward "
                      "outside the window, looks the same")
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
