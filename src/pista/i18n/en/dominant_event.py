"""dominant-event in English."""

from __future__ import annotations

from pista.i18n._fmt import num, pct, t
from pista.rules._common import short_name
from pista.rules.dominant_event import (
    IDLE_NAMED_BELOW,
    SMALL_GEMM_FLOPS,
    TILE_MULTIPLE,
    DominantEvent,
    Instance,
)

TITLE = "One kernel, copy or op dominates the GPU time"

KIND = {"kernel": "Kernel", "copy": "Copy", "memset": "Memset", "op": "Op"}
VERDICT = {"compute-bound": "the GPU is the limit", "balanced": "neither side dominates",
           "cpu-only": "no GPU work"}


def _ceiling(r: DominantEvent) -> str:
    g = r.rate
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    how = "measured" if g.ceiling_measured else "estimated from the datasheet"
    return f"{g.ceiling_tflops:.0f} TFLOP/s {g.dtype} ceiling of this {g.card} ({how})"


def _rate(r: DominantEvent) -> str:
    g = r.rate
    if g is None or g.tflops is None:
        return ""
    shape = ""
    if r.shape:
        b, m, n, k = r.shape
        shape = f" ({f'{b} x ' if b > 1 else ''}{m}x{n}x{k})"
    text = f" It does {g.flops / max(g.rated_calls, 1) / 1e9:.1f} GFLOP per call{shape} at {g.tflops:.0f} TFLOP/s"
    if g.peak_tflops:
        assert g.peak_share is not None  # a rate (tflops) and a peak
        text += f", {pct(g.peak_share)} of the {g.peak_tflops:.0f} TFLOP/s {g.dtype} datasheet peak"
    if g.ceiling_tflops:
        assert g.ceiling_share is not None  # a rate (tflops) and a ceiling
        text += f" and {pct(g.ceiling_share)} of the {_ceiling(r)}"
    return text + "."


def message(r: DominantEvent) -> str:
    where = f", launched by {r.launched_by}" if r.kind != "op" and r.launched_by else ""
    text = (f"{KIND[r.kind]} {r.name} holds {num(r.share_percent, 2)}% of the {t(r.self_device_total_us)} Self CUDA "
            f"total{where}: {r.calls} call{'s' if r.calls != 1 else ''}, {t(r.total_us)} in all, {t(r.avg_us)} per "
            f"call on average.{_rate(r)} The GPU is busy {r.gpu_busy_percent:.1f}% of the window "
            f"({r.verdict}: {VERDICT.get(r.verdict, r.verdict)}).")
    if r.cause == "below-ceiling":
        text += f" At the ceiling it would take {t(r.headroom_us / r.steps)} less per step."
    return text


def _below_advice(r: DominantEvent) -> str:
    g = r.rate
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    if r.shape and any(d % TILE_MULTIPLE for d in r.shape[1:]):
        b, m, n, k = r.shape
        return (f"its shape {m}x{n}x{k} leaves tensor-core tiles partly empty: pad M, N and K to multiples of 64 "
                "(vocabulary, hidden and batch sizes)")
    if g.flops / max(g.rated_calls, 1) < SMALL_GEMM_FLOPS:
        return ("each call is too small to fill the card: batch such GEMMs into one (torch.bmm, a larger batch), "
                "or capture them in a CUDA graph")
    return ("let torch.compile(mode='max-autotune') pick a better kernel for this shape, or try the other "
            "layout (transpose an operand); confirm with Nsight Compute (ncu) what bounds it")


def _elsewhere(r: DominantEvent) -> str:
    """Where the larger cost is once the kernel is left alone: the rest of the GPU time, the GPU's idle time."""
    parts = []
    if r.share_percent <= 95:
        parts.append(f"the other {100 - r.share_percent:.0f}% of the GPU time")
    if r.gpu_busy_percent < IDLE_NAMED_BELOW:
        parts.append(f"the {100 - r.gpu_busy_percent:.0f}% of the window the GPU is idle")
    return f"; look next at {' and at '.join(parts)}" if parts else ""


def _name(r: DominantEvent) -> str:
    return short_name(r.name) if r.kind == "kernel" else r.name


def advice(r: DominantEvent) -> str:
    name = _name(r)
    g = r.rate
    if r.cause == "transfer":
        return (f"{name} is a {r.kind}, not compute: move fewer bytes (keep tensors on the GPU, copy once, a smaller "
                "dtype), copy from pinned memory with non_blocking=True so it overlaps compute (see "
                "pageable-memcpy), and batch many small copies into one.")
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    if r.cause == "at-ceiling":
        lower = ""
        if g.dtype in ("bf16", "fp16") and r.fp8:
            lower = " or fp8 (torch._scaled_mm, TransformerEngine) where accuracy allows"
        elif g.dtype == "tf32":
            lower = " or bf16 (torch.autocast) where accuracy allows"
        rest = (f"; the other {100 - r.share_percent:.0f}% of the GPU time is where to look next"
                if r.share_percent <= 95 else "")
        return (f"Leave {name} as it is: at {g.tflops:.0f} TFLOP/s it runs as fast as this card runs {g.dtype}. "
                f"Only less work makes it faster (fewer or smaller GEMMs){lower}{rest}.")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"Leave {name} as it is: at {g.tflops:.0f} TFLOP/s, {pct(g.ceiling_share)} of the card's {g.dtype} "
                "ceiling, it runs near what a GEMM reaches on this card, and torch.compile(mode='max-autotune') finds "
                f"no faster kernel for such GEMMs{_elsewhere(r)}.")
    if r.cause == "below-ceiling":
        assert g.ceiling_share is not None  # below the ceiling: a rate and a ceiling
        return f"{name} runs at {pct(g.ceiling_share)} of the card's {g.dtype} ceiling: {_below_advice(r)}."
    if r.cause == "precision":
        other = "fp32-gemm: TF32 or bf16" if g.dtype == "fp32" else "fp64-gemm: fp32/TF32 or bf16"
        return (f"{name} runs in {g.dtype} at {g.tflops:.1f} TFLOP/s; the lever is its precision, not the kernel "
                f"(see {other}, where accuracy allows).")
    if r.cause == "unknown-card":
        return (f"{name} runs at {g.tflops:.0f} TFLOP/s in {g.dtype or 'an unknown dtype'}; compare that with your "
                f"card's datasheet ({r.device or 'the trace names no GPU'} is not in pista's peak table).")
    if "elementwise" in r.name or "reduce" in r.name:
        return (f"{name} is not a GEMM: a memory-bound kernel is as fast as the bytes it moves; fuse it with its "
                "neighbours (torch.compile) or avoid the pass, and check its bandwidth with Nsight Compute (ncu).")
    return (f"{name} is not a GEMM op pista can count FLOPs for: check what bounds it with Nsight Compute (ncu) "
            "before changing it.")


def fix(r: DominantEvent) -> str:
    name = _name(r)
    g = r.rate
    if r.cause == "at-ceiling":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"{name} runs at {g.tflops:.0f} TFLOP/s, at this card's {g.dtype} ceiling: leave it, nothing to "
                "gain in this kernel.")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"{name} runs at {g.tflops:.0f} of {g.ceiling_tflops:.0f} TFLOP/s ({g.dtype}), near this card's "
                f"ceiling: leave it{_elsewhere(r)}.")
    if r.cause == "below-ceiling":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"{name} runs at {g.tflops:.0f} of {g.ceiling_tflops:.0f} TFLOP/s ({g.dtype}), "
                f"{t(r.headroom_us / r.steps)} per step to gain: {_below_advice(r)}.")
    if r.cause == "transfer":
        return (f"{name} is {r.share_percent:.0f}% of the GPU time: move fewer bytes, from pinned memory with "
                "non_blocking=True.")
    if r.cause == "precision":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return f"{name} runs in {g.dtype}: lower its precision (see {'fp32' if g.dtype == 'fp32' else 'fp64'}-gemm)."
    return f"{name} is {r.share_percent:.0f}% of the GPU time: check what bounds it with Nsight Compute (ncu)."


def basis(r: DominantEvent) -> str:
    g = r.rate
    if r.cause in ("at-ceiling", "below-ceiling"):
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        how = "measured" if g.ceiling_measured else "estimated from the datasheet"
        return (f"per call, its time minus its FLOPs at the card's {g.dtype} ceiling ({g.ceiling_tflops:.0f} "
                f"TFLOP/s, {how}), summed per step")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"none claimed: at {pct(g.ceiling_share)} of the card's {g.dtype} ceiling a GEMM runs near what the "
                "card gives (max-autotune found nothing faster for such GEMMs)")
    if r.cause == "precision":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return f"not counted here: what a lower precision saves is {'fp32' if g.dtype == 'fp32' else 'fp64'}-gemm's"
    if r.cause == "transfer":
        return "not estimated here: a copy's cost is the copy rules' (pageable-memcpy, host-sync)"
    if r.cause == "unknown-card":
        return f"not estimated: the GPU ({r.device or 'unnamed'}) is not in pista's peak table"
    return "not estimated: no FLOP count for this kernel (pista counts the FLOPs of GEMM ops only)"


NOTES = {
    Instance: lambda n: "longest instance" + (f", {n.tflops:.0f} TFLOP/s" if n.tflops else ""),
}
