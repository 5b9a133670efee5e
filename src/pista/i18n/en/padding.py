"""padding in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.padding import MaskedAttention, PadCall, Padding

TITLE = "Batches are padded to a fixed length: the model runs on padding"


def _target(r: Padding) -> str:
    return "the batch's longest row rounded up to a multiple of 64" if r.compiled else "the batch's longest row"


def message(r: Padding) -> str:
    if r.seen:
        return (f"Each step pads a batch of {r.batch} rows whose longest is {r.longest:.0f} tokens (mean over steps) to "
                f"{r.length}, and the model then runs at {r.length}: {100 * (1 - r.longest / r.length):.0f}% of every "
                f"sequence is padding. The kernels that run on the sequence axis take {t(r.kernels_us)} of GPU time per "
                f"step; at {_target(r)} they take {t(r.saved_gpu_us)} less.")
    return (f"Every step runs at the same length, {r.length}, and attention takes a padding mask: the batches arrive "
            f"padded to a fixed length, and the texts' lengths are not in the trace. The kernels that run on the "
            f"sequence axis take {t(r.kernels_us)} of GPU time per step; if a batch's longest text is half of {r.length}, "
            f"padding to it saves {t(r.saved_gpu_us)} of it. Check the lengths: "
            "print(attention_mask.sum(1).max()) for a few batches.")


def advice(r: Padding) -> str:
    if r.compiled:
        return ("The model is compiled, so each new length would be a new graph: pad each batch to the next multiple of "
                "64 above its longest row (a few graphs cover every batch), or mark the length dynamic "
                "(torch._dynamo.mark_dynamic(ids, 1)) and pad to the longest row.")
    how = ("drop the pad to max_length (F.pad after pad_sequence) and keep pad_sequence's batch-longest padding"
           if r.seen else "use padding='longest' (or DataCollatorWithPadding) instead of padding='max_length'")
    return (f"Pad each batch to its own longest row: {how}. With very uneven lengths, group texts of similar length "
            "into a batch (group_by_length=True in Hugging Face's Trainer, or a bucketing sampler). Under torch.compile, "
            "mark the length dynamic (torch._dynamo.mark_dynamic(ids, 1)) or pad to a multiple of 64, so a few shapes "
            "cover every batch.")


def fix(r: Padding) -> str:
    if r.seen and r.compiled:
        return (f"every batch is padded from ~{r.longest:.0f} to {r.length} tokens under torch.compile: pad to the next "
                "multiple of 64 instead (a few graphs), or mark the length dynamic")
    if r.seen:
        return (f"every batch is padded from ~{r.longest:.0f} to {r.length} tokens: pad to the batch's longest row "
                "(drop the pad to max_length)")
    return (f"every batch arrives padded to {r.length} with a padding mask: if the texts are shorter, pad to each "
            "batch's longest (padding='longest')")


def basis(r: Padding) -> str:
    if r.seen and r.compiled:
        return ("the step's sequence-axis kernels at the batch's longest row rounded up to a multiple of 64 (linear ops "
                "by l/L, attention by (l/L)^2)")
    if r.seen:
        return "the step's sequence-axis kernels at the batch's longest row (linear ops by l/L, attention by (l/L)^2)"
    return (f"the step's sequence-axis kernels at an assumed longest row of {100 * r.ratio:.0f}% of {r.length} (linear "
            "ops by l/L, attention by (l/L)^2): the lengths are not in the trace")


NOTES = {
    PadCall: lambda n: f"pads {n.rows} rows of {n.longest} to {n.padded_to}",
    MaskedAttention: lambda n: f"attention with a padding mask of {list(n.mask)}",
}
