"""cpu-fp32-gemm in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cpu_fp32_gemm import CpuFp32Gemm, Fp32Call

TITLE = "fp32 GEMMs on a CPU with native bf16"


def _isa(r: CpuFp32Gemm) -> str:
    return "AMX" if r.amx else "AVX512-BF16"


def _rate(r: CpuFp32Gemm) -> str:
    return f" at {r.gflops:.0f} GFLOP/s" if r.gflops else ""


_CHECK = "lscpu | grep -oE 'avx512_bf16|amx_bf16'"


def _threads(r: CpuFp32Gemm) -> str:
    return (f" (counted after cpu-threads' fix: {r.threads_scale:.2f} of the GEMM time is left on all cores)"
            if r.threads_scale < 1 else "")


def message(r: CpuFp32Gemm) -> str:
    head = f"{', '.join(r.ops)} run in fp32{_rate(r)}: {t(r.gemm_us)} per step, {r.step_share_percent:.1f}% of the step"
    if not r.dtype_known:
        head += " (their dtype was not recorded: record_shapes was off; fp32 is torch's default)"
    if not r.known_cpu:
        return (f"{head}. The trace does not say which CPU recorded it: if that CPU has AVX512-BF16 or AMX "
                f"({_CHECK}), bf16 GEMMs ran {r.speedup:.1f}x faster on such a CPU, about {t(r.saved_us)} less per "
                "step; without them bf16 is slower.")
    return (f"{head}, on a CPU with {_isa(r)} where bf16 GEMMs ran {r.speedup:.1f}x faster: about {t(r.saved_us)} "
            f"less per step{_threads(r)}.")


def advice(r: CpuFp32Gemm) -> str:
    return ("Run the forward pass under `with torch.autocast(\"cpu\", dtype=torch.bfloat16):` (the backward follows "
            "it); for inference you can keep the model in bf16 (model.to(torch.bfloat16)). Check the loss curve "
            "or the outputs once: bf16 keeps fp32's range with fewer mantissa bits.")


def fix(r: CpuFp32Gemm) -> str:
    if not r.known_cpu:
        return (f"{r.ops[0]} runs in fp32: if the CPU has AVX512-BF16 or AMX ({_CHECK}), "
                f"torch.autocast(\"cpu\", dtype=torch.bfloat16) saves up to {t(r.saved_us)} per step")
    return (f"{r.ops[0]} runs in fp32 on a CPU with {_isa(r)}: torch.autocast(\"cpu\", dtype=torch.bfloat16) saves "
            f"about {t(r.saved_us)} per step")


def basis(r: CpuFp32Gemm) -> str:
    return (f"the fp32 GEMMs' own CPU time per step times 1 - 1/{r.speedup:.1f}, the bf16 speed-up of the GEMMs "
            "measured on a 2-core AMD EPYC with AVX512-BF16 (gpu/cpu_linear_host vs gpu/cpu_linear_bf16); an "
            "estimate for other CPUs and shapes" + (f"; the GEMM time first scaled by {r.threads_scale:.2f}, the "
                                                    "threads cpu-threads would add" if r.threads_scale < 1 else "")
            + ("; conditional: the trace does not say the CPU has bf16 GEMMs" if not r.known_cpu else ""))


NOTES = {
    Fp32Call: lambda n: ("fp32 GEMM" + (f", inputs {list(map(list, n.dims))}" if n.dims else "")
                         + (f", {n.gflops:.0f} GFLOP/s" if n.gflops else "")),
}
