"""compute-bound in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules._common import short_name
from pista.rules.compute_bound import ComputeBound, GemmKernel, SlowCall

TITLE = "Compute bound: GEMMs run below the card's ceiling"


def _kernel(k: GemmKernel) -> str:
    return (f"{short_name(k.name)} ({k.calls} calls, {t(k.total_us)}, {k.tflops:.0f} TFLOP/s {k.dtype}, "
            f"{pct(k.ceiling_share)} of {k.ceiling_tflops:.0f})")


def _how(r: ComputeBound) -> str:
    return "measured" if r.ceiling_measured else "estimated from the datasheet"


def message(r: ComputeBound) -> str:
    return (f"The GPU is busy {r.gpu_busy_percent:.1f}% of the window (Self CUDA {t(r.self_device_total_us)}, Self "
            f"CPU {t(r.self_cpu_total_us)}) with no single kernel dominating. Its tensor-core GEMMs take "
            f"{t(r.gemm_us)} and {t(r.headroom_us / r.steps)} per step more than at this {r.card}'s ceilings "
            f"({_how(r)}); most to gain in " + "; ".join(_kernel(k) for k in r.kernels) + ".")


def advice(r: ComputeBound) -> str:
    k = r.kernels[0]
    return (f"Start with {short_name(k.name)} ({pct(k.ceiling_share)} of the {k.dtype} ceiling): check its shapes "
            "(multiples of 64; batch small GEMMs into one) and let torch.compile(mode='max-autotune') pick kernels "
            "for them; the GPU time outside GEMMs (elementwise, attention, the optimizer) is in the table.")


def fix(r: ComputeBound) -> str:
    k = r.kernels[0]
    return (f"{short_name(k.name)} runs at {k.tflops:.0f} of {k.ceiling_tflops:.0f} TFLOP/s ({k.dtype}), "
            f"{t(k.headroom_us / r.steps)} per step to gain: fix its shapes or autotune it "
            "(torch.compile(mode='max-autotune')).")


def basis(r: ComputeBound) -> str:
    return (f"per tensor-core GEMM call, its time minus its FLOPs at the card's ceiling ({_how(r)}), summed per "
            "step; kernels without FLOPs count nothing (a lower bound)")


NOTES = {
    SlowCall: lambda n: (f"{n.tflops:.0f} of {n.ceiling_tflops:.0f} TFLOP/s; {t(n.headroom_us)} above the "
                         "ceiling"),
}
