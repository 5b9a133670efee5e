"""dominant-event en español."""

from __future__ import annotations

from pista.i18n._fmt import num, pct, t
from pista.rules._common import short_name
from pista.rules.dominant_event import (
    IDLE_NAMED_BELOW,
    SMALL_GEMM_FLOPS,
    TILE_MULTIPLE,
    DominantEvent,
    Instance,
)

TITLE = "Un solo kernel, copia u operación domina el tiempo de GPU"

KIND = {"kernel": "El kernel", "copy": "La copia", "memset": "El memset", "op": "El operador"}
KIND_NOUN = {"copy": "una copia", "memset": "un memset"}
VERDICT = {"compute-bound": "la GPU es el límite", "balanced": "ningún lado domina", "cpu-only": "sin trabajo de GPU"}


def _how(measured: bool) -> str:
    return "medido" if measured else "estimado a partir de la ficha técnica"


def _ceiling(r: DominantEvent) -> str:
    g = r.rate
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    return f"techo {g.dtype} de {g.ceiling_tflops:.0f} TFLOP/s de esta {g.card} ({_how(g.ceiling_measured)})"


def _rate(r: DominantEvent) -> str:
    g = r.rate
    if g is None or g.tflops is None:
        return ""
    shape = ""
    if r.shape:
        b, m, n, k = r.shape
        shape = f" ({f'{b} x ' if b > 1 else ''}{m}x{n}x{k})"
    text = f" Hace {g.flops / max(g.rated_calls, 1) / 1e9:.1f} GFLOP por llamada{shape} a {g.tflops:.0f} TFLOP/s"
    if g.peak_tflops:
        assert g.peak_share is not None  # a rate (tflops) and a peak
        text += f", el {pct(g.peak_share)} del pico {g.dtype} de la ficha técnica ({g.peak_tflops:.0f} TFLOP/s)"
    if g.ceiling_tflops:
        assert g.ceiling_share is not None  # a rate (tflops) and a ceiling
        text += f" y el {pct(g.ceiling_share)} del {_ceiling(r)}"
    return text + "."


def message(r: DominantEvent) -> str:
    launched = "lanzada" if r.kind == "copy" else "lanzado"
    where = f", {launched} por {r.launched_by}" if r.kind != "op" and r.launched_by else ""
    text = (f"{KIND[r.kind]} {r.name} acumula el {num(r.share_percent, 2)}% del Self CUDA total de "
            f"{t(r.self_device_total_us)}{where}: {r.calls} llamada(s), {t(r.total_us)} en total, {t(r.avg_us)} por "
            f"llamada de media.{_rate(r)} La GPU está ocupada el {r.gpu_busy_percent:.1f}% de la ventana "
            f"({r.verdict}: {VERDICT.get(r.verdict, r.verdict)}).")
    if r.cause == "below-ceiling":
        text += f" En el techo tardaría {t(r.headroom_us / r.steps)} menos por paso."
    return text


def _below_advice(r: DominantEvent) -> str:
    g = r.rate
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    if r.shape and any(d % TILE_MULTIPLE for d in r.shape[1:]):
        b, m, n, k = r.shape
        return (f"su forma {m}x{n}x{k} deja a medias las teselas de los Tensor Cores: rellena M, N y K hasta "
                "múltiplos de 64 (vocabulario, tamaño oculto y de lote)")
    if g.flops / max(g.rated_calls, 1) < SMALL_GEMM_FLOPS:
        return ("cada llamada es demasiado pequeña para llenar la tarjeta: agrupa esos GEMM en uno (torch.bmm, un lote "
                "mayor) o captúralos en un CUDA graph")
    return ("deja que torch.compile(mode='max-autotune') elija un kernel mejor para esta forma, o prueba la otra "
            "disposición (transpón un operando); confirma con Nsight Compute (ncu) qué lo limita")


def _elsewhere(r: DominantEvent) -> str:
    """Dónde está el coste mayor si se deja el kernel: el resto del tiempo de GPU, el tiempo con la GPU inactiva."""
    parts = []
    if r.share_percent <= 95:
        parts.append(f"el otro {100 - r.share_percent:.0f}% del tiempo de GPU")
    if r.gpu_busy_percent < IDLE_NAMED_BELOW:
        parts.append(f"el {100 - r.gpu_busy_percent:.0f}% de la ventana con la GPU inactiva")
    return f"; mira después {' y '.join(parts)}" if parts else ""


def _name(r: DominantEvent) -> str:
    return short_name(r.name) if r.kind == "kernel" else r.name


def advice(r: DominantEvent) -> str:
    name = _name(r)
    g = r.rate
    if r.cause == "transfer":
        return (f"{name} es {KIND_NOUN.get(r.kind, 'una copia')}: mueve o borra bytes, no calcula. Mueve menos bytes "
                "(deja los tensores en la GPU, copia una sola vez, un dtype más pequeño), copia desde memoria fijada "
                "con non_blocking=True para que se solape con el cómputo (ver pageable-memcpy) y agrupa las copias "
                "pequeñas en una.")
    assert g is not None  # a kernel's or op's record: only a copy's (transfer) has no rate
    if r.cause == "at-ceiling":
        lower = ""
        if g.dtype in ("bf16", "fp16") and r.fp8:
            lower = " o fp8 (torch._scaled_mm, TransformerEngine) donde la exactitud lo permita"
        elif g.dtype == "tf32":
            lower = " o bf16 (torch.autocast) donde la exactitud lo permita"
        rest = (f"; el otro {100 - r.share_percent:.0f}% del tiempo de GPU es donde mirar después"
                if r.share_percent <= 95 else "")
        return (f"Deja {name} como está: a {g.tflops:.0f} TFLOP/s va tan rápido como esta tarjeta ejecuta {g.dtype}. "
                f"Solo menos trabajo lo acelera (menos GEMM o más pequeños){lower}{rest}.")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"Deja {name} como está: a {g.tflops:.0f} TFLOP/s, el {pct(g.ceiling_share)} del techo {g.dtype} de la "
                "tarjeta, va cerca de lo que un GEMM alcanza en esta tarjeta, y torch.compile(mode='max-autotune') no "
                f"encuentra un kernel más rápido para GEMM así{_elsewhere(r)}.")
    if r.cause == "below-ceiling":
        assert g.ceiling_share is not None  # below the ceiling: a rate and a ceiling
        return f"{name} va al {pct(g.ceiling_share)} del techo {g.dtype} de la tarjeta: {_below_advice(r)}."
    if r.cause == "precision":
        other = "fp32-gemm: TF32 o bf16" if g.dtype == "fp32" else "fp64-gemm: fp32/TF32 o bf16"
        return (f"{name} va en {g.dtype} a {g.tflops:.1f} TFLOP/s; la palanca es su precisión, no el kernel "
                f"(ver {other}, donde la exactitud lo permita).")
    if r.cause == "unknown-card":
        return (f"{name} va a {g.tflops:.0f} TFLOP/s en {g.dtype or 'un dtype desconocido'}; compáralo con la ficha "
                f"técnica de tu tarjeta ({r.device or 'la traza no nombra la GPU'} no está en la tabla de picos de "
                "pista).")
    if "elementwise" in r.name or "reduce" in r.name:
        return (f"{name} no es un GEMM: un kernel limitado por memoria va tan rápido como los bytes que mueve; "
                "fusiónalo con sus vecinos (torch.compile) o evita la pasada, y mide su ancho de banda con Nsight "
                "Compute (ncu).")
    return (f"{name} no es un operador GEMM del que pista sepa contar los FLOP: mira qué lo limita con Nsight Compute "
            "(ncu) antes de cambiarlo.")


def fix(r: DominantEvent) -> str:
    name = _name(r)
    g = r.rate
    if r.cause == "at-ceiling":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"{name} va a {g.tflops:.0f} TFLOP/s, en el techo {g.dtype} de esta tarjeta: déjalo, no hay nada que "
                "ganar en este kernel.")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"{name} va a {g.tflops:.0f} de {g.ceiling_tflops:.0f} TFLOP/s ({g.dtype}), cerca del techo de esta "
                f"tarjeta: déjalo{_elsewhere(r)}.")
    if r.cause == "below-ceiling":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"{name} va a {g.tflops:.0f} de {g.ceiling_tflops:.0f} TFLOP/s ({g.dtype}), "
                f"{t(r.headroom_us / r.steps)} por paso por ganar: {_below_advice(r)}.")
    if r.cause == "transfer":
        return (f"{name} es el {r.share_percent:.0f}% del tiempo de GPU: mueve menos bytes, desde memoria fijada con "
                "non_blocking=True.")
    if r.cause == "precision":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return f"{name} va en {g.dtype}: baja su precisión (ver {'fp32' if g.dtype == 'fp32' else 'fp64'}-gemm)."
    return f"{name} es el {r.share_percent:.0f}% del tiempo de GPU: mira qué lo limita con Nsight Compute (ncu)."


def basis(r: DominantEvent) -> str:
    g = r.rate
    if r.cause in ("at-ceiling", "below-ceiling"):
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"por llamada, su tiempo menos sus FLOP al techo {g.dtype} de la tarjeta ({g.ceiling_tflops:.0f} "
                f"TFLOP/s, {_how(g.ceiling_measured)}), sumado por paso")
    if r.cause == "near-ceiling":
        assert g is not None and g.ceiling_share is not None  # near the ceiling: a GEMM's rate against one
        return (f"nada reclamado: al {pct(g.ceiling_share)} del techo {g.dtype} de la tarjeta un GEMM va cerca de lo "
                "que da la tarjeta (max-autotune no encontró nada más rápido para GEMM así)")
    if r.cause == "precision":
        assert g is not None  # a GEMM's cause: only a copy's (transfer) has no rate
        return (f"no se cuenta aquí: lo que ahorra una precisión menor es de "
                f"{'fp32' if g.dtype == 'fp32' else 'fp64'}-gemm")
    if r.cause == "transfer":
        return "no se estima aquí: el coste de una copia es de las reglas de copias (pageable-memcpy, host-sync)"
    if r.cause == "unknown-card":
        return f"sin estimar: la GPU ({r.device or 'sin nombre'}) no está en la tabla de picos de pista"
    return "sin estimar: no hay recuento de FLOP para este kernel (pista cuenta los FLOP de los operadores GEMM)"


NOTES = {
    Instance: lambda n: "instancia más larga" + (f", {n.tflops:.0f} TFLOP/s" if n.tflops else ""),
}

DOCS = """Qué:
Un kernel, una copia o un memset (o un operador, contando el trabajo de dispositivo que lanzó) se lleva
la mayor parte del Self CUDA total, en una traza que no está limitada por el host. Para un GEMM la
regla dice cómo de rápido va frente a la tarjeta: sus FLOP (2*M*N*K a partir de las formas registradas
del operador que lo lanzó) entre su tiempo, junto al pico de la ficha técnica y al techo que un GEMM
real alcanza en ella (`pista.efficiency`). Es también el hallazgo de compute-bound: el veredicto dice
que la GPU es el límite; este dice adónde va su tiempo y si queda algo que ganar ahí.

Por qué:
Amdahl: recortar un 10% de un kernel que es el 95% del tiempo de GPU ahorra un 9.5%; hacer gratis todo
lo demás ahorra un 5%. Pero un kernel que ya va en el techo de la tarjeta no tiene nada más que dar:
solo menos trabajo o una precisión menor lo aceleran, y decir "optimízalo" manda al usuario a por nada.

Ejemplo:
`seed_mm4096_warm` (matmul_add eager a 4096, bf16, H200): nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT
acumula el 80.3% de los 639.9 µs de Self CUDA, 3 llamadas de 171.2 µs: 2*4096^3 FLOP cada una, 803
TFLOP/s, el 81% de los 989 bf16 densos de la H200 y por encima de los 757 medidos: déjalo (lo que gana
el seed está en su suma del bias aparte). gpu/fp32_gemm: el GEMM fp32 de 4096 a 51.2 TFLOP/s está en el
techo fp32 (50.9): la palanca es la precisión (fp32-gemm). gpu/pageable_memcpy: un Memcpy DtoH se lleva
el 81.7%: una copia, no cómputo.

Impacto:
Lo que ahorraría ejecutar el kernel en el techo de la tarjeta para su dtype: por llamada, su tiempo
menos FLOP / techo (0 para una llamada por encima del 90% del techo: la propia dispersión del techo
de una ejecución a otra), sumado por paso; el techo está medido en la H200 (bf16 756.7, tf32 355.2,
fp32 50.9 TFLOP/s...) y estimado a partir de la ficha técnica en las demás. seed_mm4096_warm,
seed_mm4096_compile, gpu/kernel_variability: 0 (info). En un GEMM fp32 o fp64 el ahorro es de la
precisión (fp32-gemm, fp64-gemm); en una copia, de las reglas de copias; en un kernel sin recuento
de FLOP (no es un operador GEMM) no se estima: 0, dicho en la base. En una traza limitada por el
host un kernel más rápido no ahorra nada (la GPU espera al host igualmente): ahí la regla calla
(antes hablaba en gpu/recompile, gpu/trailing_sync, seed_mm64_compile). Antes era siempre info;
ahora la gravedad sigue al impacto. El hallazgo aparte de compute-bound queda integrado aquí. Un GEMM al
75% del techo o más (NEAR_PEAK_SHARE, en pista.rules._dominant) no reclama nada: el autoajuste no ganó
nada medible en GEMM así (entre -30% y +0.5% en una H100 con las formas de tl_h100_qwen05,
tl_compile_triton y tl_sglang_prefilldecode), y la revisión 3 del issue 35 marcó como engañoso "deja que
max-autotune elija un kernel mejor" al 82-88%.

Solución:
Según lo que digan las cifras: en el techo, deja el kernel (menos trabajo, o fp8 donde la exactitud lo
permita); cerca de él (75% o más), déjalo también y mira el resto del tiempo de GPU y el tiempo con la GPU
inactiva; por debajo, formas que llenen la tarjeta (múltiplos de 64, GEMM pequeños agrupados, autoajuste
con `torch.compile(mode="max-autotune")`); en fp32/fp64, una precisión menor; en una copia, menos bytes
desde memoria fijada y sin bloquear. Si la traza está limitada por el host, arregla primero el host."""
