"""Español: títulos, consejos, mensajes (a partir de las métricas de cada hallazgo) y documentación.

Los mensajes son funciones de `metrics`; si falta una clave, `pista.i18n` deja el mensaje en inglés.
"""

from __future__ import annotations

from typing import Any

from pista.i18n import Entry

M = dict[str, Any]


def t(us: float) -> str:
    """Una duración en µs, escrita en µs o ms (como en los mensajes en inglés)."""
    us = float(us)
    return f"{us / 1000.0:.3f} ms" if abs(us) >= 1000.0 else f"{us:.3f} µs"


def _kind(m: M) -> str:
    return {"op": "El operador", "kernel": "El kernel", "annotation": "La región", "copy": "La copia",
            "memset": "El memset"}.get(str(m.get("kind")), "El evento")


def _dominant_advice(m: M) -> str:
    if m["kind"] in ("copy", "memset"):
        return (f"{m['name']} mueve o borra bytes, no calcula: mueve menos bytes (deja los tensores en la GPU, "
                "copia una sola vez, un dtype más pequeño), copia desde memoria fijada con non_blocking=True "
                "para que se solape con el cómputo (ver pageable-memcpy) y agrupa las copias pequeñas en una.")
    if m["host_bound"]:
        return ("La traza está limitada por el host, así que este kernel aún no es el límite: recorta primero la "
                f"sobrecarga del host (ver overhead-bound); después, {m['name']} es donde se va el tiempo de GPU.")
    return (f"Empieza a optimizar la GPU por {m['name']}: menor precisión donde la exactitud lo permita, mejores "
            "formas, epílogos fusionados o menos llamadas.")


def _steps(m: M) -> str:
    steps = m.get("steps") or []
    return f" (pasos {', '.join(str(s) for s in steps)})" if steps else ""


_OVERHEAD_ADVICE = {
    "per-op": ("Haz más trabajo por llamada: agrupa las entradas en lotes, fusiona operaciones (torch.compile) "
               "o captura el paso como un CUDA graph para pagar una sola vez el coste de lanzamiento y despacho."),
    "compile": ("La mayor parte del tiempo del host es torch.compile compilando, no sobrecarga por operación: "
                "saca las compilaciones del régimen estable (ver recompilation) y perfila después del "
                "calentamiento; solo entonces fusiona o agrupa."),
    "profiler": ("La mayor parte del tiempo del host es trabajo del propio profiler, no del programa: perfila "
                 "más pasos con torch.profiler.schedule(wait, warmup, active) para pagarlo una vez en muchos "
                 "pasos (ver profiler-overhead) y vuelve a leer el veredicto."),
    "region": ("La mayor parte del tiempo del host está en una región que apenas alimenta a la GPU: saca ese "
               "trabajo del camino de la GPU (workers del DataLoader, prefetch, pin_memory con copias "
               "non_blocking) o, si es preparación de una sola vez, calienta antes de perfilar (ver gpu-idle, "
               "dead-window)."),
}


def _overhead_cause(m: M) -> str:
    share = f"{t(m['cause_us'])}, el {m['cause_share_percent']:.0f}% del tiempo propio del host"
    if m["cause"] == "compile":
        return f" La mayor parte del tiempo del host es torch.compile compilando ({share})."
    if m["cause"] == "profiler":
        return f" La mayor parte del tiempo del host son los eventos de sobrecarga del propio profiler ({share})."
    if m["cause"] == "region":
        launches = int(m["cause_launches"])
        per = (f"{t(m['cause_us'] / launches)} de host por lanzamiento" if launches else "ningún lanzamiento")
        return (f" La mayor parte del tiempo del host está en '{m['cause_region']}' ({share}; {launches} "
                f"lanzamiento(s), {per}).")
    return ""


_GPU_IDLE_ADVICE = {
    "data": ("Saca ese trabajo del host del camino crítico de la GPU: workers del DataLoader con pin_memory y "
             "prefetch, prepara el lote siguiente mientras la GPU calcula, genera los datos en la GPU y saca "
             "del paso los checkpoints y los logs."),
    "compile": ("Los huecos son torch.compile compilando: deja las compilaciones fuera de los pasos perfilados "
                "(calienta con las formas reales, marca las dimensiones dinámicas; ver recompilation) y perfila "
                "el régimen estable."),
    "profiler": ("Los huecos son trabajo del propio profiler (sus peticiones de búfer): perfila más pasos con "
                 "torch.profiler.schedule(wait, warmup, active) para pagarlo una vez y vuelve a mirar los huecos "
                 "(ver profiler-overhead)."),
    "cold": ("Los huecos son preparación de una sola vez en el primer paso (carga perezosa de módulos, handles "
             "de bibliotecas, el asignador creciendo): calienta antes de perfilar (schedule(wait=1, warmup=1, "
             "active=N)) y lee los pasos estables (ver cold-start, dead-window)."),
}


def _host_under_gaps(m: M) -> str:
    regions = m.get("regions_us") or {}
    ops = m.get("ops_self_us") or {}
    text = ""
    if regions:
        text += " Bajo ellos el host ejecuta " + ", ".join(f"'{n}' ({t(v)})" for n, v in regions.items())
    if ops:
        text += ("; la mayor parte del tiempo propio en " if text else " La mayor parte del tiempo propio del host "
                 "bajo ellos está en ") + ", ".join(f"{n} {t(v)}" for n, v in ops.items())
    return text + "." if text else ""


# Evidence notes: each pattern matches one note as the rules write it, whole; the replacement uses
# its groups. A duration is kept as written ("1.409 ms", "28.575 µs").
_D = r"-?[0-9.]+ (?:ms|µs)"
NOTES: list[tuple[str, str]] = [
    (rf"(?P<a>{_D}) of wrapper host time for (?P<b>{_D}) of GPU work launched",
     r"\g<a> de tiempo de host en los wrappers para \g<b> de trabajo de GPU lanzado"),
    (rf"(?P<a>{_D}) of wrapper host time for (?P<b>{_D}) of GPU work launched \(incl\. (?P<c>{_D}) cache lookup\)",
     r"\g<a> de tiempo de host en los wrappers para \g<b> de trabajo de GPU lanzado (incl. \g<c> de consulta de caché)"),
    (r"guard check before the call", "comprobación de guards antes de la llamada"),
    (r"longest communication", "la comunicación más larga"),
    (r"longest instance", "la instancia más larga"),
    (r"longest device work", "el trabajo de dispositivo más largo"),
    (rf"largest self CPU time: (?P<d>{_D})", r"de los mayores tiempos propios de CPU: \g<d>"),
    (r"(?P<n>[0-9]+) launches of this kernel in the steps", r"\g<n> lanzamientos de este kernel en los pasos"),
    (r"its launch call", "su llamada de lanzamiento"),
    (r"the op that dispatched it", "el operador que lo despachó"),
    (r"inside (?P<x>.+), (?P<p>[0-9.]+)% of its wall time", r"dentro de \g<x>, el \g<p>% de su tiempo de pared"),
    (r"inside (?P<x>.+), (?P<p>[0-9.]+)% of its wall time; all (?P<n>[0-9]+) there: (?P<q>[0-9.]+)%",
     r"dentro de \g<x>, el \g<p>% de su tiempo de pared; los \g<n> de ahí: \g<q>%"),
    (r"inside (?P<x>\S+) in (?P<y>.+)", r"dentro de \g<x> en \g<y>"),
    (r"inside (?P<x>.+)", r"dentro de \g<x>"),
    (r"(?P<r>[0-9.]+)x the median of steps (?P<a>[0-9]+)-(?P<b>[0-9]+)", r"\g<r>x la mediana de los pasos \g<a>-\g<b>"),
    (r"(?P<r>[0-9.]+)x the median of step (?P<a>[0-9]+)", r"\g<r>x la mediana del paso \g<a>"),
    (r"(?P<r>[0-9.]+)x the median of the (?P<n>[0-9]+) later calls?", r"\g<r>x la mediana de las \g<n> llamadas posteriores"),
    (r"(?P<r>[0-9.]+)x the median", r"\g<r>x la mediana"),
    (rf"self time (?P<d>{_D})", r"tiempo propio \g<d>"),
    (r"a steady-state one, for comparison", "uno ya estable, para comparar"),
    (rf"compile (?P<c>[0-9]+/[0-9]+): (?P<d>{_D})", r"compilación \g<c>: \g<d>"),
    (rf"compile: (?P<d>{_D})", r"compilación: \g<d>"),
    (r"compiled region call \(frame/recompile count\)", "llamada a la región compilada (frame/recompilación)"),
    (r"launched inside (?P<x>.+)", r"lanzado dentro de \g<x>"),
    (r"its host API call", "su llamada a la API en el host"),
    (rf"the GEMM, starts (?P<d>{_D}) after it on the same stream", r"el GEMM, que empieza \g<d> después en el mismo stream"),
    (r"from (?P<x>.+) to its first kernel launch", r"de \g<x> a su primer lanzamiento de kernel"),
    (r"from (?P<x>.+) to its first aten:: op", r"de \g<x> a su primer op aten::"),
    (r"the region", "la región"),
    (r"its first kernel launch", "su primer lanzamiento de kernel"),
    (r"its first kernel launch inside (?P<x>.+)", r"su primer lanzamiento de kernel, dentro de \g<x>"),
    (r"its first aten:: op", "su primer op aten::"),
    (r"its first aten:: op inside (?P<x>.+)", r"su primer op aten::, dentro de \g<x>"),
    (rf"in the window, self time (?P<d>{_D})", r"en la ventana, tiempo propio \g<d>"),
    (rf"the region with (?P<d>{_D}) of host self time", r"la región con \g<d> de tiempo propio del host"),
    (rf"(?P<d>{_D}) of GPU work outstanding", r"\g<d> de trabajo de GPU pendiente"),
    (rf"(?P<d>{_D}) of GPU work outstanding in '(?P<x>.*)'", r"\g<d> de trabajo de GPU pendiente en '\g<x>'"),
    (rf"first of (?P<n>[0-9]+) queries \((?P<k>.*)\), (?P<d>{_D})", r"la primera de \g<n> consultas (\g<k>), \g<d>"),
    (rf"the launch they preceded, (?P<d>{_D}) after the last query",
     r"el lanzamiento al que precedieron, \g<d> después de la última consulta"),
    (r"the kernel it launched", "el kernel que lanzó"),
    (r"(?P<m>[0-9.]+) MiB at (?P<r>[0-9.]+) GB/s", r"\g<m> MiB a \g<r> GB/s"),
    (r"host call blocked for the whole copy", "la llamada del host queda bloqueada durante toda la copia"),
    (r"one of (?P<n>[0-9]+) calls per step", r"una de \g<n> llamadas por paso"),
    (r"one of (?P<n>[0-9]+) calls in the window", r"una de \g<n> llamadas en la ventana"),
    (r"fp32 SIMT GEMM kernel", "kernel GEMM SIMT en fp32"),
    (r"fp32 SIMT GEMM kernel, (?P<r>[0-9.]+) TFLOP/s", r"kernel GEMM SIMT en fp32, \g<r> TFLOP/s"),
    (r"Input type float, dims (?P<d>.*)", r"entrada de tipo float, dims \g<d>"),
    (r"a typical call \(nearest the median\)", "una llamada típica (la más cercana a la mediana)"),
    (rf"synced via (?P<x>.+); host blocked (?P<a>{_D}), (?P<b>{_D}) with the GPU idle after",
     r"sincroniza con \g<x>; el host se bloquea \g<a>, \g<b> con la GPU inactiva después"),
    (rf"host blocked (?P<a>{_D}), GPU busy (?P<b>{_D})", r"host bloqueado \g<a>, GPU ocupada \g<b>"),
    (rf"no kernel, copy or memset for (?P<d>{_D})", r"ningún kernel, copia ni memset durante \g<d>"),
    (rf"host region under the gaps \((?P<d>{_D}) of them\)", r"región del host bajo los huecos (\g<d> de ellos)"),
    (rf"(?P<d>{_D}) of self time inside the gaps", r"\g<d> de tiempo propio dentro de los huecos"),
    (r"(?P<d>[0-9.]+) ms late \(#(?P<k>[0-9]+) of its name in the step\)",
     r"\g<d> ms de retraso (la n.º \g<k> con su nombre en el paso)"),
]


RULES: dict[str, Entry] = {
    "overhead-bound": Entry(
        title="Limitado por la sobrecarga del host: la GPU espera a la CPU",
        advice=lambda m: _OVERHEAD_ADVICE[m["cause"]],
        message=lambda m: (f"Self CPU total {t(m['self_cpu_total_us'])} frente a Self CUDA total "
                           f"{t(m['self_device_total_us'])} ({m['cpu_to_device_ratio']:.0f}x); la GPU está ocupada "
                           f"el {m['gpu_busy_percent']:.1f}% de la ventana de {t(m['window_us'])}."
                           + _overhead_cause(m)),
        docs="""Qué:
El host tarda mucho más en emitir el trabajo que la GPU en hacerlo: el Self CPU total es muchas veces el
Self CUDA total (ms frente a µs) y la GPU pasa inactiva la mayor parte de la ventana.

Por qué:
Cada operación paga un peaje fijo en Python, el dispatcher y el lanzamiento CUDA, decenas de µs. Si el
kernel dura 2 µs, ese peaje es el tiempo de ejecución: una GPU o un kernel más rápidos no cambian nada.

Ejemplo:
`torch.add(torch.matmul(x, w), b)` a 64x64 en bf16 en una H200: 510 µs de CPU propia para 12 µs de CUDA
en 3 pasos; la GPU está ocupada el 2% de la ventana.

Solución:
Da más trabajo a cada llamada (lotes, tensores más grandes), fusiona las operaciones (torch.compile, un
kernel fusionado) o reproduce el paso entero como CUDA graph (`torch.compile(mode="reduce-overhead")`).""",
    ),
    "compute-bound": Entry(
        title="Limitado por el cómputo: la GPU es el límite",
        advice=("Optimiza los propios kernels, empezando por el dominante: menor precisión, epílogos fusionados, "
                "mejores formas; los trucos del lado del host apenas ayudarán."),
        message=lambda m: (f"La GPU está ocupada el {m['gpu_busy_percent']:.1f}% de la ventana perfilada: el "
                           "tiempo de los kernels, no el del host, marca el ritmo."),
        docs="""Qué:
La GPU está ocupada casi toda la ventana y el tiempo propio de CPU no supera en mucho al de CUDA.

Por qué:
Cuando la GPU nunca espera, solo acelera lo que hace la GPU: reducir la sobrecarga del host no acorta el paso.

Ejemplo:
Una matmul bf16 de 4096x4096 en una H200: la GPU está ocupada el 79% de la ventana y el kernel GEMM se
lleva el 80% del tiempo CUDA.

Solución:
Empieza por el kernel dominante: precisión menor (bf16, fp8), TF32 para fp32, epílogos fusionados,
formas múltiplos de 8/16, o menos trabajo (algoritmo, recomputación).""",
    ),
    "dominant-event": Entry(
        title="Un solo kernel, copia u operación domina el tiempo de GPU",
        advice=lambda m: _dominant_advice(m),
        message=lambda m: (f"{_kind(m)} {m['name']} acumula el {m['share_percent']:.2f}% del Self CUDA total de "
                           f"{t(m['self_device_total_us'])}: {m['calls']} llamada(s), {t(m['total_us'])} en total, "
                           f"{t(m['avg_us'])} por llamada de media."),
        docs="""Qué:
Un kernel (u operación) se lleva la mayor parte del tiempo propio de CUDA.

Por qué:
Si un evento es el 80% del tiempo de GPU, cualquier mejora en los demás apenas se nota: es ahí donde hay que mirar.

Ejemplo:
En la matmul bf16 de 4096 el GEMM `nvjet_sm90_tst_256x128...` es el 80% del Self CUDA total.

Solución:
Revisa la forma y la precisión de ese kernel, prueba variantes fusionadas o de otra biblioteca, o
reduce cuántas veces se llama.""",
    ),
    "many-calls": Entry(
        title="Llamado muchísimas veces por paso",
        advice=("Agrupa estas llamadas (una operación sobre un tensor apilado en vez de un bucle), usa variantes "
                "foreach/fusionadas, fusiona con torch.compile o captura el paso como CUDA graph."),
        message=lambda m: (f"{_kind(m)} {m['name']} se llama {m['calls_per_step']:.0f} veces por paso "
                           f"({m['calls']} llamadas en total, {t(m['avg_us'])} de media cada una): "
                           f"{t(m['cost_us_per_step'])} por paso, el {m['step_share_percent']:.1f}% del paso."),
        docs="""Qué:
Una operación o kernel se repite cientos o miles de veces en cada paso.

Por qué:
Cada llamada paga su coste fijo de despacho y lanzamiento; multiplicado por miles, ese coste se come el paso.

Ejemplo:
Un bucle de Python que suma tensores uno a uno lanza un kernel diminuto por iteración.

Solución:
Apila los datos y haz una sola operación, usa las variantes `_foreach_`/fusionadas (p. ej. optimizadores
con `foreach=True` o `fused=True`), torch.compile o CUDA graphs.""",
    ),
    "gemm-heuristics": Entry(
        title="Heurísticas de la biblioteca (consultas de ocupación) antes de lanzar un kernel",
        advice=("Calienta cada forma antes de perfilar para que la elección de la biblioteca quede en caché; "
                "mantén las formas estáticas (rellena o agrupa por tamaños); si se repite en cada paso estable, "
                "es el coste por llamada de la biblioteca."),
        message=lambda m: (f"{m['queries']} consulta(s) de ocupación ({t(m['query_us'])} de host) justo antes de "
                           f"{m['launches']} lanzamiento(s) de kernel: la biblioteca eligió o dimensionó estos "
                           "kernels en tiempo de ejecución."),
        docs="""Qué:
Justo antes de lanzar un GEMM, el host hace consultas de ocupación (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`
y similares): la biblioteca (cuBLAS/cuBLASLt) está eligiendo o dimensionando el kernel.

Por qué:
Esa elección cuesta tiempo de host en cada forma nueva; si aparece en los pasos estables, se paga siempre.

Ejemplo:
El primer GEMM de una forma nueva en una H200 va precedido de consultas de ocupación que no se repiten después.

Solución:
Calienta todas las formas antes de perfilar, usa formas estáticas (relleno, buckets) y CUDA graphs
para los pasos con formas fijas.""",
    ),
    "implicit-copy-before-gemm": Entry(
        title="Memset/copia implícita antes de un GEMM con epílogo",
        advice=("Nada que hacer para GEMMs grandes. Para muchos pequeños: captura el paso como CUDA graph (la "
                "llamada extra desaparece) o prueba la forma sin fusionar u otra disposición, que puede elegir "
                "un kernel sin el memset previo."),
        message=lambda m: (f"{m['pairs']} memset/copia que el programa no escribió se ejecutaron justo antes de un "
                           f"GEMM con epílogo: {t(m['device_us'])} en la GPU y {t(m['host_api_us'])} de llamadas "
                           f"a la API en el host; el GEMM empieza entre {t(m['gap_us_min'])} y "
                           f"{t(m['gap_us_max'])} después."),
        docs="""Qué:
Un memset o una copia que el programa no pidió aparece justo antes de un GEMM con epílogo (bias, activación):
lo añade la biblioteca para preparar el espacio de trabajo o la salida.

Por qué:
Es una llamada extra a la API y un kernel extra por GEMM; para GEMMs grandes no importa, para muchos
pequeños se suma.

Ejemplo:
`torch.compile` de `mm + add` a 4096 produce `addmm` con epílogo de bias, precedido de un `Memset (Device)`.

Solución:
Para GEMMs pequeños y numerosos, CUDA graphs o la forma sin fusionar; para los grandes, nada.""",
    ),
    "profiler-overhead": Entry(
        title="La sobrecarga del profiler infla las operaciones donde cae",
        advice=("Descuenta estos tiempos del total de CPU de esas operaciones y del ancho de sus pasos; perfila "
                "más pasos (o salta el primero activo) para que las peticiones de búfer pesen menos."),
        message=lambda m: (f"{m['events']} evento(s) de sobrecarga del profiler, {t(m['total_us'])} en total, el "
                           f"{m['window_percent']:.2f}% de la ventana{_steps(m)}."),
        docs="""Qué:
El propio profiler trabaja dentro de la ventana (p. ej. "Activity Buffer Request" de CUPTI) y ese tiempo
cae dentro de alguna operación o paso.

Por qué:
Infla el tiempo de CPU de la operación y el ancho del paso donde cae: se atribuye al programa un coste
que no es suyo.

Ejemplo:
En una traza fría de 64x64, una petición de búfer de CUPTI de cientos de µs cae dentro del primer paso.

Solución:
Ignora ese tiempo al leer la tabla, perfila más pasos o usa `schedule(wait=1, warmup=1, active=N)`.""",
    ),
    "kernel-variability": Entry(
        title="El mismo kernel varía de una llamada a otra",
        advice=("Mira qué se solapa con las llamadas más lentas (otros streams, otros procesos, relojes), separa "
                "o serializa el trabajo que compite, y compara medianas por paso en lugar de medias."),
        message=lambda m: (f"{m['name']} en {m['calls']} llamadas: mínimo {t(m['min_us'])}, mediana "
                           f"{t(m['median_us'])}, p95 {t(m['p95_us'])} ({m['p95_over_median']:.2f}x), máximo "
                           f"{t(m['max_us'])} ({m['max_over_median']:.2f}x); las llamadas por encima de la mediana "
                           f"cuestan {t(m['excess_us'])} más de lo que costaría la mediana."),
        docs="""Qué:
Un mismo kernel, con la misma configuración de lanzamiento, tarda muy distinto de una llamada a otra.

Por qué:
Con trabajo idéntico, la variación viene de fuera: otro stream o proceso compitiendo, relojes que
cambian, memoria compartida. Las medias engañan y los pasos se vuelven irregulares.

Ejemplo:
`tests/fixtures/gpu/kernel_variability` (un mul elementwise sobre 64 MiB, 8 llamadas por paso, y un
segundo stream con GEMMs en los pasos 3 y 6): vectorized_elementwise_kernel grid [32768,1,1] block
[128,1,1], 48 llamadas, mediana 33.5 µs, p95 53.2 µs (1.59x), máximo 54.2 µs; su mediana por paso es
32.0-32.2 µs salvo 50.7 µs y 51.8 µs en los pasos 3 y 6.

Solución:
Busca qué se solapa con las llamadas lentas, sepáralo o serialízalo, fija relojes si hace falta y
compara medianas.""",
    ),
    "dead-window": Entry(
        title="Ventana muerta: una región espera mucho antes de su primer lanzamiento",
        advice=("Calienta fuera del profiler: ejecuta el paso (con cada forma) unas cuantas veces antes, o usa "
                "torch.profiler.schedule(wait=1, warmup=1, active=N) para que la preparación única no se perfile."),
        message=lambda m: (f"'{m['region']}'" + (f" (paso {m['step']})" if m["step"] is not None else "")
                           + f" tardó {t(m['gap_us'])} hasta su primer lanzamiento ({m['first_target']})"
                           + (f", {m['gap_us'] / m['typical_gap_us']:.0f} veces los {t(m['typical_gap_us'])} de "
                              "sus otras llamadas" if m["typical_gap_us"] else "")
                           + f". {t(m['recorded_us'])} están en llamadas registradas; {t(m['untraced_us'])} son "
                           "preparación sin trazar."),
        docs="""Qué:
Una región de record_function (un ProfilerStep o una región del usuario como `matmul_add`) pasa mucho
tiempo (más de 1 ms) antes de lanzar su primer kernel, mucho más que en sus otras llamadas: hay
preparación única dentro de la ventana.

Por qué:
La preparación (handle y workspace de cuBLAS, heurísticas de la biblioteca, carga perezosa de módulos,
búferes del profiler, carga del grafo compilado) se paga una vez, pero cae dentro de la primera llamada:
esas operaciones parecen lentas y la GPU espera. No es lo que cuesta el programa por paso.

Ejemplo:
`seed_mm64_cold` (sin calentamiento): `matmul_add` en el paso 0 tardó 107.285 ms hasta su primer
lanzamiento, 882 veces la mediana de 121.6 µs de los pasos 1-2.

Solución:
Calienta fuera del profiler: ejecuta el paso (con cada forma) unas veces antes de perfilar, o usa
`torch.profiler.schedule(wait=1, warmup=1, active=N)` para que la preparación quede fuera de la ventana.""",
    ),
    "cold-start": Entry(
        title="Arranque en frío: el primer paso es mucho más lento que el resto",
        advice=("Calienta antes de perfilar (ejecuta unas iteraciones primero o usa "
                "torch.profiler.schedule(wait=1, warmup=1, active=N)) y lee solo los pasos estables."),
        message=lambda m: (f"El primer paso tardó {t(m['first_us'])}, {m['ratio']:.0f} veces la mediana de "
                           f"{t(m['median_others_us'])} de los otros {m['others']}: se perfiló la preparación "
                           "inicial."),
        docs="""Qué:
El primer paso (o la primera repetición de una región) es mucho más lento que la mediana de los demás.

Por qué:
La primera vez se pagan costes únicos: carga perezosa de módulos CUDA, selección de algoritmos, cachés
del asignador, compilación. Mezclarlos con los pasos estables falsea cualquier media.

Ejemplo:
`seed_mm64_cold`, perfilada sin calentamiento: el primer paso es varias veces más ancho que los otros.

Solución:
Calienta antes de perfilar o usa `schedule(wait=1, warmup=1, active=N)` y lee solo los pasos estables.""",
    ),
    "trailing-sync": Entry(
        title="Sincronización al final del paso sin nada que esperar",
        advice=("Quita el torch.cuda.synchronize() de cada paso; sincroniza solo donde el host necesita un "
                "resultado y mide el trabajo de GPU con eventos CUDA en lugar de sync + reloj de pared."),
        message=lambda m: (f"{m['syncs']} sincronización(es) al final de los pasos esperan poco o ningún trabajo de "
                           f"GPU: la más larga dura {t(m['longest_sync_us'])} con {t(m['outstanding_gpu_us'])} de "
                           f"trabajo pendiente; en total {t(m['sync_total_us'])}, el "
                           f"{m['step_share_percent']:.1f}% del tiempo de paso."),
        docs="""Qué:
Un `cudaDeviceSynchronize`/`cudaStreamSynchronize` al final de cada paso que apenas tiene trabajo de GPU
pendiente que esperar.

Por qué:
La sincronización impide que el host se adelante a encolar el paso siguiente; si no espera a nada útil,
solo añade latencia y quita solapamiento.

Ejemplo:
Un bucle de entrenamiento que llama a `torch.cuda.synchronize()` para medir cada paso.

Solución:
Quita la sincronización por paso; mide con `torch.cuda.Event(enable_timing=True)`.""",
    ),
    "compile-overhead": Entry(
        title="El tiempo de host del envoltorio de torch.compile es grande frente al trabajo de GPU que lanza",
        advice=("Compila trozos más grandes (el paso entero) para repartir el coste fijo por llamada, usa "
                "torch.compile(mode='reduce-overhead') para reproducir los lanzamientos como CUDA graph, o deja "
                "en modo eager las funciones diminutas."),
        message=lambda m: (f"{m['calls']} llamada(s) compiladas pasan {t(m['wrapper_host_us'])} de host en el "
                           f"envoltorio de torch.compile (búsqueda en caché, guardas, prólogo, envoltorio generado; "
                           f"{m['wrapper_us_per_call']:.1f} µs por llamada) para {t(m['launched_gpu_us'])} de trabajo "
                           f"de GPU lanzado: {m['host_to_gpu_ratio']:.1f}x."),
        docs="""Qué:
El coste de host por llamada de torch.compile es grande frente al trabajo de GPU que lanza cada llamada:
guardas (`TorchDynamo Cache Lookup`), `Torch-Compiled Region`, `Pregraph bytecode`, el prólogo de
AOTDispatcher y el envoltorio generado (`## Call CompiledFxGraph ...`) antes del primer lanzamiento.

Por qué:
El grafo compilado ahorra trabajo por kernel, pero el envoltorio cuesta unos cientos de µs fijos de
Python por llamada. Si la llamada lanza un kernel de 2 µs, el envoltorio es el tiempo de ejecución y el
paso compilado puede ser más lento que el eager.

Ejemplo:
`torch.compile(matmul_add)` a 64x64 en bf16 en una H200 (seed_mm64_compile): por llamada 34 µs de
búsqueda en caché y 345 µs en `Torch-Compiled Region: 0/1` para un kernel de 2.1 µs.

Solución:
Compila piezas más grandes (el paso entero), usa `mode="reduce-overhead"` (CUDA graphs) o deja las
funciones diminutas en eager.""",
    ),
    "lazy-loading": Entry(
        title="Carga perezosa de módulos CUDA dentro de la ventana perfilada",
        advice=("Ejecuta cada kernel una vez antes de perfilar (iteraciones de calentamiento o schedule(wait=1, "
                "warmup=1, active=N)); usa CUDA_MODULE_LOADING=EAGER solo si la primera llamada debe ser rápida."),
        message=lambda m: (f"{m['events']} evento(s) de carga perezosa{_steps(m)}, {t(m['total_us'])} en total, el "
                           f"{m['window_percent']:.2f}% de la ventana."),
        docs="""Qué:
Eventos "Lazy Loading" de CUDA dentro de la ventana: el driver carga el módulo de un kernel la primera
vez que se lanza.

Por qué:
Es un coste único que infla la primera llamada de cada kernel y el primer paso; no se repite.

Ejemplo:
`seed_mm64_cold`, perfilada sin calentamiento: la primera matmul carga sus módulos dentro del paso.

Solución:
Calienta antes de perfilar; `CUDA_MODULE_LOADING=EAGER` carga todo al inicio si hace falta.""",
    ),
    "host-sync": Entry(
        title="Operaciones dentro del paso sincronizan el host con la GPU",
        advice=("Deja los resultados en la GPU y léelos pocas veces (acumula y haz .item() cada N pasos); copia "
                "con non_blocking=True a memoria fijada; encuentra las sincronizaciones ocultas con "
                "torch.cuda.set_sync_debug_mode('warn')."),
        message=lambda m: (f"{m['syncs']} llamadas que sincronizan ({m['syncs_per_step']:.1f} por paso), "
                           f"{t(m['stall_us'])} en total, el {m['step_share_percent']:.1f}% del tiempo de paso."),
        docs="""Qué:
Operaciones dentro del paso que bloquean el host hasta que la GPU termina (cudaStreamSynchronize,
cudaMemcpy síncrono): `.item()`, `.cpu()`, `.tolist()`, indexación booleana, `torch.nonzero`.

Por qué:
Mientras el host espera no encola trabajo, y cuando la GPU termina se queda sin nada que hacer: la
tubería CPU/GPU se vacía en cada sincronización.

Ejemplo:
`loss.item()` en cada paso para registrar la pérdida.

Solución:
Acumula en la GPU y lee cada N pasos, copia con `non_blocking=True` a memoria fijada y busca las
sincronizaciones ocultas con `torch.cuda.set_sync_debug_mode('warn')`.""",
    ),
    "pageable-memcpy": Entry(
        title="Copias entre la GPU y memoria de host paginable",
        advice=("Fija los búferes del host (pin_memory=True, DataLoader(pin_memory=True)) y copia con "
                "non_blocking=True para que la copia vaya a toda velocidad y se solape con el cómputo."),
        message=lambda m: (f"{m['copies']} copia(s) con memoria paginable, {m['bytes'] / 1e6:.1f} MB, "
                           f"{t(m['device_us'])} en la GPU y {t(m['host_blocked_us'])} con el host bloqueado."),
        docs="""Qué:
Copias host-dispositivo (`Memcpy HtoD/DtoH`) cuyo lado del host es memoria paginable, no fijada.

Por qué:
Desde memoria paginable el driver copia primero a un búfer intermedio: la copia es más lenta, bloquea
el host y no puede solaparse con el cómputo.

Ejemplo:
`x.cuda()` sobre un tensor de CPU normal en cada paso.

Solución:
`pin_memory=True` en el DataLoader o `tensor.pin_memory()`, y `.to(device, non_blocking=True)`.""",
    ),
    "gpu-idle": Entry(
        title="La GPU pasa huecos largos inactiva mientras el host hace otra cosa",
        advice=lambda m: _GPU_IDLE_ADVICE[m["cause"]],
        message=lambda m: (f"La GPU está inactiva el {m['gpu_idle_percent']:.1f}% del tiempo; {m['long_gaps']} "
                           f"hueco(s) largos (el mayor de {t(m['longest_gap_us'])}) suman el "
                           f"{m['long_gap_percent']:.1f}% de ese tiempo." + _host_under_gaps(m)),
        docs="""Qué:
Huecos largos en la línea de tiempo de la GPU dentro de los pasos, mientras el host está ocupado con
otra cosa (cargar datos, Python, checkpoints, logs).

Por qué:
Cada hueco es capacidad de GPU desperdiciada: el trabajo del host está en el camino crítico en lugar
de solaparse con el cómputo.

Ejemplo:
Un bucle que prepara cada lote en el hilo principal (sin workers del DataLoader): la GPU espera a que
el host termine cada lote.

Solución:
Solapa ese trabajo con el cómputo: `num_workers`, `pin_memory`, prefetch, datos generados en la GPU,
checkpoints y logs fuera del paso.""",
    ),
    "launch-bound": Entry(
        title='Muchos kernels diminutos: el lanzamiento cuesta más que el tiempo de GPU',
        advice=("Fusiona las operaciones pequeñas (torch.compile, optimizadores fusionados/foreach, convierte el bucle "
                "de Python en operaciones de tensores) o captura el paso como CUDA graph "
                "(torch.compile(mode='reduce-overhead'))."),
        message=lambda m: (f"{m['kernels']} kernels ({m['kernels_per_step']:.0f} por paso), de mediana "
                           f"{t(m['median_kernel_us'])} cada uno, mientras la llamada de lanzamiento mediana tarda "
                           f"{t(m['median_launch_us'])}; por paso, {t(m['kernel_us_per_step'])} de kernels para "
                           f"{t(m['launch_us_per_step'])} de llamadas de lanzamiento."),
        docs="""Qué:
Muchos kernels duran menos que la llamada de lanzamiento que los encola (`cudaLaunchKernel`), así que la
GPU termina cada uno antes de que llegue el siguiente.

Por qué:
El ritmo lo marca el host lanzando, no la GPU calculando: la GPU queda ociosa entre kernels diminutos.

Ejemplo:
Un bucle de operaciones elementales sobre tensores pequeños: kernels de 2 µs, lanzamientos de 5-10 µs.

Solución:
Fusiona (torch.compile), agrupa en menos kernels más grandes o usa CUDA graphs.""",
    ),
    "fp32-gemm": Entry(
        title='GEMMs en fp32 completo sin Tensor Cores',
        advice=("Permite TF32 con torch.set_float32_matmul_precision('high') (o "
                "torch.backends.cuda.matmul.allow_tf32 = True), o ejecuta bajo torch.autocast('cuda', "
                "dtype=torch.bfloat16) para que los GEMM usen los Tensor Cores."),
        message=lambda m: (f"{m['kernels']} kernel(s) GEMM en fp32 completo en los núcleos CUDA: {t(m['gemm_us'])}, el "
                           f"{m['device_share_percent']:.1f}% del tiempo de GPU"
                           + (f", a {m['tflops']:.1f} TFLOP/s" if m.get("tflops") else "") + "."),
        docs="""Qué:
Multiplicaciones de matrices en fp32 puro, con kernels que no usan Tensor Cores.

Por qué:
En una H200 el fp32 sin TF32 rinde ~51 TFLOP/s frente a ~795 de bf16: más de 10 veces más lento para
el mismo GEMM.

Ejemplo:
`torch.matmul` de dos tensores float32 de 4096x4096 con TF32 desactivado.

Solución:
`torch.autocast("cuda", dtype=torch.bfloat16)`, o `torch.set_float32_matmul_precision("high")` para TF32.""",
    ),
    "recompilation": Entry(
        title='torch.compile recompila dentro de la ventana perfilada',
        advice=("Encuentra la guarda que falla con TORCH_LOGS='recompiles'; marca como dinámicas las dimensiones que "
                "varían (torch._dynamo.mark_dynamic, dynamic=True) o agrupa las formas; pasa los escalares que "
                "cambian como tensores; calienta cada forma antes de perfilar."),
        message=lambda m: (f"torch.compile compiló {m['compiles']} vez/veces durante el perfil ({m['graphs']} grafo(s)): "
                           f"{t(m['compile_us'])}, el {m['compile_share_percent']:.1f}% del tiempo de los pasos."),
        docs="""Qué:
Dynamo vuelve a compilar una función que ya estaba compilada (aparecen nuevas regiones "Torch-Compiled
Region: N/M" o trabajo de compilación en pasos estables).

Por qué:
Cada recompilación cuesta de cientos de ms a segundos y, si las formas cambian cada paso, se paga siempre.

Ejemplo:
Llamar a una función compilada con un tamaño de lote distinto en cada paso.

Solución:
Formas estáticas o `mark_dynamic`; `TORCH_LOGS=recompiles` dice qué guarda falla.""",
    ),
    "exposed-communication": Entry(
        title="Comunicación expuesta: los pasos esperan a las colectivas",
        advice=("Deja que la comunicación se oculte tras el cómputo: ajusta bucket_cap_mb de DDP, acumula "
                "gradientes con no_sync(), usa prefetch en FSDP o comprime gradientes; si un rango llega tarde, "
                "arregla primero ese rango (ver straggler)."),
        message=lambda m: (f"{m['exposed_ms_per_step']:.3f} ms de comunicación por paso corren sin cómputo al lado: "
                           f"el {100 * m['exposed_share_of_step']:.1f}% de un paso de {m['step_ms']:.3f} ms. De "
                           f"{m['comm_ms']:.3f} ms de colectivas ({m['collectives']} eventos), el "
                           f"{100 * m['overlap_share']:.1f}% se solapa con cómputo."),
        docs="""Qué:
Las colectivas (all-reduce, all-gather, ...) corren sin cómputo a la vez: el paso espera a la red.

Por qué:
La comunicación que no se solapa con el cómputo se suma entera al tiempo de paso, y crece con el
número de rangos.

Ejemplo:
DDP con un solo bucket enorme: el all-reduce empieza al final del backward y nada lo oculta.

Solución:
Ajusta `bucket_cap_mb`, `no_sync()` con acumulación de gradientes, prefetch en FSDP, compresión de
gradientes; si un rango llega tarde, mira straggler.""",
    ),
    "straggler": Entry(
        title="Rezagado: un rango hace esperar a los demás",
        advice=("Mira qué hace el rango lento antes de sus colectivas que los demás no hacen: datos desiguales, "
                "carga de datos o disco lentos en ese host, logs o checkpoints en un solo rango, un dispositivo "
                "más lento. Equilibra el trabajo o saca del paso lo que solo hace un rango."),
        message=lambda m: _straggler_message(m),
        docs="""Qué:
Un rango llega tarde a sus colectivas (o sus pasos duran más) y todos los demás le esperan dentro de la
colectiva. Solo se ve entre rangos: `pista analyze DIR` sobre una carpeta de trazas por rango.

Por qué:
Una colectiva termina cuando llega el último participante: el trabajo entero va al ritmo del rango más lento.

Ejemplo:
Dos rangos gloo entrenando un MLP con DDP, el rango 1 duerme 30 ms antes de cada forward: el rango 0
espera esos 30 ms en `gloo:all_reduce` en cada paso.

Solución:
Busca qué hace distinto el rango lento (datos desiguales, E/S, logs, checkpoints, dispositivo más
lento), equilibra el trabajo o sácalo del paso.""",
    ),
}


def _straggler_message(m: dict) -> str:
    if m["by_lateness"]:
        text = (f"El rango {m['rank']} llega a sus colectivas {m['late_ms']:.3f} ms después de la mediana de los "
                f"otros {m['world'] - 1} rango(s) (mediana sobre {m['matched_collectives']} colectivas emparejadas; "
                f"el paso mediano dura {m['median_step_ms']:.3f} ms).")
    else:
        text = (f"El paso mediano del rango {m['rank']} dura {m['step_ms']:.3f} ms frente a "
                f"{m['others_step_ms']:.3f} ms en los otros {m['world'] - 1} rango(s).")
    if m["peers_exposed_ms"] is not None and m["own_exposed_ms"] is not None \
            and m["peers_exposed_ms"] > m["own_exposed_ms"]:
        text += (f" Los demás esperan en comunicación {m['peers_exposed_ms']:.3f} ms por paso (mediana); el rango "
                 f"{m['rank']}, solo {m['own_exposed_ms']:.3f} ms.")
    return text
