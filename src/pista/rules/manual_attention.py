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
Replayed (pista.engine): the ops between the two matmuls (the scores' scale, mask, softmax, dropout and
casts) go with their kernels, their backward nodes (matched by the autograd sequence number) and the host's
time between them; the matmuls stay (the fused kernel still computes them). Without a timeline, the rule's
own figure: those kernels' time times the GPU's busy share of the window. A GPU-bound model saves the
kernels whole: review 4's tl_mi300_timesformer, 52.9 ms of score passes in a 99%-busy model part, read 16.2 ms
(4.2%) at the window's 31% busy share, 52.9 ms (13.5%) replayed. Host-bound steps save less than measured,
since the fused call also drops the matmuls' and reshapes' dispatch: gpu/attn_manual 11.1 ms replayed
unprofiled (measured 19.9 ms), gpu/attn_hf_eager 4.0 ms (measured 13.0 ms); the busy-share figure had read
15.2 and 8.8 ms.
Under 1% of the step the rule is silent.

Fix:
`torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
is_causal=True)` in place of the written-out attention (nanoGPT: `flash=True`); in transformers,
`attn_implementation="sdpa"` (or "flash_attention_2") when loading the model.
"""

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
