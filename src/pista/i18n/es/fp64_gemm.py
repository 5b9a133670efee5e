"""fp64-gemm en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.fp64_gemm import Fp64Call, Fp64Gemm

TITLE = "GEMMs en doble precisión (fp64)"
_HOW = {"tf32": "float32 con TF32 (torch.set_float32_matmul_precision('high'))", "fp32": "float32"}


def _shape(r: Fp64Gemm) -> str:
    b, m, n, k = r.shape
    return (f"{b} x " if b > 1 else "") + f"{m}x{n}x{k}"


def message(r: Fp64Gemm) -> str:
    return (f"{r.calls} llamada(s) GEMM en fp64 ({', '.join(r.ops)}; la mayor {_shape(r)}) tardan {t(r.gemm_us)} en "
            f"{r.kernel} a {r.tflops:.0f} TFLOP/s; en {r.target} la {r.card or 'tarjeta'} llega a "
            f"{r.target_tflops:.0f} TFLOP/s, {t(r.saved_us / r.steps)} menos por paso.")


def advice(r: Fp64Gemm) -> str:
    return (f"Deja los tensores de {', '.join(r.ops)} en {_HOW[r.target]} (o bf16 con autocast): busca dónde entra "
            "float64 (torch.from_numpy de un array float64, floats de Python, dtype=torch.double) y conviértelo una "
            "vez; guarda float64 solo para las reducciones que lo necesiten.")


def fix(r: Fp64Gemm) -> str:
    return (f"{r.ops[0]} corre en fp64 ({_shape(r)}, {r.tflops:.0f} TFLOP/s): convierte sus entradas a float32 con "
            f"TF32 o a bf16; ahorra hasta {t(r.saved_us / r.steps)} por paso.")


def basis(r: Fp64Gemm) -> str:
    return (f"por llamada, su tiempo menos sus FLOPs al techo {r.target} de la tarjeta ({r.target_tflops:.0f} "
            "TFLOP/s), por paso (cota superior: el algoritmo puede necesitar fp64)")


NOTES = {
    Fp64Call: lambda n: f"GEMM fp64 a {n.tflops:.0f} TFLOP/s; {t(n.saved_us)} menos en una precisión más rápida",
}

DOCS = """Qué:
Multiplicaciones de matrices y convoluciones en doble precisión: ops GEMM cuyo `Input type` es double
(tensores `torch.float64`, a menudo sin querer: `torch.from_numpy` de un array float64, una lista de
floats de Python, `dtype=torch.double`), en kernels como `sm90_xmma_gemm_f64f64_...`.

Por qué:
Las unidades fp64 son una parte pequeña de una GPU: en una H200 los tensor cores fp64 llegan a 67
TFLOP/s frente a 989 en bf16 y 494 en TF32 (unas 15x y 7x), y las tarjetas de consumo e inferencia
(L4, T4) corren fp64 a 1/32-1/64 de fp32. El aprendizaje profundo rara vez necesita 53 bits de mantisa.

Ejemplo:
gpu/fp64_gemm en una H200: una matmul fp64 de 4096x4096x4096 corre `sm90_xmma_gemm_f64f64_f64f64_...`
durante 2.29 ms por llamada (60 TFLOP/s, por encima de los 56 medidos); la misma en fp32 con TF32
(gpu/tf32_gemm) tarda 0.343 ms.

Impacto:
Por paso: por llamada, su tiempo menos sus FLOPs al techo de la tarjeta en la precisión en que podría
correr (TF32 donde la tarjeta lo tiene, si no fp32 donde fp32 es más rápido que fp64, de
`pista.efficiency`), una cota superior (el algoritmo puede necesitar la precisión). gpu/fp64_gemm:
1.94 ms de cada llamada de 2.29 ms.

Solución:
Deja los tensores en float32 (`.float()`, `torch.from_numpy(a).float()`, `torch.set_default_dtype(
torch.float32)`) con `torch.set_float32_matmul_precision("high")`, o en bf16 con autocast; guarda
float64 solo para las pocas reducciones que lo necesiten."""
