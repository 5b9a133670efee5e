"""overhead-bound en español."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.i18n.es.launch_bound import static_first
from pista.rules.overhead_bound import BetweenOps, GpuWaitedUnder, OverheadBound

TITLE = "Limitado por la sobrecarga del host: la GPU espera mientras el host despacha operaciones"

ELSEWHERE = {
    "sync_us": "tras sincronizaciones",
    "data_us": "bajo regiones que casi no lanzan nada",
    "cold_us": "en preparación de una sola vez",
    "compile_us": "mientras se compila",
    "profiler_us": "en las peticiones de búfer del profiler",
    "setup_us": "mientras cuDNN prepara formas nuevas",
    "launch_us": "antes de kernels diminutos",
    "calls_us": "bajo llamadas muy repetidas",
}

# una reclamación que ninguna regla con hallazgo informa (OverheadBound.owners), dicha tal cual
UNOWNED = {
    "sync_us": "esperando tras sincronizaciones",
    "data_us": "bajo regiones que casi no lanzan nada",
    "cold_us": "preparación de una sola vez (primeras llamadas: el contexto de CUDA, las bibliotecas y la carga de kernels)",
    "compile_us": "compilando",
    "profiler_us": "las propias peticiones de búfer del profiler",
    "setup_us": "cuDNN preparando formas nuevas",
    "launch_us": "antes de kernels diminutos",
    "calls_us": "bajo llamadas muy repetidas",
}


def _left(r: OverheadBound) -> list[str]:
    return [f"{t(us)} que reclaman {', '.join(rules)}" if claim == "others" else f"{t(us)} {ELSEWHERE[claim]} ({', '.join(rules)})"
            for claim, us, rules in r.left_to()]


def _unowned(r: OverheadBound) -> list[str]:
    return [f"{t(us)} {UNOWNED[claim]}" for claim, us in r.unowned()]


def _whole(r) -> float:
    """El paso medio (la ventana): las cifras por paso son medias sobre los pasos, y su total también."""
    return r.mean_step_us or r.step_us


def _share(r: OverheadBound, us: float) -> str:
    share = pct(min(us / _whole(r), 1.0)) if _whole(r) else "0.0%"
    return f"el {share} {'del paso medio' if r.has_steps else 'de la ventana'} de {t(_whole(r))}"


def _ratio(r: OverheadBound) -> str:
    return f"{r.cpu_to_device_ratio:.0f}x" if r.cpu_to_device_ratio is not None else "sin tiempo de GPU medible"


def _top(r: OverheadBound) -> str:
    return ", ".join(f"{o.name} ({o.calls_per_step:.0f} por paso, {t(o.idle_us_per_step)})" for o in r.top_ops)


def _where(r: OverheadBound) -> str:
    return r.where


def _profiler(r: OverheadBound) -> str:
    options = " y ".join(o for o, on in (("record_shapes", r.record_shapes), ("with_stack", r.with_stack)) if on)
    text = " El profiler casi duplica el tiempo de host de bucles así" + (f" ({options} añaden más)"
                                                                        if options else "") + ": "
    if r.unprofiled_us_per_step <= 0.01 * r.step_us:
        return text + ("esta inactividad podría ser el coste del propio profiler; mide el paso sin perfilar antes de "
                       "actuar.")
    return text + (f"quitando la mitad del tiempo del host seguirían inactivos unos {t(r.unprofiled_us_per_step)} "
                   "por paso.")


def message(r: OverheadBound) -> str:
    text = (f"Self CPU total {t(r.self_cpu_total_us)} frente a Self CUDA total {t(r.self_device_total_us)} "
            f"({_ratio(r)}); la GPU está ocupada el {r.gpu_busy_percent:.1f}% de la ventana de {t(r.window_us)}. De "
            f"sus {t(r.idle_us_per_step)} de inactividad por paso, {t(r.per_op_us_per_step)} "
            f"({_share(r, r.per_op_us_per_step)}) son sobrecarga por operación, la GPU esperando mientras el host "
            "despacha operaciones")
    parts = []
    if r.between_ops_us_per_step > 0:
        engine = (f"; {t(r.engine_us_per_step)} de ello alrededor del backward, mientras el motor de autograd arranca o "
                  "termina, lo que el profiler infla" if r.engine_us_per_step >= 0.01 * r.step_us else "")
        parts.append(f"{t(r.between_ops_us_per_step)} con el host fuera de toda operación (Python entre operaciones"
                     f"{engine})")
    if r.compiled_us_per_step > 0:
        parts.append(f"{t(r.compiled_us_per_step)} dentro de código compilado")
    text += (": " + ", ".join(parts) if parts else "") + "."
    if r.top_ops:
        text += f" La GPU espera sobre todo bajo {_top(r)}."
    left = _left(r)
    if left:
        text += " Queda para otros hallazgos, por paso: " + "; ".join(left) + "."
    unowned = _unowned(r)
    if unowned:
        text += " Tampoco es sobrecarga por operación, por paso: " + "; ".join(unowned) + "."
    if r.near_threshold:
        text += (f" El veredicto está cerca de su umbral ({_ratio(r)} frente a {r.ratio_threshold:g}x, GPU ocupada "
                 f"el {r.gpu_busy_percent:.0f}% frente a un máximo del {r.busy_threshold_percent:.0f}%).")
    return text + _profiler(r)


ADVICE = {
    "compiled": ("El tiempo del host está en código ya compilado: otro torch.compile no ayudará. Reprodúcelo como "
                 "CUDA graph (torch.compile(mode='reduce-overhead')) o da más trabajo a cada llamada (un lote mayor) "
                 "para repartir su coste fijo."),
    "partly compiled": ("Parte del paso ya se ejecuta compilada: compila el resto con ella (la pérdida, las "
                        "operaciones eager del backward, el paso del optimizador) para que un solo grafo contenga el "
                        "paso, y reprodúcelo como CUDA graph (torch.compile(mode='reduce-overhead')); otro "
                        "torch.compile de la parte compilada no ayudará."),
    "python": ("La mayor parte es Python entre operaciones: aplica torch.compile al paso (elimina ese Python al "
               "trazarlo y fusiona las operaciones) o captura el paso como CUDA graph (torch.cuda.CUDAGraph, "
               "torch.compile(mode='reduce-overhead'))."),
    "dispatch": ("La mayor parte es el propio despacho y lanzamiento de las operaciones: fusiónalas con "
                 "torch.compile, captura el paso como CUDA graph (torch.compile(mode='reduce-overhead'), "
                 "torch.cuda.CUDAGraph) o da más trabajo a cada llamada (agrupa las entradas en lotes)."),
}


GRAPHED = {
    "mostly": ("El paso ya reproduce CUDA graphs ({n:.0f} lanzamiento(s) de graph por paso, la mayoría de sus kernels): "
               "la GPU espera al trabajo del host alrededor de las reproducciones (su Python, el muestreo, la "
               "planificación, la preparación de entradas), no a los lanzamientos. Solapa ese trabajo con la "
               "reproducción (prepara el paso siguiente mientras corre el graph) o da más trabajo a cada reproducción "
               "(un lote mayor); otro CUDA graph o torch.compile no ayudará."),
    "partly": ("Parte del paso ya reproduce CUDA graphs ({n:.0f} lanzamiento(s) de graph por paso): captura en esos "
               "graphs las operaciones lanzadas fuera de ellos, o fusiónalas con torch.compile."),
}


def advice(r: OverheadBound) -> str:
    if r.graphed:
        return GRAPHED[r.graphed].format(n=r.graph_launches_per_step) + static_first(r)
    text = ""
    if r.syncs_at_end:
        text += (f"Las {r.end_syncs_per_step:.0f} sincronizaciones por paso de {r.sync_op} llegan tras el último kernel "
                 "del paso (leen su resultado): captura como CUDA graph lo que va antes y lee el resultado tras la "
                 "repetición. ")
    if r.syncs_at_start:
        text += (f"Las {r.start_syncs_per_step:.0f} sincronizaciones por paso de {r.sync_op} llegan antes del primer "
                 "kernel del paso (suben su entrada): quedan fuera de un CUDA graph de lo que sigue, que lee la entrada "
                 "de un búfer estático. ")
    if r.syncs_first:
        see = r.named(("host-sync", "pageable-memcpy"))
        text += (f"Quita primero las {r.mid_syncs_per_step:.0f} sincronizaciones por paso dentro "
                 "de operaciones" + (f" (ver {', '.join(see)})" if see else "") + ": un CUDA graph no "
                "puede capturar una sincronización (.item(), .cpu(), torch.cuda.synchronize()) y torch.compile corta "
                "su grafo en ellas. ")
    text += ADVICE[_where(r)] + static_first(r)
    if r.near_threshold or r.record_shapes or r.with_stack:
        text += " Antes de actuar, mide el paso sin el profiler: infla justo este tiempo del host."
    return text


def fix(r: OverheadBound) -> str:
    top = r.top_ops[0].name if r.top_ops else "las operaciones"
    head = (f"la GPU espera {t(r.per_op_us_per_step)} por paso ({_share(r, r.per_op_us_per_step)}) mientras el host "
            f"despacha operaciones ({top})")
    if r.graphed == "mostly":
        return (f"{head} alrededor de sus reproducciones de CUDA graph: solapa ese trabajo del host con la "
                "reproducción, o da más trabajo a cada una")
    if r.graphed:
        return f"{head} fuera de los CUDA graphs que reproduce: captura esas operaciones en los graphs, o fusiónalas"
    if r.syncs_first:
        return (f"{head}: quita las {r.mid_syncs_per_step:.0f} sincronizaciones por paso de "
                f"{r.sync_op} y luego captura el paso como CUDA graph")
    if r.syncs_at_end:
        return (f"{head}: captura el paso hasta su {r.sync_op} como CUDA graph (la lectura queda fuera) o compílalo "
                "con torch.compile")
    if _where(r) == "compiled":
        return f"{head} en código compilado: usa torch.compile(mode='reduce-overhead') (CUDA graphs) o un lote mayor"
    if _where(r) == "partly compiled":
        return f"{head}, en parte fuera del código compilado: compila el paso entero y reprodúcelo como CUDA graph"
    return f"{head}: aplica torch.compile al paso o captúralo como CUDA graph"


def basis(r: OverheadBound) -> str:
    return ("GPU inactiva dentro de los pasos mientras el host despacha operaciones, por paso, sin la inactividad que "
            "reclaman otros hallazgos (tras las sincronizaciones, bajo regiones de datos o de preparación, la "
            "compilación, los búferes del profiler, antes de kernels diminutos, bajo llamadas repetidas); cota superior")


NOTES = {
    GpuWaitedUnder: lambda n: (f"GPU inactiva {t(n.idle_us)} bajo esta llamada; {t(n.idle_us_per_step)} por paso bajo "
                               "todas las llamadas de esta operación"),
    BetweenOps: lambda n: f"GPU inactiva {t(n.idle_us)} con el host fuera de toda operación (" + (
        "alrededor del backward, el motor de autograd arrancando o terminando)" if n.engine
        else "Python entre operaciones)"),
}

DOCS = """Qué:
El host tarda mucho más en emitir el trabajo que la GPU en hacerlo: el Self CPU total es muchas veces
el Self CUDA total y la GPU pasa inactiva la mayor parte de la ventana (el veredicto). El hallazgo es
la parte de esa inactividad que es sobrecarga por operación: la GPU esperando mientras el host
ejecuta Python entre operaciones, despacha las operaciones y lanza sus kernels. Dice dónde (las
operaciones bajo las que esperó la GPU, Python entre operaciones, código compilado), si el veredicto
está cerca de su umbral y cuánto podría ser coste del propio profiler.

Por qué:
Cada operación paga un peaje fijo en Python, el dispatcher y el lanzamiento CUDA, decenas de µs. Si el
kernel dura 2 µs, ese peaje es el tiempo de ejecución: una GPU o un kernel más rápidos no cambian nada.
No toda GPU inactiva es ese peaje: un cargador de datos, una sincronización, una compilación o los
búferes del profiler también dejan la GPU inactiva y se arreglan de otra forma; son de otros hallazgos
(gpu-idle, host-sync, recompilation, cold-start, profiler-overhead...) y su inactividad queda fuera de
este.

Ejemplo:
`torch.add(torch.matmul(x, w), b)` a 64x64 en bf16 en una H200 (seed_mm64_warm): 510 µs de Self CPU
para 12 µs de Self CUDA en 3 pasos (43x); la GPU está ocupada el 2% de la ventana e inactiva toda la
mediana de paso de 126 µs mientras el host despacha aten::mm y aten::add. series_mlp_eager (MLP,
AdamW foreach, eager): 5.9 ms de los 6.9 ms del paso (86%). gpu/gpu_idle_dataloader también es
overhead-bound según el veredicto, pero 13.4 ms de sus 14.9 ms de inactividad por paso están bajo
`data_loading` (de gpu-idle) y 0.8 ms tras sus sincronizaciones: solo 0.7 ms (4.7%) son por operación.

Impacto:
Por paso: la GPU inactiva (ningún kernel, copia ni memset en el dispositivo más ocupado) dentro de los
pasos, menos, con aritmética de intervalos, la inactividad que reclama un hallazgo más específico, de
modo que cada ns se cuenta una vez: tras una sincronización o una copia del dispositivo al host hasta
el siguiente trabajo (host-sync, trailing-sync, pageable-memcpy), mientras torch.compile compila
(recompilation), en las peticiones de búfer del profiler (profiler-overhead), en la preparación de una
sola vez de una primera llamada (cold-start, dead-window, lazy-loading), bajo una región que casi no
lanza nada (gpu-idle), justo antes de kernels diminutos (launch-bound), bajo llamadas muy repetidas
(many-calls) y lo que otra regla declare con una función `claimed_idle(facts)`. Lo que queda es lo que
CUDA graphs o fusionar ahorrarían como mucho (cota superior). En gpu/host_sync_item quedan 501 µs de
los 847 µs de inactividad por paso (55%) frente a los 355 µs de host-sync: las sincronizaciones cuestan
poco mientras el host sea así de lento (medido sin perfilar en la H200: 505 µs por paso tal cual,
330-610 µs según la ejecución sin sus 8 sincronizaciones, con el host aún como límite, y 172 µs con el
bucle además capturado como CUDA graph), pero hay que quitarlas para que un graph pueda capturar el
bucle, y la corrección lo dice. Antes el hallazgo era siempre crítico y sin impacto, aunque la
inactividad fuera de un cargador de datos.

Se deja fuera todo tramo que poseen los hallazgos de las reglas de una sola vez (las primeras
llamadas de lazy-loading en una ventana sin pasos eran antes "sobrecarga por operación", con el
consejo de torch.compile), y el texto nombra solo las reglas de una sola vez que informan; la
inactividad de una sola vez que ningún hallazgo impreso posee se dice como preparación de una sola vez
(issue 35: seed_mm4096_compile_cold apuntaba 1.17 ms a cold-start, dead-window y lazy-loading, ninguno
impreso). A un paso que ya reproduce CUDA graphs no se le dice que capture uno: si casi todo está en
graphs, su inactividad es el trabajo del host alrededor de las reproducciones. Las cifras por paso son
partes del paso medio (seed_mm64_cold: antes 46.1 ms de inactividad por paso frente a una mediana de
paso de 368 µs).

Solución:
Según dónde esté la inactividad: Python entre operaciones eager y su despacho -> torch.compile
(fusiona y recorta el despacho) o un CUDA graph del paso entero (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.CUDAGraph`); código ya compilado -> el CUDA graph, o más trabajo por llamada (un lote
mayor), nunca otro torch.compile; sincronizaciones dentro del paso -> quítalas primero (ver host-sync),
porque un graph no puede capturar un `.item()`; la inactividad bajo un paso del optimizador foreach
es de unfused-optimizer (`fused=True`), listada con lo que reclaman otros hallazgos. El propio profiler infla el tiempo del host,
unas 2x en bucles densos en operaciones (gpu/host_sync_item: 1003 µs por paso con profiler, 1138 con
record_shapes, 505 sin profiler; gpt2_conv1d, con with_stack y record_shapes, 74.9 ms con profiler
frente a ~29 ms sin él), así que el mensaje dice qué seguiría inactivo sin la mitad del tiempo de
host, y un veredicto cerca de su umbral se debe contrastar con el paso medido sin perfilar."""
