"""What:
Attention written out op by op instead of one fused kernel: `q @ k^T`, a scale, a causal mask
(`masked_fill`, `where` or an added mask), `softmax`, dropout, `@ v`, as nanoGPT without flash,
transformers' "eager" attention and many hand-written models do. Each op between the two matmuls
reads and writes the whole (batch, heads, queries, keys) score tensor, forward and backward, and
autocast runs the softmax in fp32, so the scores are also cast both ways.

Why:
The score tensor grows with the square of the sequence: at 1024 tokens, 12 heads and a batch of 8 it
is 100 M elements, 400 MB in fp32, for every layer. `F.scaled_dot_product_attention` (flash or
memory-efficient attention) never writes it: it computes the softmax in tiles held on chip, so the
scale, mask, softmax, dropout and casts cost no pass over memory at all, and their memory is free.

Example:
gpu/attn_manual (a GPT of 6 blocks, d=768, batch 8 x 1024, bf16 autocast, H200): 36 ops a step
between the attention's matmuls launch 7.4 ms of kernels forward and 8.2 ms backward (masked_fill
3.5 ms, the scores cast to fp32 and back, softmax, dropout); unprofiled the step takes 37.3 ms, and
17.4 ms with `F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)`
(gpu/attn_sdpa). transformers' GPT-2 with `attn_implementation="eager"` (gpu/attn_hf_eager): 14.1 ms
of score kernels a step; 36.1 ms unprofiled against 23.1 ms with "sdpa".

Impact:
Per step, the kernel time of the ops between the two matmuls (the scores' scale, mask, softmax,
dropout and casts) and of their backward nodes (matched by the autograd sequence number), times the
GPU's busy share of the window (a host-bound step hides part of it). Not counted: the matmuls
themselves, which the fused kernel still computes, though faster. gpu/attn_manual 15.2 ms of 35.7
(42.5%, 97% busy; measured unprofiled, 19.9 ms saved), gpu/attn_hf_eager 8.8 ms of 53.5 (16.5%, 63%
busy under the profiler; measured 13.0 ms).
Under 1% of the step the rule is silent.

Fix:
`torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
is_causal=True)` in place of the written-out attention (nanoGPT: `flash=True`); in transformers,
`attn_implementation="sdpa"` (or "flash_attention_2") when loading the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Finding, Record, steps_of
from pista.opargs import op_args
from pista.rules._common import (
    AUTOGRAD_NODE,
    evidence,
    index_mask,
    name_mask,
    nearest_in,
    outer_ops,
    pattern_mask,
    step_ops,
    us,
)
from pista.trace.facts import Facts, per_facts

ID = "manual-attention"
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
EVIDENCE_KERNELS = 2


class ManualAttention(Record):
    steps: int
    layers_per_step: float  # attentions (softmaxes between matmuls) per step
    score_shape: tuple[int, ...]  # the first softmax's input, () without record_shapes
    ops: tuple[str, ...]  # the ops between the matmuls, in the first attention's order
    forward_us: float  # per step, their kernels
    backward_us: float  # per step, their backward nodes' kernels
    gpu_saved_us: float  # per step, both
    busy_percent: float  # the window's GPU busy share, which scales it to the impact


class ScoreKernel(Record):
    """Note on a kernel that passes over the score tensor."""

    op: str
    backward: bool


@dataclass(eq=False)
class _Found:
    softmaxes: np.ndarray
    chains: list[np.ndarray]  # per attention, its ops between the matmuls
    forward: np.ndarray  # the kernels they launched
    backward: np.ndarray  # their backward nodes' kernels
    saved_ns: float  # both kernels' time


def score_kernels(facts: Facts) -> np.ndarray:
    """The kernels this rule counts, where it fires: unfused-elementwise leaves their chains to it."""
    found = _found(facts)
    return np.concatenate([found.forward, found.backward]) if found else np.empty(0, np.int64)


@per_facts
def _found(facts: Facts) -> _Found | None:
    if not facts.has_gpu:
        return None
    attentions = _attentions(facts)
    if attentions is None:
        return None
    softmaxes, chains = attentions
    between = np.unique(np.concatenate(chains))
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    forward = work[nearest_in(facts, index_mask(facts, between), facts.owner[work]) >= 0]
    backward = work[nearest_in(facts, index_mask(facts, _backward_nodes(facts, between)), facts.owner[work]) >= 0]
    saved = float(trace.dur[forward].sum() + trace.dur[backward].sum())
    scale = steps_of(facts)
    if scale.per_step(saved * scale.busy).share < MIN_STEP_SHARE:
        return None
    return _Found(softmaxes, chains, forward, backward, saved)


def check(ctx: Context) -> list[Finding]:
    found = _found(ctx.facts)
    if found is None:
        return []
    facts, trace = ctx.facts, ctx.facts.trace
    softmaxes, chains, forward, backward, saved = (found.softmaxes, found.chains, found.forward, found.backward,
                                                   found.saved_ns)
    busy = ctx.busy_share
    impact = ctx.per_step(saved * busy)
    steps = ctx.step_count
    first = int(softmaxes[0])
    record = ManualAttention(
        steps=steps, layers_per_step=softmaxes.size / steps, score_shape=_score_shape(facts, first) or (),
        ops=tuple(trace.event_name(int(o)) for o in chains[0]),
        forward_us=us(trace.dur[forward].sum()) / steps, backward_us=us(trace.dur[backward].sum()) / steps,
        gpu_saved_us=us(saved) / steps, busy_percent=100.0 * busy)
    ev = [evidence(facts, first)]
    for idx, back in ((forward, False), (backward, True)):
        for k in idx[np.argsort(-trace.dur[idx], kind="stable")[:EVIDENCE_KERNELS]].tolist():
            ev.append(evidence(facts, int(k), ScoreKernel(trace.event_name(int(facts.owner[k])), back)))
    return [Finding(ID, record, impact, ev)]


def _attentions(facts: Facts) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The steps' attention softmaxes, and each one's ops between its matmuls, in time order."""
    if not (step_ops(facts) & name_mask(facts, SOFTMAX)).any():
        return None
    outer, lane = outer_ops(facts)
    matmul = name_mask(facts, MATMULS)[outer]
    softmaxes, between = [], []
    for k in np.flatnonzero(name_mask(facts, SOFTMAX)[outer]).tolist():
        ahead = [j for j in range(max(0, k - BEFORE), k) if matmul[j] and lane[j] == lane[k]]
        behind = [j for j in range(k + 1, min(outer.size, k + AFTER + 1)) if matmul[j] and lane[j] == lane[k]]
        if ahead and behind and _scores(facts, int(outer[k])):
            softmaxes.append(int(outer[k]))
            between.append(outer[ahead[-1] + 1:behind[0]])
    if not softmaxes:
        return None
    return np.asarray(softmaxes, dtype=np.int64), [b.astype(np.int64) for b in between]


def _scores(facts: Facts, softmax: int) -> bool:
    """Whether the softmax's input is a score tensor (anything, without recorded shapes)."""
    shape = _score_shape(facts, softmax)
    return shape is None or (len(shape) in SCORE_DIMS and shape[-2] > 1)


def _score_shape(facts: Facts, softmax: int) -> tuple[int, ...] | None:
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
