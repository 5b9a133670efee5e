"""implicit-copy-before-gemm en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._common import short_name
from pista.rules.implicit_copy_before_gemm import Fill, FillCall, FillGroup, GemmAfter, ImplicitCopy

TITLE = "El memset/copia propio de la biblioteca GEMM antes de cada GEMM cuesta tiempo de GPU"


def _steps(steps: tuple[int, ...]) -> str:
    if len(steps) == 1:
        return f"el paso {steps[0]}"
    if len(steps) <= 3:
        return "los pasos " + ", ".join(map(str, steps))
    return f"los pasos {steps[0]}-{steps[-1]} ({len(steps)} pasos)"


def _group(g: FillGroup) -> str:
    where = f" en {_steps(g.steps)}" if g.steps else ""
    return f"{g.count} x {g.fill} de {g.op} antes de {short_name(g.gemm)}{where}"


def message(r: ImplicitCopy) -> str:
    return (f"{r.pairs} memset/copia que el programa no escribió se ejecutaron justo antes del kernel GEMM de su "
            "propio operador: " + "; ".join(_group(g) for g in r.groups)
            + (f"; y {r.more_groups} tipo(s) más" if r.more_groups else "")
            + f". {t(r.device_us)} en la GPU y {t(r.host_api_us)} de llamadas a la API en el host; el GEMM empieza "
            f"entre {t(r.gap_us_min)} y {t(r.gap_us_max)} después, ya encolado en {r.queued} de {r.pairs} casos. Sin "
            f"ellos la GPU ganaría {t(r.cost_us / r.steps)} por paso, el {r.step_share_percent:.1f}% del paso.")


def advice(r: ImplicitCopy) -> str:
    g = r.groups[0]
    return (f"La biblioteca GEMM (cuBLAS, cuDNN) limpia su espacio de trabajo antes de cada llamada a "
            f"{short_name(g.gemm)}; aquí cuesta tiempo porque los GEMM son muchos y cortos. Agrúpalos en menos GEMM "
            "y más grandes (torch.bmm, un lote mayor), o captura el paso como CUDA graph "
            "(torch.compile(mode='reduce-overhead')); otra disposición o dtype puede elegir un kernel sin el memset.")


def fix(r: ImplicitCopy) -> str:
    g = r.groups[0]
    return (f"{g.op} limpia el espacio de trabajo de la biblioteca GEMM antes de cada una de sus {g.count} llamadas a "
            f"{short_name(g.gemm)}, {t(r.cost_us / r.steps)} de tiempo de GPU por paso: agrupa los GEMM pequeños o "
            "captura el paso como CUDA graph.")


def basis(r: ImplicitCopy) -> str:
    return ("el tiempo de GPU desde el inicio de cada memset hasta el inicio de su GEMM cuando el GEMM ya estaba "
            "encolado, solo el memset cuando la GPU esperaba al host, por paso")


NOTES = {
    Fill: lambda n: f"lanzado dentro de {n.op}; cuesta a la GPU {t(n.cost_us)}",
    FillCall: lambda n: f"su llamada a la API en el host, {t(n.dur_us)}",
    GemmAfter: lambda n: (f"el GEMM, empieza {t(n.gap_us)} después en el mismo stream"
                          + (" (ya encolado)" if n.queued else " (lanzado después)")),
}

DOCS = """Qué:
Un `Memset` o un `Memcpy DtoD` que el programa nunca pidió, lanzado por un operador GEMM (aten::mm,
aten::addmm, una convolución de cuDNN...) justo antes del propio kernel GEMM de ese operador en el mismo
stream, cuando entre todos cuestan una parte medible del paso. Por debajo de eso la regla calla: el
memset es normal.

Por qué:
cuBLAS/cuBLASLt (y cuDNN) limpian unos bytes de su espacio de trabajo antes de muchos kernels GEMM: los
nvjet cooperativos (`..._coopA_...`, `..._coopB_...`), los xmma con segment-K, los GEMM SIMT de CUTLASS,
las convoluciones implicit-GEMM. Es un `Memset (Device)` de 4 bytes antes de cada una de esas llamadas,
con epílogo o sin él: el aten::mm simple de seed_mm4096_warm lo tiene igual que el addmm compilado con
bias de seed_mm4096_compile (la documentación de esta regla culpaba al epílogo fusionado; se
equivocaba). En la GPU cuesta el memset (menos de 1 µs) y el hueco antes del GEMM; en el host, un
cudaMemsetAsync más por GEMM, que es sobrecarga del host como cualquier lanzamiento. Para GEMM grandes no
es nada; solo se nota con muchos GEMM pequeños en un stream limitado por la GPU, y explica filas
"Memset (Device)" en la tabla que ninguna línea del programa escribió.

Ejemplo:
`seed_mm4096_compile` (matmul_add compilado a 4096, addmm con epílogo de bias): en cada paso aten::addmm
emite cudaMemsetAsync (13.7-19.4 µs de host) y un Memset (Device) de 0.768 µs en el stream 7; después
nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT empieza 19.8-24.0 µs más tarde, cuando el host lo
ha lanzado: la GPU perdió los 0.8 µs del memset, el 0.2% del paso.

Impacto:
Por paso, lo que la GPU ganaría sin los memsets: cuando el GEMM ya estaba encolado al ejecutarse el
memset, el tiempo desde el inicio del memset hasta el inicio del GEMM (el memset y el hueco que añade);
cuando la GPU esperaba a que el host lanzara el GEMM, solo el tiempo del propio memset (el
cudaMemsetAsync del host es sobrecarga del host, que cuenta overhead-bound). Calla por debajo del 1.5%
del paso, donde el paso es al menos el trabajo de GPU que contiene (en una traza limitada por la GPU los
ProfilerStep terminan cuando el host ha encolado el paso: los de seed_mm4096_warm duran 160 µs para
213 µs de trabajo de GPU por paso). En los fixtures calla en todos: seed_mm4096_warm 0.9%, gpu/bias_addmm
1.0%, gpu/resnet50_bf16 0.4%, gpu/gpt_bf16_fused 0.2%, big_gpt_eager_20steps 0.05%; antes saltaba (info)
en cada traza con un GEMM addmm.

Solución:
Normalmente nada. Cuando importa (muchos GEMM pequeños, limitado por la GPU): captura el paso como CUDA
graph (`torch.compile(mode="reduce-overhead")`), agrupa los GEMM pequeños en uno (bmm), o prueba otra
disposición o dtype, que puede elegir un kernel sin el memset previo."""
