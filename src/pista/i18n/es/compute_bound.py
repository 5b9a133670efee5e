"""compute-bound en español."""

from __future__ import annotations

from pista.i18n import word
from pista.i18n._fmt import pct, t
from pista.rules._common import short_name
from pista.rules.compute_bound import ComputeBound, GemmKernel, NearPeak, SlowCall

TITLE = "Limitado por el cómputo: los GEMM frente al techo de la tarjeta"


def _kernel(k: GemmKernel) -> str:
    return (f"{short_name(k.name)} ({k.calls} llamadas, {t(k.total_us)}, {k.tflops:.0f} TFLOP/s {k.dtype}, el "
            f"{pct(k.ceiling_share)} de {k.ceiling_tflops:.0f})")


def _how(r: ComputeBound | NearPeak) -> str:
    return "medidos" if r.ceiling_measured else "estimados a partir de la ficha técnica"


def _span(r: NearPeak) -> str:
    shares = sorted(k.ceiling_share for k in r.kernels)
    low, high = pct(shares[0]), pct(shares[-1])
    return low if low == high else f"{low}-{high}"


def _other(r: NearPeak) -> str:
    return word(r.other, "es")


def message(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return (f"La GPU está ocupada el {r.gpu_busy_percent:.1f}% de la ventana sin que domine un solo kernel. Sus GEMM "
                f"en Tensor Cores tardan {t(r.gemm_us / r.steps)} por paso (el {r.gemm_percent:.0f}% del tiempo de GPU) "
                f"al {_span(r)} de los techos de esta {r.card} ({_how(r)}): cerca de lo que un GEMM alcanza en esta "
                "tarjeta (" + "; ".join(_kernel(k) for k in r.kernels) + f"). El coste mayor está en otra parte: los "
                f"kernels de {_other(r)} tardan {t(r.other_us)} por paso, el {r.other_percent:.0f}% del tiempo de GPU.")
    return (f"La GPU está ocupada el {r.gpu_busy_percent:.1f}% de la ventana (Self CUDA {t(r.self_device_total_us)}, "
            f"Self CPU {t(r.self_cpu_total_us)}) sin que domine un solo kernel. Sus GEMM en Tensor Cores tardan "
            f"{t(r.gemm_us)} y {t(r.headroom_us / r.steps)} por paso más que en los techos de esta {r.card} "
            f"({_how(r)}); donde más hay que ganar: " + "; ".join(_kernel(k) for k in r.kernels) + ".")


def advice(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        see = (f"empieza por el tiempo de {_other(r)} (el {r.other_percent:.0f}% del tiempo de GPU): ver "
               f"{', '.join(r.named_by)}" if r.named_by
               else f"el tiempo de {_other(r)} (el {r.other_percent:.0f}% del tiempo de GPU) está en la tabla")
        return (f"Deja los GEMM como están: al {_span(r)} del techo, torch.compile(mode='max-autotune') no encuentra un "
                f"kernel más rápido para ellos; {see}.")
    k = r.kernels[0]
    return (f"Empieza por {short_name(k.name)} (el {pct(k.ceiling_share)} del techo {k.dtype}): revisa sus formas "
            "(múltiplos de 64; agrupa los GEMM pequeños en uno) y deja que torch.compile(mode='max-autotune') elija "
            "kernels para ellas; el tiempo de GPU fuera de los GEMM (elemento a elemento, atención, el optimizador) "
            "está en la tabla.")


def fix(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return (f"Los GEMM van al {_span(r)} de los techos de la tarjeta: déjalos; los kernels de {_other(r)} (el "
                f"{r.other_percent:.0f}% del tiempo de GPU) son el coste mayor.")
    k = r.kernels[0]
    return (f"{short_name(k.name)} va a {k.tflops:.0f} de {k.ceiling_tflops:.0f} TFLOP/s ({k.dtype}), "
            f"{t(k.headroom_us / r.steps)} por paso por ganar: corrige sus formas o autoajústalo "
            "(torch.compile(mode='max-autotune')).")


def basis(r: ComputeBound | NearPeak) -> str:
    if isinstance(r, NearPeak):
        return ("nada reclamado: un GEMM al 75% del techo de la tarjeta o más va cerca de lo que da la tarjeta "
                "(max-autotune no encontró nada más rápido para GEMM así)")
    return (f"por llamada GEMM en Tensor Cores, su tiempo menos sus FLOP en el techo de la tarjeta ({_how(r)}), "
            "sumado por paso; los kernels sin FLOP no cuentan (una cota inferior)")


NOTES = {
    SlowCall: lambda n: (f"{n.tflops:.0f} de {n.ceiling_tflops:.0f} TFLOP/s; {t(n.headroom_us)} por encima del "
                         "techo"),
}

DOCS = """Qué:
El veredicto es compute-bound (la GPU está ocupada casi toda la ventana y el Self CUDA es del mismo orden
que el Self CPU) con el tiempo de GPU repartido entre muchos kernels, y los GEMM en Tensor Cores entre
ellos van claramente por debajo del techo de la tarjeta (o cerca de él mientras otro trabajo ocupa más
GPU). Nombra los kernels GEMM con más tiempo por
ganar: sus FLOP (de las formas registradas de los operadores que los lanzan) entre su tiempo, frente al
techo de la tarjeta para su dtype (`pista.efficiency`).

Por qué:
Cuando la GPU es el límite, solo un trabajo de GPU más barato acorta el paso, y los GEMM son donde se
conoce el pico de la tarjeta: un GEMM a la mitad del techo es tiempo que recuperar con mejores formas o
kernels; uno en el techo, no. Decir solo "la GPU es el límite" repite el veredicto.

Ejemplo:
gpu/gpt_bf16_fused (paso de entrenamiento de un GPT, bf16, H200, compute-bound): su mayor GEMM,
nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT, va a 729 TFLOP/s en 75 llamadas, cerca del techo
bf16 medido de la H200 (757); el tiempo de los GEMM por encima del techo es 52.6 µs de un paso de 16.4 ms
(0.3%), así que la regla calla: el tiempo del paso está en los demás kernels.

Impacto:
Por paso: la suma, sobre las llamadas GEMM en Tensor Cores (bf16, fp16, fp8, tf32), de su tiempo
menos sus FLOP en el techo de la tarjeta (0 para las que pasan del 90% del techo, su propia
dispersión); los kernels sin recuento de FLOP (convolución, atención, elemento a elemento) no
cuentan, así que es una cota inferior del tiempo de GPU por ganar. Los GEMM fp32 y fp64 quedan para
fp32-gemm/fp64-gemm (su palanca es la precisión). Por debajo del 1% del paso calla. Un kernel GEMM al
75% del techo o más (NEAR_PEAK_SHARE, en pista.rules._dominant: el autoajuste no ganó nada medible ahí) no
cuenta; donde todos los GEMM van ahí y otro tipo de trabajo ocupa más GPU que ellos, la regla lo dice como info, sin reclamar
nada, y señala ese trabajo (tl_h100_qwen05: GEMM al 82% del techo, elemento a elemento el 56% del tiempo de
GPU; la revisión 3 del issue 35 marcó como engañoso su "Empieza por el GEMM ... max-autotune"). Donde domina
un kernel u operador lo dice dominant-event (con su eficiencia) y esta regla calla: un hallazgo, no dos
(issue 14: antes imprimía "la GPU es el límite" junto a dominant-event en cada traza compute-bound,
siempre como info).

Solución:
Para los GEMM nombrados por debajo del 75% del techo: formas que llenen la tarjeta (múltiplos de 64;
agrupa los GEMM pequeños en uno), deja que `torch.compile(mode="max-autotune")` elija kernels para esas
formas, y revisa el resto del tiempo de GPU (elemento a elemento, atención, el optimizador) con la tabla
y Nsight Compute. Cerca del techo, deja los GEMM: el tiempo está en el otro trabajo."""
