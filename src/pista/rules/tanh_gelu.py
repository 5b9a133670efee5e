"""The tanh-gelu rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
tanh-gelu`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/tanh_gelu.ftl."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Finding, Record, steps_of
from pista.rules._common import backward_nodes, evidence, index_mask, us
from pista.rules._gelu import AFTER, BEFORE, chain_ops
from pista.rules._idle import idle_under, union
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

ID = "tanh-gelu"
# launch-bound and many-calls leave this rule's claimed_idle out before they count (one op for eight, not a graph, is the fix)
CLAIMS_FIRST = True
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
EVIDENCE_CHAINS = 2


class TanhGelu(Record):
    steps: int
    chains_per_step: float
    ops_per_chain: int  # BEFORE + 1 + AFTER
    idle_us_per_step: float  # the GPU idle under the chains' ops
    kernel_us_per_step: float  # their kernels' GPU time (not in the impact)
    fp32: bool  # the chain's ops ran in fp32 (autocast casts pow and tanh to fp32)


class ChainOp(Record):
    """Note on an op of one chain."""

    position: int  # 1..ops_per_chain
    of: int


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle under the chains' ops (empty where the rule does not fire): overhead-bound and
    launch-bound leave it out."""
    found = _found(facts)
    return found.idle if found is not None else union(np.empty(0), np.empty(0))


def check(ctx: Context) -> list[Finding]:
    found = _found(ctx.facts)
    if found is None:
        return []
    facts = ctx.facts
    steps = ctx.step_count
    impact = ctx.per_step(_saving(found.idle))
    record = TanhGelu(
        steps=steps, chains_per_step=found.chains / steps, ops_per_chain=BEFORE + 1 + AFTER,
        idle_us_per_step=us(found.idle.total) / steps, kernel_us_per_step=us(found.kernel_ns) / steps,
        fp32=_fp32(facts, found.ops))
    ev = []
    for chain in range(min(EVIDENCE_CHAINS, found.chains)):
        first = found.ops[chain * (BEFORE + 1 + AFTER)]
        tanh = found.ops[chain * (BEFORE + 1 + AFTER) + BEFORE]
        ev += [evidence(facts, int(first), ChainOp(1, BEFORE + 1 + AFTER)),
               evidence(facts, int(tanh), ChainOp(BEFORE + 1, BEFORE + 1 + AFTER))]
    # one op for eight: each chain keeps its tanh (one read and one write of the activation, what the fused
    # kernel does) and loses the other seven ops, their dispatch and their kernels' passes over memory
    per = BEFORE + 1 + AFTER
    others = found.ops.reshape(-1, per)[:, [i for i in range(per) if i != BEFORE]].reshape(-1)
    # and in the backward, the chain's nodes give way to one GeluBackward (the tanh's node stays for it)
    gone = np.concatenate((others, backward_nodes(facts, others.astype(np.int64)))).astype(np.int64)
    return [Finding(ID, record, impact, ev, edit=Edit("one GELU kernel", remove=gone,
                                                      host_scale_spans=((_between(facts, found.ops, per), 0.0),)))]


def _between(facts: Facts, ops: np.ndarray, per: int) -> Intervals:
    """The host time between a chain's ops: Python evaluating the formula term by term, which one call
    does not spend (savings/h100/gelu_manual: with the ops alone removed the replay saved 25% of the step
    for a measured 39%)."""
    trace = facts.trace
    chains = ops.reshape(-1, per)
    ends = (trace.ts[chains] + trace.dur[chains])[:, :-1].reshape(-1)
    starts = trace.ts[chains][:, 1:].reshape(-1)
    keep = starts > ends
    return merge_intervals(ends[keep], starts[keep])


def _saving(idle: Intervals) -> float:
    """ns saved over the window: the idle under the chains' ops, less the one op that stays."""
    return idle.total * (1.0 - 1.0 / (BEFORE + 1 + AFTER))


@dataclass(eq=False)
class _Found:
    ops: np.ndarray  # each chain's ops in order, chain after chain
    chains: int
    idle: Intervals  # the GPU idle under them
    kernel_ns: float  # their kernels' GPU time


@per_facts
def _found(facts: Facts) -> _Found | None:
    """The chains in the steps, where their idle is worth MIN_STEP_SHARE of the step."""
    if not facts.has_gpu:
        return None
    members = chain_ops(facts)
    if members.size == 0:
        return None
    idle = idle_under(facts, members)
    launched = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    kernel_ns = float(facts.trace.dur[launched[index_mask(facts, members)[facts.owner[launched]]]].sum())
    # the seven passes a fused kernel saves count as well, as far as the GPU is the limit (savings/h100/
    # gelu_hf_new: GPU-bound, the chains' idle under 1% of the step, gelu_pytorch_tanh saved 16%)
    scale = steps_of(facts)
    passes = kernel_ns * (1.0 - 1.0 / (BEFORE + 1 + AFTER)) * scale.busy
    if scale.per_step(max(_saving(idle), passes)).share < MIN_STEP_SHARE:
        return None
    return _Found(members, members.size // (BEFORE + 1 + AFTER), idle, kernel_ns)


def _fp32(facts: Facts, ops: np.ndarray) -> bool:
    """Whether the chains ran in fp32: the first tanh's recorded input type (False without shapes)."""
    tanh = ops[BEFORE]
    types = facts.trace.args(int(tanh)).get("Input type")
    return isinstance(types, list) and bool(types) and str(types[0]) == "float"
