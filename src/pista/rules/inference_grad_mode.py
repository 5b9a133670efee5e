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

from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Finding, Record, Severity, steps_of
from pista.opargs import SEQ_ODD, sequence_numbers
from pista.rules import gpu_idle
from pista.rules._common import (
    PROFILER_HOST_INFLATION,
    evidence,
    inference_steps,
    name_mask,
    new_shapes,
    step_ops,
    us,
)
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, per_facts

ID = "inference-grad-mode"
# launch-bound and many-calls leave this rule's claimed_idle out before they count (inference_mode() is the fix, not a graph)
CLAIMS_FIRST = True
SEVERITY_EXCEPTION = ("info without ProfilerStep markers: a training forward profiled alone, its backward "
                      "outside the window, looks the same")
# Host time a node costs unprofiled, the median of gpu/grad_time.py's three paired runs: ResNet-50
# batch 32 1.00 ms a step for 177 nodes (5.6 µs); GPT-2 decoding 1.22 ms a token for 444 (2.75 µs),
# ResNet-50 batch 8 1.44 ms (8.2 µs). Each saved 19-20% of the unprofiled step.
GRAD_NODE_US = 5.6
# ... and without a GPU, where nothing but the node itself changes: gpu/cpu_infer.py's paired runs (a
# 16-block MLP on one core of this 2-core VM), 91-117 µs a step for 49 nodes. The GPU twins' median
# would make 549 µs of it, half the profiled step, where inference_mode saved 13-16%.
CPU_GRAD_NODE_US = 2.0
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
# Ops whose Sequence numbers are read (args from the file): whole inference steps up to this many ops
# give the nodes a step; the steps are alike, and a long inference trace need not be read whole.
MAX_OPS = 1 << 15
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
    found = _found(facts)
    if found is None or found.idle.total == 0:
        return gpu_idle.union(np.empty(0), np.empty(0))
    keep = min(1.0, found.saving_ns / found.idle.total)
    start = found.idle.start
    return gpu_idle.union(start, start + ((found.idle.end - start) * keep).astype(np.int64))


def fires(facts: Facts) -> bool:
    """Whether this rule reports the trace (allocator-churn names it as its calls' cause)."""
    return _found(facts) is not None


def check(ctx: Context) -> list[Finding]:
    found = _found(ctx.facts)
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
        capped=facts.has_gpu and found.idle.total < found.cost_ns, node_us=_node_us(facts), gpu=facts.has_gpu,
        inflation=PROFILER_HOST_INFLATION, top=top, growing_op=new_shapes(facts)["new_shape_op"],
        malloc_steps=_malloc_steps(facts), has_steps=bool(facts.steps))
    ev = [evidence(facts, int(i), NodeOp(int(s))) for i, s in _examples(facts, found, ids)]
    impact = ctx.per_step(found.saving_ns)
    # inference_mode(): each node's building goes, its measured unprofiled cost (_node_us) taken out where the
    # node's first op starts (a cost without the profiler, so the engine's unprofiled replay keeps it whole)
    first = found.ops[np.unique(found.seqs, return_index=True)[1]]
    edit = Edit("inference_mode", host_remove_ns=(facts.trace.ts[first].astype(np.int64),
                                                  np.full(first.size, _node_us(facts) * 1000.0)))
    return [Finding(ID, record, impact, ev, severity=None if facts.steps else Severity.INFO, edit=edit)]


@dataclass(eq=False)
class _Found:
    steps: int  # inference steps
    read_steps: int  # of them, those whose ops were read
    ops: np.ndarray  # the read ops with a Sequence number
    seqs: np.ndarray  # their numbers
    nodes: int  # in the read steps
    cost_ns: float  # over all inference steps
    idle: Intervals  # the per-op GPU idle in them (the ledger's, no other cause's)
    saving_ns: float  # min(cost, idle) on a GPU, the cost without one


@per_facts
def _found(facts: Facts) -> _Found | None:
    steps = inference_steps(facts)
    if not steps:
        return None
    ops = np.flatnonzero(step_ops(facts))
    of_step = facts.event_step[ops] if facts.steps else np.full(ops.size, -1)
    read, seqs, nodes, read_count = [], [], 0, 0
    for k in steps:
        idx = ops[of_step == k]
        whole = idx.size
        idx = idx[:MAX_OPS]  # a window without steps: its first ops, the count scaled to all of them
        step_seqs = sequence_numbers(facts, idx.tolist()) if idx.size else np.empty(0, np.int64)
        has = step_seqs > SEQ_ODD
        read.append(idx[has])
        seqs.append(step_seqs[has])
        nodes += round(_nodes(step_seqs[has]) * whole / max(idx.size, 1))
        read_count += read[-1].size  # kept as it goes: a sum over the steps read so far was quadratic
        if read_count >= MAX_OPS:
            break
    if nodes == 0:
        return None
    cost = nodes / len(read) * _node_us(facts) * 1000.0 * PROFILER_HOST_INFLATION * len(steps)
    idle = _per_op_idle(facts, steps)
    saving = min(cost, idle.total) if facts.has_gpu else cost
    if steps_of(facts).per_step(saving).share < MIN_STEP_SHARE:
        return None
    return _Found(len(steps), len(read), np.concatenate(read), np.concatenate(seqs), nodes, cost, idle, saving)


def _node_us(facts: Facts) -> float:
    return GRAD_NODE_US if facts.has_gpu else CPU_GRAD_NODE_US


def _nodes(seqs: np.ndarray) -> int:
    """The nodes a step's ops built: the number moves on once per node, so each distinct number is one
    (the step's last op builds one as a rule: gpu/profiler_first_step's numbers advance 96 a step); one
    number alone is ops on tensors that need no grad (seed_mm64_warm: 3 ops, one number, no node)."""
    distinct = np.unique(seqs).size
    return distinct if distinct > 1 else 0


def _per_op_idle(facts: Facts, steps: list[int]) -> Intervals:
    """The ledger's per-op GPU idle inside these steps (the window's without steps): what the host's
    dispatch holds up, the syncs', data's and one-time set-up's left to their rules."""
    book = gpu_idle.ledger(facts)
    if book is None:
        return gpu_idle.union(np.empty(0), np.empty(0))
    if steps == [-1]:
        return book.per_op
    parts = [book.per_op.clip(facts.steps[k].start, facts.steps[k].end) for k in steps]
    return gpu_idle.union(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))


def _malloc_steps(facts: Facts) -> int:
    """The inference steps that call cudaMalloc: the caching allocator asks CUDA for more, step after
    step, where memory grows (gpu/gpt2_flash_grad: 7 of 8; its inference_mode twin none)."""
    steps = set(inference_steps(facts))
    calls = np.flatnonzero(facts.is_host & name_mask(facts, {"cudaMalloc"}))
    return len(steps & set(np.unique(facts.event_step[calls]).tolist())) if facts.steps else int(calls.size > 0)


def _top(facts: Facts, found: _Found) -> tuple[np.ndarray, np.ndarray]:
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


def _examples(facts: Facts, found: _Found, ids: np.ndarray) -> list[tuple[int, int]]:
    """The first call of each of these op names in the first read step."""
    out, names = [], facts.trace.name[found.ops]
    for name_id in ids.tolist():
        hits = np.flatnonzero(names == name_id)
        if hits.size:
            out.append((int(found.ops[hits[0]]), int(found.seqs[hits[0]])))
    return out
