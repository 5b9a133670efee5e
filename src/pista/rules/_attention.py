"""Attention written out by hand: a softmax between two matmuls, its ops and their kernels: not a rule.

manual-attention reports it; unfused-elementwise leaves the score tensor's chains to it, and gemm-alignment
its two matmuls (SDPA removes them with the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.findings import steps_of
from pista.opargs import op_args
from pista.query import AUTOGRAD_NODE, name_mask, nearest_in, pattern_mask
from pista.rules._common import index_mask, outer_ops, step_ops
from pista.trace.facts import Facts, per_facts

# the thresholds below are manual-attention's (`pista explain manual-attention`, [tool.pista.rules.manual-attention])
THRESHOLDS_OF = "manual-attention"

MATMULS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm"})
SOFTMAX = frozenset({"aten::softmax", "aten::_softmax"})
# A softmax is attention's where a matmul comes among the BEFORE ops ahead of it and among the AFTER
# ops behind it, on its thread, outside any other op: gpu/attn_manual's matmul, mul, alias, eq,
# masked_fill | softmax | dropout, matmul; gpu/attn_hf_eager's matmul, mul, add | softmax | to,
# dropout, matmul.
BEFORE = 5
AFTER = 3
# With shapes recorded, the softmax's input is a score tensor: 4-D (batch, heads, queries, keys) or 3-D
# (batch x heads, queries, keys), with more than one query (a decoding step's one-row scores are cheap).
SCORE_DIMS = (3, 4)
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise


@dataclass(eq=False)
class Attentions:
    softmaxes: np.ndarray
    chains: list[np.ndarray]  # per attention, its ops between the matmuls
    forward: np.ndarray  # the kernels they launched
    backward: np.ndarray  # their backward nodes' kernels
    saved_ns: float  # both kernels' time
    matmuls: np.ndarray  # the kernels of the matmuls around them (q @ k^T, scores @ v), forward and backward


def matmul_kernels(facts: Facts) -> np.ndarray:
    """The kernels of the written-out attentions' matmuls, where manual-attention fires: gemm-alignment leaves
    their shapes to it (F.scaled_dot_product_attention takes any sequence length)."""
    found = manual_attentions(facts)
    return found.matmuls if found else np.empty(0, np.int64)


def score_kernels(facts: Facts) -> np.ndarray:
    """The kernels manual-attention counts, where it fires: unfused-elementwise leaves their chains to it."""
    found = manual_attentions(facts)
    return np.concatenate([found.forward, found.backward]) if found else np.empty(0, np.int64)


@per_facts
def manual_attentions(facts: Facts) -> Attentions | None:
    """The attentions written out in the steps, where their kernels are worth MIN_STEP_SHARE of the step."""
    if not facts.has_gpu:
        return None
    attentions = _attentions(facts)
    if attentions is None:
        return None
    softmaxes, chains, matmuls = attentions
    between = np.unique(np.concatenate(chains))
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    forward = _launched(facts, work, between)
    backward = _launched(facts, work, _backward_nodes(facts, between))
    saved = float(trace.dur[forward].sum() + trace.dur[backward].sum())
    scale = steps_of(facts)
    if scale.per_step(saved * scale.busy).share < MIN_STEP_SHARE:
        return None
    gemms = np.concatenate((_launched(facts, work, matmuls), _launched(facts, work, _backward_nodes(facts, matmuls))))
    return Attentions(softmaxes, chains, forward, backward, saved, gemms)


def _launched(facts: Facts, work: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """The device work launched under these ops."""
    return work[nearest_in(facts, index_mask(facts, ops), facts.owner[work]) >= 0]


def _attentions(facts: Facts) -> tuple[np.ndarray, list[np.ndarray], np.ndarray] | None:
    """The steps' attention softmaxes, each one's ops between its matmuls, in time order, and the matmuls."""
    if not (step_ops(facts) & name_mask(facts, SOFTMAX)).any():
        return None
    outer, lane = outer_ops(facts)
    matmul = name_mask(facts, MATMULS)[outer]
    softmaxes, between, ends = [], [], []
    for k in np.flatnonzero(name_mask(facts, SOFTMAX)[outer]).tolist():
        ahead = _matmuls_in(matmul, lane, k, max(0, k - BEFORE), k)
        behind = _matmuls_in(matmul, lane, k, k + 1, min(outer.size, k + AFTER + 1))
        if ahead and behind and _scores(facts, int(outer[k])):
            softmaxes.append(int(outer[k]))
            between.append(outer[ahead[-1] + 1:behind[0]])
            ends += [int(outer[ahead[-1]]), int(outer[behind[0]])]
    if not softmaxes:
        return None
    return np.asarray(softmaxes, dtype=np.int64), [b.astype(np.int64) for b in between], np.asarray(ends, np.int64)


def _matmuls_in(matmul: np.ndarray, lane: np.ndarray, k: int, lo: int, hi: int) -> list[int]:
    """The positions in [lo, hi) of the matmuls on the same thread as position k."""
    return [j for j in range(lo, hi) if matmul[j] and lane[j] == lane[k]]


def _scores(facts: Facts, softmax: int) -> bool:
    """Whether the softmax's input is a score tensor (anything, without recorded shapes)."""
    shape = score_shape(facts, softmax)
    return shape is None or (len(shape) in SCORE_DIMS and shape[-2] > 1)


def score_shape(facts: Facts, softmax: int) -> tuple[int, ...] | None:
    dims = facts.trace.args(softmax).get("Input Dims")
    if isinstance(dims, list) and dims and isinstance(dims[0], list):
        return tuple(int(d) for d in dims[0])
    return None


def _backward_nodes(facts: Facts, between: np.ndarray) -> np.ndarray:
    """The autograd nodes whose sequence number is one of these ops' or their inner ops'."""
    ops = np.flatnonzero(facts.is_host & facts.trace.category_mask({"cpu_op"}))
    inner = ops[nearest_in(facts, index_mask(facts, between), ops) >= 0]
    seqs = {a.seq for a in op_args(facts, inner.tolist()) if a is not None and isinstance(a.seq, int)}
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD_NODE))
    if facts.steps:
        nodes = nodes[facts.event_step[nodes] >= 0]
    keep = [i for i, a in zip(nodes.tolist(), op_args(facts, nodes.tolist()), strict=True)
            if a is not None and isinstance(a.seq, int) and a.seq in seqs]  # a list is unhashable
    return np.asarray(keep, dtype=np.int64)
