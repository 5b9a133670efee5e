"""Inference steps run in grad mode: the autograd nodes their ops build, what the nodes cost, and the
per-op GPU idle that cost is taken from: not a rule.

inference-grad-mode reports them; allocator-churn and inference-train-mode name it beside their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.findings import steps_of
from pista.opargs import SEQ_ODD, sequence_numbers
from pista.rules._common import PROFILER_HOST_INFLATION, inference_steps, step_ops
from pista.rules._idle import ledger, union
from pista.trace.facts import Facts, Intervals, per_facts

# the thresholds below are inference-grad-mode's (`pista explain inference-grad-mode`,
# [tool.pista.rules.inference-grad-mode])
THRESHOLDS_OF = "inference-grad-mode"

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


@dataclass(eq=False)
class GradNodes:
    steps: int  # inference steps
    read_steps: int  # of them, those whose ops were read
    ops: np.ndarray  # the read ops with a Sequence number
    seqs: np.ndarray  # their numbers
    nodes: int  # in the read steps
    cost_ns: float  # over all inference steps
    idle: Intervals  # the per-op GPU idle in them (the ledger's, no other cause's)
    saving_ns: float  # min(cost, idle) on a GPU, the cost without one


@per_facts
def grad_nodes(facts: Facts) -> GradNodes | None:
    """The nodes the inference steps' ops build and their cost, where it is worth MIN_STEP_SHARE of the step."""
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
    cost = nodes / len(read) * node_us(facts) * 1000.0 * PROFILER_HOST_INFLATION * len(steps)
    idle = _per_op_idle(facts, steps)
    saving = min(cost, idle.total) if facts.has_gpu else cost
    if steps_of(facts).per_step(saving).share < MIN_STEP_SHARE:
        return None
    return GradNodes(len(steps), len(read), np.concatenate(read), np.concatenate(seqs), nodes, cost, idle, saving)


def node_us(facts: Facts) -> float:
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
    book = ledger(facts)
    if book is None:
        return union(np.empty(0), np.empty(0))
    if steps == [-1]:
        return book.per_op
    parts = [book.per_op.clip(facts.steps[k].start, facts.steps[k].end) for k in steps]
    return union(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))


def grad_mode_fires(facts: Facts) -> bool:
    """Whether inference-grad-mode reports the trace (allocator-churn and inference-train-mode name it)."""
    return grad_nodes(facts) is not None
