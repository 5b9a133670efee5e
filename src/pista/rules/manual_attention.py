"""The manual-attention rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
manual-attention`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/manual_attention.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules._attention import manual_attentions, score_shape
from pista.rules._common import backward_nodes, evidence, us
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals

ID = "manual-attention"
EVIDENCE_KERNELS = 2


# Ops between the matmuls that apply a mask (nanoGPT's masked_fill, HF eager's added mask, a where): whether it
# is causal, the trace does not say (the advice gives both calls).
MASK_OPS = frozenset({"aten::masked_fill", "aten::masked_fill_", "aten::where", "aten::add", "aten::add_"})


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


def check(ctx: Context) -> list[Finding]:
    found = manual_attentions(ctx.facts)
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
        steps=steps, layers_per_step=softmaxes.size / steps, score_shape=score_shape(facts, first) or (),
        ops=tuple(trace.event_name(int(o)) for o in chains[0]),
        forward_us=us(trace.dur[forward].sum()) / steps, backward_us=us(trace.dur[backward].sum()) / steps,
        gpu_saved_us=us(saved) / steps, busy_percent=100.0 * busy)
    ev = [evidence(facts, first)]
    for idx, back in ((forward, False), (backward, True)):
        for k in idx[np.argsort(-trace.dur[idx], kind="stable")[:EVIDENCE_KERNELS]].tolist():
            ev.append(evidence(facts, int(k), ScoreKernel(trace.event_name(int(facts.owner[k])), back)))
    # replayed: the passes over the scores go (the matmuls stay: a fused kernel still computes them), so a
    # GPU-bound model part saves them whole whatever the window's average busy share (review 4's
    # tl_mi300_timesformer: 52.9 ms of score passes in a 99%-busy model part read as 16.2 ms at the window's 31%)
    # The ops between the matmuls go with their kernels and backward nodes: one fused call dispatches in their
    # place (a host-bound step saves their dispatch: gpu/attn_hf_eager measured 13.0 ms of 53.5)
    ops = np.unique(np.concatenate(chains)).astype(np.int64)
    gone = np.concatenate((ops, backward_nodes(facts, ops), forward, backward)).astype(np.int64)
    edit = Edit("a fused attention kernel", remove=np.unique(gone),
                host_scale_spans=((_attention_spans(facts, chains), 0.0),))
    return [Finding(ID, record, impact, ev, edit=edit)]



def _attention_spans(facts: Facts, chains: list[np.ndarray]) -> Intervals:
    """The host's time over each attention's ops between its matmuls, the Python between them too: one fused
    call dispatches in their place. (Reaching out to the matmuls' own dispatch took a neighbour's long call
    with it on tl_mi300_timesformer: 97 ms claimed for 53 ms of score kernels in a GPU-bound model.)"""
    trace = facts.trace
    return merge_intervals(np.array([int(trace.ts[c].min()) for c in chains], np.int64),
                           np.array([int((trace.ts[c] + trace.dur[c]).max()) for c in chains], np.int64))
