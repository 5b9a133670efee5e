"""cpu-fp32-gemm: the arguments of its text (ftl/<lang>/cpu_fp32_gemm.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.cpu_fp32_gemm import CpuFp32Gemm, Fp32Call


def args(r: CpuFp32Gemm, say: Say) -> dict[str, str]:
    return {
        "ops": ", ".join(r.ops), "op": r.ops[0] if r.ops else "",
        "has_rate": yes(r.gflops), "rate": f"{r.gflops:.0f}" if r.gflops else "",
        "gemm_us": t(r.gemm_us), "share": f"{r.step_share_percent:.1f}", "dtype_known": yes(r.dtype_known),
        "known_cpu": yes(r.known_cpu), "isa": "AMX" if r.amx else "AVX512-BF16", "speedup": f"{r.speedup:.1f}",
        "saved_us": t(r.saved_us), "threads": yes(r.threads_scale < 1), "threads_scale": f"{r.threads_scale:.2f}",
    }


NOTES = {
    Fp32Call: lambda n, say: {"has_dims": yes(n.dims), "dims": str(list(map(list, n.dims))),
                              "has_rate": yes(n.gflops), "rate": f"{n.gflops:.0f}" if n.gflops else ""},
}
