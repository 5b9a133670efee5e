"""gemm-alignment in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.gemm_alignment import CallNote, GemmAlignment, Misaligned

TITLE = "GEMMs on dimensions that are not multiples of 8 run on slow fallback kernels"


def _group(m: Misaligned) -> str:
    b, mm, n, k = m.mnk
    batch = f"{b}x " if b > 1 else ""
    return (f"{m.op} {batch}{mm}x{k} by {k}x{n} {m.dtype} {m.calls}x: {t(m.us_per_step)} per step at "
            f"{m.tflops:.0f} TFLOP/s ({m.kernel})")


def _dims(r: GemmAlignment) -> str:
    return ", ".join(str(d) for d in r.odd[:3])


def message(r: GemmAlignment) -> str:
    groups = "; ".join(_group(m) for m in r.groups[:3])
    return (f"{r.calls} GEMM calls on a dimension that is not a multiple of 8 ({_dims(r)}) take {t(r.kernel_us)} per "
            f"step, {r.gpu_share_percent:.0f}% of the GPU time, where this trace's aligned GEMMs of the same dtype run "
            f"at {r.reference_tflops:.0f} TFLOP/s: {groups}.")


def advice(r: GemmAlignment) -> str:
    d = r.odd[0]
    if d in r.sequence:
        return (f"{d} is a sequence length (tokens per sample), not a weight's size: pad the sequences to {r.pad_to} "
                "(a multiple of 8; pad_to_multiple_of=8 in the tokenizer or the data collator, the padding masked out "
                "of the attention and the loss), or run the attention as F.scaled_dot_product_attention, whose fused "
                "kernels take any length. cuBLAS then picks its aligned tensor-core kernels.")
    return (f"Pad {d} to {r.pad_to} (a multiple of 64): for a vocabulary, build the embedding and the output "
            "layer with the padded size (the extra logits are never targets); hidden and feed-forward sizes in "
            "multiples of 64, tokens per batch in multiples of 8. cuBLAS then picks its aligned tensor-core kernels.")


def fix(r: GemmAlignment) -> str:
    d = r.odd[0]
    if d in r.sequence:
        return (f"GEMMs over the sequence length {d} run at a fraction of the card's rate, {t(r.kernel_us)} per step: "
                f"pad the sequences to {r.pad_to} (pad_to_multiple_of=8).")
    return (f"GEMMs on the dimension {d} run at a fraction of the card's rate, {t(r.kernel_us)} per step: pad it "
            f"to {r.pad_to} (a multiple of 64).")


def basis(r: GemmAlignment) -> str:
    per = "per step" if r.steps > 1 else "over the window"
    return (f"the misaligned GEMMs' kernel time less their FLOPs at the aligned GEMMs' {r.reference_tflops:.0f} "
            f"TFLOP/s ({t(r.gpu_saved_us)} of GPU time {per}), times the {r.busy_percent:.0f}% of the window the GPU "
            "is busy: GPU time saved shortens the step only where the GPU is the limit")


NOTES = {
    CallNote: lambda n: f"{n.tflops:.0f} TFLOP/s, against {n.reference_tflops:.0f} for the aligned GEMMs",
}
