"""cpu-fp32-gemm in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cpu_fp32_gemm import CpuFp32Gemm, Fp32Call

TITLE = "fp32 GEMMs on a CPU with native bf16"


def _isa(r: CpuFp32Gemm) -> str:
    return "AMX" if r.amx else "AVX512-BF16"


def _rate(r: CpuFp32Gemm) -> str:
    return f" at {r.gflops:.0f} GFLOP/s" if r.gflops else ""


def message(r: CpuFp32Gemm) -> str:
    return (f"{', '.join(r.ops)} run in fp32{_rate(r)}: {t(r.gemm_us)} per step, {r.step_share_percent:.1f}% of "
            f"the step, on a CPU with {_isa(r)} where bf16 GEMMs ran {r.speedup:.1f}x faster: about "
            f"{t(r.saved_us)} less per step.")


def advice(r: CpuFp32Gemm) -> str:
    return ("Run the forward pass under `with torch.autocast(\"cpu\", dtype=torch.bfloat16):` (the backward follows "
            "it); for inference you can keep the model in bf16 (model.to(torch.bfloat16)). Check the loss curve "
            "or the outputs once: bf16 keeps fp32's range with fewer mantissa bits.")


def fix(r: CpuFp32Gemm) -> str:
    return (f"{r.ops[0]} runs in fp32 on a CPU with {_isa(r)}: torch.autocast(\"cpu\", dtype=torch.bfloat16) saves "
            f"about {t(r.saved_us)} per step")


def basis(r: CpuFp32Gemm) -> str:
    return (f"the fp32 GEMMs' own CPU time per step times 1 - 1/{r.speedup:.1f}, the bf16 speed-up of aten::addmm "
            "measured on a 2-core AMD EPYC with AVX512-BF16 (gpu/cpu_linear_host vs gpu/cpu_linear_bf16); an "
            "estimate for other CPUs and shapes")


NOTES = {
    Fp32Call: lambda n: ("fp32 GEMM" + (f", inputs {list(map(list, n.dims))}" if n.dims else "")
                         + (f", {n.gflops:.0f} GFLOP/s" if n.gflops else "")),
}
