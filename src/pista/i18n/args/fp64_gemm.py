"""fp64-gemm: the arguments of its text (ftl/<lang>/fp64_gemm.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.fp64_gemm import Fp64Call, Fp64Gemm


def _shape(r: Fp64Gemm) -> str:
    b, m, n, k = r.shape
    return (f"{b} x " if b > 1 else "") + f"{m}x{n}x{k}"


def args(r: Fp64Gemm, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "ops": ", ".join(r.ops), "op": r.ops[0] if r.ops else "", "shape": _shape(r),
        "gemm_us": t(r.gemm_us), "kernel": r.kernel, "tflops": f"{r.tflops:.0f}", "target": r.target,
        "target_key": key(r.target), "card": r.card or "", "has_card": yes(r.card),
        "target_tflops": f"{r.target_tflops:.0f}", "saved_us": t(r.saved_us / r.steps),
    }


NOTES = {
    Fp64Call: lambda n, say: {"tflops": f"{n.tflops:.0f}", "saved_us": t(n.saved_us)},
}
