"""cpu-fp32-gemm en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cpu_fp32_gemm import CpuFp32Gemm, Fp32Call

TITLE = "GEMM en fp32 en una CPU con bf16 nativo"


def _isa(r: CpuFp32Gemm) -> str:
    return "AMX" if r.amx else "AVX512-BF16"


def _rate(r: CpuFp32Gemm) -> str:
    return f" a {r.gflops:.0f} GFLOP/s" if r.gflops else ""


def message(r: CpuFp32Gemm) -> str:
    return (f"{', '.join(r.ops)} se ejecutan en fp32{_rate(r)}: {t(r.gemm_us)} por paso, el "
            f"{r.step_share_percent:.1f}% del paso, en una CPU con {_isa(r)} donde las GEMM en bf16 fueron "
            f"{r.speedup:.1f} veces más rápidas: unos {t(r.saved_us)} menos por paso.")


def advice(r: CpuFp32Gemm) -> str:
    return ("Ejecuta la pasada hacia delante dentro de un bloque torch.autocast(\"cpu\", dtype=torch.bfloat16) "
            "(la pasada hacia atrás la sigue); en inferencia puedes guardar el modelo en bf16 "
            "(model.to(torch.bfloat16)). Revisa una vez la curva de pérdida o las salidas: bf16 conserva el rango "
            "de fp32 con menos bits de mantisa.")


def fix(r: CpuFp32Gemm) -> str:
    return (f"{r.ops[0]} se ejecuta en fp32 en una CPU con {_isa(r)}: torch.autocast(\"cpu\", "
            f"dtype=torch.bfloat16) ahorra unos {t(r.saved_us)} por paso")


def basis(r: CpuFp32Gemm) -> str:
    return (f"el tiempo propio de CPU de las GEMM en fp32 por paso por 1 - 1/{r.speedup:.1f}, la aceleración en "
            "bf16 de aten::addmm medida en una AMD EPYC de 2 núcleos con AVX512-BF16 (gpu/cpu_linear_host frente a "
            "gpu/cpu_linear_bf16); una estimación para otras CPU y formas")


NOTES = {
    Fp32Call: lambda n: ("GEMM en fp32" + (f", entradas {list(map(list, n.dims))}" if n.dims else "")
                         + (f", {n.gflops:.0f} GFLOP/s" if n.gflops else "")),
}

DOCS = """Qué:
En una traza solo de CPU, las multiplicaciones de matrices (aten::mm, addmm, bmm, baddbmm, addbmm)
se ejecutan en fp32 en una CPU con GEMM bf16 nativas (AVX512-BF16 o AMX) y ocupan una parte grande
del paso. Las capacidades de la CPU no están en una traza de Kineto: la captura de pista (`pista
run`, `pista profile`, los callbacks de entrenamiento) las escribe en la traza como `pista_host`;
sin ellas la regla calla.

Por qué:
oneDNN ejecuta las GEMM en bf16 con AVX512-BF16 (`vdpbf16ps`) o con tiles AMX a dos o más veces la
velocidad de fp32, y mueve la mitad de bytes. Con `torch.autocast("cpu", dtype=torch.bfloat16)` las
GEMM van en bf16 mientras los parámetros, la pérdida y las reducciones que autocast deja en fp32
siguen en fp32; para entrenar y para casi toda la inferencia los bits de mantisa perdidos no
importan.

Ejemplo:
gpu/cpu_linear_host (`pista run linear --device cpu`: nn.Linear 1024, fp32, en una AMD EPYC de 2
núcleos con AVX512-BF16): aten::addmm y aten::mm ocupan 33 ms de un paso de 38 ms. El mismo paso en
bf16 (gpu/cpu_linear_bf16, `--dtype bf16`) tarda 14.5 ms, addmm pasa de 16.7 a 6.2 ms (2.7x).

Impacto:
El tiempo propio de CPU de las GEMM en fp32 por paso por 1 - 1/CPU_BF16_SPEEDUP (2.7, el addmm del
par anterior; un matmul de 1024^3 midió 20.2 ms en fp32 y 6.45 ms en bf16 en la misma CPU, 3.1x).
Una estimación: las CPU con AMX ganan más, y las conversiones que añade autocast cuestan algo. Calla
por debajo de MIN_STEP_SHARE.

Solución:
Ejecuta la pasada hacia delante dentro de `with torch.autocast("cpu", dtype=torch.bfloat16):` (o
guarda el modelo en bf16 para inferencia: `model.to(torch.bfloat16)`); `pista run WORKLOAD --device
cpu --dtype bf16` lo mide en las cargas integradas.
"""
