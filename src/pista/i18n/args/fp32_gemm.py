"""fp32-gemm: the arguments of its text (ftl/<lang>/fp32_gemm.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.fp32_gemm import FloatOp, Fp32Gemm, SimtKernel


def _shape(r: Fp32Gemm) -> dict[str, str]:
    b, m, n, k = r.shape or (0, 0, 0, 0)
    return {"has_shape": yes(r.shape), "batched": yes(b > 1), "b": str(b), "m": str(m), "n": str(n), "k": str(k)}


def args(r: Fp32Gemm, say: Say) -> dict[str, str]:
    return {
        "kernels": str(r.kernels), "has_conv": yes(r.conv_kernels), "conv_kernels": str(r.conv_kernels),
        "has_ops": yes(r.ops), "ops": ", ".join(r.ops), "single_op": yes(len(r.ops) == 1), **_shape(r),
        "gemm_us": t(r.gemm_us), "gemm_step_us": t(r.gemm_us / r.steps), "share": f"{r.device_share_percent:.1f}",
        "has_rate": yes(r.tflops), "rate": f"{r.tflops:.1f}" if r.tflops else "",
        "rate_round": f"{r.tflops:.0f}" if r.tflops else "",
        "target": key(r.target), "target_name": r.target.upper(), "known": yes(r.target_tflops is not None),
        "ceiling": yes(r.target_tflops), "target_tflops": f"{r.target_tflops:.0f}" if r.target_tflops else "",
        "measured": yes(r.target_measured), "speedup": f"{r.assumed_speedup or 7:g}",
        "has_card": yes(r.card), "card": r.card or "",
        "saved_us": t(r.saved_us / r.steps), "off_path": yes(r.off_path), "busy": f"{r.gpu_busy_percent:.0f}",
    }


NOTES = {
    SimtKernel: lambda n, say: {"has_rate": yes(n.tflops), "rate": f"{n.tflops:.1f}" if n.tflops else ""},
    FloatOp: lambda n, say: {"has_dims": yes(n.dims), "dims": str([list(d) for d in n.dims])},
}
