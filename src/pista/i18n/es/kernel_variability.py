"""kernel-variability en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._common import short_name
from pista.rules.kernel_variability import KernelVariability, SlowCall, TypicalCall

TITLE = "El mismo kernel varía de una llamada a otra"


def _what(r: KernelVariability) -> str:
    parts = [r.launch_config or "sin configuración de lanzamiento en la traza"]
    if r.input_dims:
        parts.append(f"entradas {r.input_dims}")
    if r.launch:
        parts.append(f"lanzamiento {r.launch + 1} dentro de su operador")
    return f"{short_name(r.name)} ({', '.join(parts)})"


def _steps(r: KernelVariability) -> str:
    if not r.slow_steps:
        return ""
    meds = list(r.step_median_us.values())
    which = ("los pasos " if len(r.slow_steps) > 1 else "el paso ") + ", ".join(map(str, r.slow_steps))
    return f" Mediana por paso {min(meds):.1f}-{max(meds):.1f} µs; lento en {which}."


def message(r: KernelVariability) -> str:
    return (f"{_what(r)} en {r.calls} llamadas con las mismas entradas: mínimo {t(r.min_us)}, mediana "
            f"{t(r.median_us)}, p95 {t(r.p95_us)} ({r.p95_over_median:.2f}x), máximo {t(r.max_us)} "
            f"({r.max_over_median:.2f}x); las llamadas por encima de la mediana cuestan {t(r.excess_us)} más de lo "
            f"que costaría la mediana, {t(r.excess_us / r.steps)} por paso (el {r.step_share_percent:.1f}% del "
            f"paso).{_steps(r)}")


def advice(r: KernelVariability) -> str:
    where = (f"en {'los pasos' if len(r.slow_steps) > 1 else 'el paso'} {', '.join(map(str, r.slow_steps))}"
             if r.slow_steps else "en las llamadas más lentas")
    return (f"Mira qué más se ejecuta {where} junto a {short_name(r.name)} (otros streams, otros procesos, "
            "relojes: nvidia-smi), separa o serializa el trabajo que compite, y compara medianas por paso en lugar "
            "de medias.")


def fix(r: KernelVariability) -> str:
    where = (f" en {'los pasos' if len(r.slow_steps) > 1 else 'el paso'} {', '.join(map(str, r.slow_steps))}"
             if r.slow_steps else "")
    return (f"{short_name(r.name)} tarda hasta {r.max_over_median:.1f} veces su mediana con las mismas entradas{where}, "
            f"{t(r.excess_us / r.steps)} por paso: encuentra y separa el trabajo que compite con sus llamadas lentas.")


def basis(r: KernelVariability) -> str:
    return ("el tiempo de las llamadas por encima de la mediana de las llamadas con el mismo kernel, lanzamiento y "
            "entradas, sumado por paso (una cota superior: una llamada lenta fuera del camino crítico no cuesta nada)")


NOTES = {
    SlowCall: lambda n: f"{n.over_median:.2f}x la mediana",
    TypicalCall: lambda n: f"una llamada típica (la más cercana a la mediana de {t(n.median_us)})",
}

DOCS = """Qué:
El mismo kernel haciendo el mismo trabajo tarda muy distinto de una llamada a otra o de un paso a otro:
el mismo nombre, la misma configuración de lanzamiento (grid y block), lanzado por un operador con las
mismas entradas registradas (`Input Dims`, `Input type`, `Concrete Inputs`) y como el mismo lanzamiento
dentro de esa llamada del operador (una convolución de cuDNN lanza su kernel de relleno dos veces, sobre
dos tensores distintos). La cola de su distribución (p95, máximo) queda muy por encima de su mediana,
más allá del ruido del temporizador y de los relojes, y las llamadas lentas cuestan una parte medible
del paso.

Por qué:
Lanzamientos idénticos con trabajo idéntico deberían tardar lo mismo. Una dispersión grande significa
que algo fuera del kernel cambia: otros streams o procesos compartiendo los SM, relojes o potencia que
bajan, cachés o TLB frías tras otro trabajo, trabajo que depende de los datos (ordenaciones,
operaciones dispersas). La media lo esconde; las llamadas lentas son las que estiran el paso. Las
llamadas con entradas distintas son trabajo distinto: sus tiempos difieren solo por eso y no dicen nada.

Ejemplo:
`tests/fixtures/gpu/kernel_variability` (un mul elemento a elemento sobre 64 MiB, 8 llamadas por paso, y
un segundo stream con GEMMs en los pasos 3 y 6): vectorized_elementwise_kernel grid [32768,1,1] block
[128,1,1], 48 llamadas, mediana 33.5 µs, p95 53.2 µs (1.59x), máximo 54.2 µs; su mediana por paso es
32.0-32.2 µs salvo 50.7 µs y 51.8 µs en los pasos 3 y 6.

Impacto:
Por paso: el tiempo que las llamadas pasan por encima de la mediana de su propio grupo (mismo kernel,
lanzamiento y entradas), sumado y dividido entre los pasos: gpu/kernel_variability 240 µs en 6 pasos,
40 µs de un paso mediano de 406 µs (9.9%, aviso). Una cota superior: una llamada lenta en un stream
lateral puede quedar oculta tras el trabajo del stream principal. Por debajo del 1% del paso calla.
Antes era un aviso costara lo que costara, y agrupaba las llamadas solo por nombre, lanzamiento y
formas de entrada: en gpu/resnet50_bf16 señalaba nhwcAddPaddingKernel de cuDNN (1.9 µs rellenando los
pesos, 86 µs rellenando la entrada, ambos dentro de una misma convolución) y kernels de batch norm
lanzados fuera de cualquier operador (sin entradas que comparar); ambos han desaparecido.

Solución:
Busca qué se solapa con las llamadas lentas (las marcas de tiempo de la evidencia; otros streams, otros
procesos, nvidia-smi para los relojes), serializa o separa el trabajo que compite, calienta las cachés,
fija los relojes para medir y compara medianas por paso en lugar de medias."""
