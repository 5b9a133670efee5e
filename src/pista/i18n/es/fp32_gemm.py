"""fp32-gemm en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.fp32_gemm import FloatOp, Fp32Gemm, SimtKernel

TITLE = "GEMMs en fp32 completo sin Tensor Cores"


def _shape(r: Fp32Gemm) -> str:
    if not r.shape:
        return ""
    b, m, n, k = r.shape
    return f" (el más largo {f'{b} x ' if b > 1 else ''}{m}x{n}x{k})"


def _target(r: Fp32Gemm) -> str:
    if r.target_tflops is None:
        return (f"{r.target.upper()} (supuesto {r.assumed_speedup or 7:g} veces más rápido: {r.card or 'esta GPU'} no "
                "está en la tabla de picos de pista)")
    how = "medido" if r.target_measured else "estimado a partir de la ficha técnica"
    return f"el techo {r.target.upper()} de esta {r.card}, {r.target_tflops:.0f} TFLOP/s ({how})"


def message(r: Fp32Gemm) -> str:
    ops = f" para {', '.join(r.ops)}" if r.ops else ""
    rate = f", a {r.tflops:.1f} TFLOP/s" if r.tflops else ""
    conv = f" ({r.conv_kernels} de ellos de cuDNN, para convoluciones)" if r.conv_kernels else ""
    text = (f"{r.kernels} kernel(s) GEMM{conv} en fp32 completo en los núcleos CUDA{ops}{_shape(r)}: {t(r.gemm_us)}, el "
            f"{r.device_share_percent:.1f}% del tiempo de GPU{rate}. En {_target(r)} tardarían "
            f"{t(r.saved_us / r.steps)} menos de tiempo de GPU por paso.")
    if r.off_path:
        text += (f" Tal como se perfiló, el paso no los espera: la GPU está ocupada el {r.gpu_busy_percent:.0f}% de la "
                 "ventana y el resto espera al host, así que el paso solo se acorta cuando el host mantenga ocupada "
                 "la GPU (arregla eso primero, luego esto).")
    return text


def advice(r: Fp32Gemm) -> str:
    if r.target == "bf16":
        return (f"En {r.card or 'esta GPU'} (una GeForce) TF32 va al ritmo fp32 de los núcleos CUDA, así que "
                "torch.set_float32_matmul_precision('high') no ahorra nada: ejecuta los GEMM bajo "
                "torch.autocast('cuda', dtype=torch.bfloat16), el doble del ritmo fp32 en sus Tensor Cores.")
    if r.target == "fp16":
        return (f"{r.card or 'Esta GPU'} no tiene TF32: lleva los GEMM a sus Tensor Cores fp16 con precisión mixta, "
                "torch.autocast('cuda', dtype=torch.float16) y un torch.cuda.amp.GradScaler para entrenar.")
    return ("Permite TF32 con torch.set_float32_matmul_precision('high') (o torch.backends.cuda.matmul.allow_tf32 = "
            "True), o ejecuta bajo torch.autocast('cuda', dtype=torch.bfloat16) para que los GEMM usen los Tensor "
            "Cores.")


def fix(r: Fp32Gemm) -> str:
    ops = ", ".join(r.ops) or "los GEMM"
    change = {"fp16": "torch.autocast('cuda', dtype=torch.float16)",
              "bf16": "torch.autocast('cuda', dtype=torch.bfloat16)"}.get(
                  r.target, "torch.set_float32_matmul_precision('high')")
    rate = f" a {r.tflops:.0f} TFLOP/s" if r.tflops else ""
    verb = "va" if len(r.ops) == 1 else "van"
    return (f"{ops} {verb} en fp32 completo{rate}, {t(r.gemm_us / r.steps)} por paso: {change} ahorra unos "
            f"{t(r.saved_us / r.steps)} de tiempo de GPU por paso.")


def basis(r: Fp32Gemm) -> str:
    if r.off_path:
        return (f"la reproducción de los pasos perfilados con los GEMM en {r.target.upper()} no ahorra nada del paso: "
                f"liberan {t(r.saved_us / r.steps)} de tiempo de GPU por paso que el host aún no aprovecha")
    where = (f"en el techo {r.target.upper()} de la tarjeta" if r.target_tflops
             else f"con {r.target.upper()} supuesto {r.assumed_speedup or 7:g} veces más rápido (GPU fuera de la tabla "
                  "de picos)")
    return (f"por llamada GEMM fp32, su tiempo menos sus FLOP {where}, sumado por paso (una cota superior: los GEMM "
            "pequeños no llegan al techo, y si el host es el límite parte queda oculta)")


NOTES = {
    SimtKernel: lambda n: "kernel GEMM fp32 SIMT" + (f", {n.tflops:.1f} TFLOP/s" if n.tflops else ""),
    FloatOp: lambda n: (f"Input type float, dimensiones {[list(d) for d in n.dims]}" if n.dims
                        else "sin tipos de entrada registrados (record_shapes=False)"),
}

DOCS = """Qué:
Multiplicaciones de matrices en fp32 completo en los núcleos CUDA en lugar de los Tensor Cores:
operadores GEMM (aten::mm, addmm, bmm, matmul, linear...) cuyo `Input type` es float y cuyos kernels son
de la familia SIMT fp32 (`sgemm`, `gemmSN`, `cutlass_80_simt_sgemm_*`, `xmma_gemm_f32f32_f32f32_f32_...
_ffma_...` de cuBLAS), no los TF32 (`..._tf32f32_...`) ni los bf16/fp16.

Por qué:
Por defecto PyTorch hace las matmul fp32 con precisión completa (`torch.get_float32_matmul_precision()
== "highest"`), lo que las deja fuera de los Tensor Cores. En Hopper eso limita un GEMM grande a unos 51
TFLOP/s, mientras que TF32 hace la misma llamada varias veces más rápido y bf16 aún más; para entrenar
y para casi toda la inferencia los bits de mantisa perdidos no importan. Las tarjetas anteriores a
Ampere (V100, Turing) no tienen TF32: allí el camino a los Tensor Cores es la precisión mixta fp16;
Pascal y anteriores no tienen Tensor Cores, y la regla calla. Las GeForce Ampere y Ada (RTX 30xx/40xx)
hacen TF32 al ritmo fp32 de sus núcleos CUDA (whitepapers GA102 y Ada de NVIDIA: RTX 3090 35.6 y 35.6,
RTX 4090 82.6 y 82.6 TFLOP/s): allí TF32 no ahorra nada, y autocast bf16 duplica el ritmo.

Ejemplo:
gpu/fp32_gemm en una H200: una matmul fp32 de 4096x4096x4096 con TF32 desactivado ejecuta
`sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...` durante 2.684 ms (51.2 TFLOP/s). Con
`torch.set_float32_matmul_precision("high")` (gpu/tf32_gemm) la misma matmul elige
`sm90_xmma_gemm_f32f32_tf32f32_f32_...` y tarda 0.343 ms (400 TFLOP/s), 7.8 veces menos.

Impacto:
Por paso: lo que los GEMM fp32 ahorrarían en el techo TF32 de la tarjeta (fp16 en las que no tienen
TF32, bf16 en las que TF32 no es más rápido que fp32): por llamada, su tiempo menos sus FLOP a ese techo (`pista.efficiency`; una llamada sin formas
registradas se supone en el techo fp32 de la tarjeta). gpu/fp32_gemm: 2.30 ms de cada llamada de 2.68
ms con los 355 TFLOP/s TF32 medidos en la H200 (la ejecución real en TF32 ahorró 2.34 ms), crítico. Una
cota superior si la traza está limitada por el host (la GPU espera al host de todos modos). Por debajo
del 1% del paso calla. Antes era un aviso costara lo que costara.

Solución:
`torch.set_float32_matmul_precision("high")` (o `torch.backends.cuda.matmul.allow_tf32 = True`) para
usar TF32, o ejecuta el modelo bajo `torch.autocast("cuda", dtype=torch.bfloat16)`; deja "highest" solo
donde la precisión extra haga falta de verdad. En V100/Turing: autocast fp16 con un GradScaler."""
