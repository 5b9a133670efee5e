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

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules._attention import manual_attentions, score_shape
from pista.rules._common import evidence, us

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
    return [Finding(ID, record, impact, ev)]


