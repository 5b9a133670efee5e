"""manual-attention in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.manual_attention import MASK_OPS, ManualAttention, ScoreKernel

TITLE = "Attention written out op by op: every step passes over the whole score tensor"


def _shape(r: ManualAttention) -> str:
    return f" on {'x'.join(str(d) for d in r.score_shape)} scores" if r.score_shape else ""


def message(r: ManualAttention) -> str:
    ops = ", ".join(o.removeprefix("aten::") for o in r.ops)
    return (f"{r.layers_per_step:.0f} attentions per step compute softmax(q k^T) v op by op{_shape(r)}: between the "
            f"two matmuls, {ops} each pass over the score tensor, {t(r.forward_us)} of kernels per step forward and "
            f"{t(r.backward_us)} backward. A fused attention kernel never writes the scores: about "
            f"{t(r.gpu_saved_us)} less GPU time per step.")


def _mask(r: ManualAttention) -> str:
    """How the mask goes into the call: the trace shows whether one is applied, not whether it is causal."""
    if not set(r.ops) & MASK_OPS:
        return "(q, k, v, dropout_p=p)"
    return ("(q, k, v, dropout_p=p, is_causal=True) for a causal (triangular) mask, attn_mask=mask for any other "
            "(a padding mask)")


def advice(r: ManualAttention) -> str:
    return (f"Call torch.nn.functional.scaled_dot_product_attention{_mask(r)} in place of the matmul-mask-softmax-matmul "
            "code (nanoGPT: flash=True); for a transformers model, load it with attn_implementation='sdpa' (or "
            "'flash_attention_2'). The scores' memory goes too.")


def fix(r: ManualAttention) -> str:
    return (f"Attention runs op by op{_shape(r)}, {t(r.gpu_saved_us)} of score-tensor kernels per step: use "
            "F.scaled_dot_product_attention (transformers: attn_implementation='sdpa').")


def basis(r: ManualAttention) -> str:
    per = "per step" if r.steps > 1 else "over the window"
    return (f"the kernel time of the ops between the attention's matmuls and of their backward nodes ({t(r.gpu_saved_us)} "
            f"{per}), times the {r.busy_percent:.0f}% of the window the GPU is busy; the matmuls, which a fused "
            "kernel still computes, are not counted")


NOTES = {
    ScoreKernel: lambda n: f"a pass over the scores ({n.op}{', backward' if n.backward else ''})",
}
