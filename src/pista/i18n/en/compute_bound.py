"""compute-bound in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules._common import short_name
from pista.rules.compute_bound import ComputeBound, GemmKernel, NearPeak, SlowCall

TITLE = "Compute bound: the GEMMs against the card's ceiling"


def _kernel(k: GemmKernel) -> str:
    return (f"{short_name(k.name)} ({k.calls} calls, {t(k.total_us)}, {k.tflops:.0f} TFLOP/s {k.dtype}, "
            f"{pct(k.ceiling_share)} of {k.ceiling_tflops:.0f})")


def _how(r: ComputeBound | NearPeak) -> str:
    return "measured" if r.ceiling_measured else "estimated from the datasheet"


def _span(r: NearPeak) -> str:
    shares = sorted(k.ceiling_share for k in r.kernels)
    low, high = pct(shares[0]), pct(shares[-1])
    return low if low == high else f"{low}-{high}"


def message(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return (f"The GPU is busy {r.gpu_busy_percent:.1f}% of the window with no single kernel dominating. Its "
                f"tensor-core GEMMs take {t(r.gemm_us / r.steps)} per step ({r.gemm_percent:.0f}% of the GPU time) at "
                f"{_span(r)} of this {r.card}'s ceilings ({_how(r)}): near what a GEMM reaches on this card ("
                + "; ".join(_kernel(k) for k in r.kernels) + f"). The larger cost is elsewhere: {r.other} kernels take "
                f"{t(r.other_us)} per step, {r.other_percent:.0f}% of the GPU time.")
    return (f"The GPU is busy {r.gpu_busy_percent:.1f}% of the window (Self CUDA {t(r.self_device_total_us)}, Self "
            f"CPU {t(r.self_cpu_total_us)}) with no single kernel dominating. Its tensor-core GEMMs take "
            f"{t(r.gemm_us)} and {t(r.headroom_us / r.steps)} per step more than at this {r.card}'s ceilings "
            f"({_how(r)}); most to gain in " + "; ".join(_kernel(k) for k in r.kernels) + ".")


def advice(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        see = (f"start with the {r.other} time ({r.other_percent:.0f}% of the GPU time): see {', '.join(r.named_by)}"
               if r.named_by else f"the {r.other} time ({r.other_percent:.0f}% of the GPU time) is in the table")
        return (f"Leave the GEMMs as they are: at {_span(r)} of the ceiling, torch.compile(mode='max-autotune') finds "
                f"no faster kernel for them; {see}.")
    k = r.kernels[0]
    return (f"Start with {short_name(k.name)} ({pct(k.ceiling_share)} of the {k.dtype} ceiling): check its shapes "
            "(multiples of 64; batch small GEMMs into one) and let torch.compile(mode='max-autotune') pick kernels "
            "for them; the GPU time outside GEMMs (elementwise, attention, the optimizer) is in the table.")


def fix(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return (f"The GEMMs run at {_span(r)} of the card's ceilings: leave them; the {r.other} kernels "
                f"({r.other_percent:.0f}% of the GPU time) are the larger cost.")
    k = r.kernels[0]
    return (f"{short_name(k.name)} runs at {k.tflops:.0f} of {k.ceiling_tflops:.0f} TFLOP/s ({k.dtype}), "
            f"{t(k.headroom_us / r.steps)} per step to gain: fix its shapes or autotune it "
            "(torch.compile(mode='max-autotune')).")


def basis(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return ("none claimed: a GEMM at 75% of the card's ceiling or more runs near what the card gives "
                "(max-autotune found nothing faster for such GEMMs)")
    return (f"per tensor-core GEMM call, its time minus its FLOPs at the card's ceiling ({_how(r)}), summed per "
            "step; kernels without FLOPs count nothing (a lower bound)")


NOTES = {
    SlowCall: lambda n: (f"{n.tflops:.0f} of {n.ceiling_tflops:.0f} TFLOP/s; {t(n.headroom_us)} above the "
                         "ceiling"),
}
