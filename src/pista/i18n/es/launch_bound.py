"""launch-bound en español."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.launch_bound import ItsLaunch, ItsOp, LaunchBound, TinyKernel

TITLE = "Muchos kernels diminutos: la GPU espera mientras el host los despacha y los lanza"


def _ops(r: LaunchBound) -> str:
    names = list(dict.fromkeys(e.op for e in r.examples if e.op))
    return ", ".join(names) if names else "las operaciones"


def message(r: LaunchBound) -> str:
    op = f", la operación que los despacha {t(r.median_op_us)} de mediana" if r.median_op_us is not None else ""
    whole = r.mean_step_us or r.step_us  # las cifras por paso son medias sobre los pasos: su total también
    share = pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%"
    step = "del paso medio" if r.has_steps else "de la ventana"
    examples = "; ".join(f"{e.count}x {e.kernel}" + (f" desde {e.op}" if e.op else "") for e in r.examples)
    return (f"{r.kernels} kernels en {r.steps} paso(s) ({r.kernels_per_step:.0f} por paso), de mediana "
            f"{t(r.median_kernel_us)} cada uno, mientras la llamada de lanzamiento mediana tarda "
            f"{t(r.median_launch_us)}{op}; por paso, {t(r.kernel_us_per_step)} de kernels para "
            f"{t(r.launch_us_per_step)} de llamadas de lanzamiento. La GPU espera {t(r.idle_us_per_step)} por paso "
            f"(el {share} {step} de {t(whole)}) a que se lancen los {r.tiny_per_step:.0f} que duran "
            f"{t(r.tiny_max_us)} o menos"
            + (" desde código compilado" if r.compiled else "") + f". Los más lanzados: {examples}.")


def static_first(r) -> str:
    """La condición del CUDA graph, donde las formas del paso cambian (launch-bound, overhead-bound)."""
    if not r.new_shape_op:
        return ""
    return (f" Las formas cambian en cada paso ({r.new_shape_op}: {r.new_shape_calls_per_step:.0f} llamadas por paso "
            "con una forma que ningún otro paso de la ventana tiene): un CUDA graph reproduce formas fijas, así que "
            "hazlas estáticas primero (una caché KV estática preasignada donde una secuencia crece, longitudes "
            "rellenadas o por tramos), o torch.compile recompila y graba un grafo por forma.")


def _graphed(r: LaunchBound) -> str:
    return (f"El paso ya reproduce CUDA graphs ({r.graph_launches_per_step:.0f} lanzamiento(s) de graph por paso); estos "
            "kernels se lanzan uno a uno fuera de ellos")


def advice(r: LaunchBound) -> str:
    if r.graphed:
        return (f"{_graphed(r)}: fusiona las operaciones pequeñas ({_ops(r)}) con torch.compile, o captúralas en los "
                "graphs con el resto, para que sus lanzamientos vayan en una reproducción." + static_first(r))
    if r.compiled:
        return ("Estos kernels diminutos vienen de código ya compilado: captura el paso como CUDA graph "
                "(torch.compile(mode='reduce-overhead')) para que sus lanzamientos cuesten uno solo, o da más "
                "trabajo a cada kernel (un lote mayor)." + static_first(r))
    return (f"Fusiona las operaciones pequeñas ({_ops(r)}): torch.compile fusiona cadenas elementales en un solo "
            "kernel; convierte el bucle de Python sobre trozos en operaciones de tensores sobre el lote entero; o "
            "captura el paso como CUDA graph "
            "(torch.compile(mode='reduce-overhead')) para que los lanzamientos cuesten uno solo." + static_first(r))


def fix(r: LaunchBound) -> str:
    head = (f"{r.tiny_per_step:.0f} kernels diminutos por paso ({_ops(r)}) esperan a que el host los despache y "
            f"lance, {t(r.idle_us_per_step)} de GPU inactiva por paso")
    if r.graphed:
        return f"{head}, fuera de los CUDA graphs que el paso reproduce: fusiónalos o captúralos en esos graphs"
    if r.compiled:
        return f"{head}: captura el paso compilado como CUDA graph (mode='reduce-overhead')"
    graph = (f"CUDA graph cuando sus formas sean estáticas ({r.new_shape_op} cambia de forma en cada paso)"
             if r.new_shape_op else "CUDA graph")
    return f"{head}: fusiónalos con torch.compile o captura el paso como {graph}"


def basis(r: LaunchBound) -> str:
    return ("GPU inactiva justo antes de cada kernel diminuto, desde el final del trabajo anterior hasta su inicio, por "
            "paso, sin la inactividad que reclaman otros hallazgos (sincronizaciones, carga de datos, compilación); "
            "cota superior")


NOTES = {
    TinyKernel: lambda n: f"{n.count} lanzamientos de este kernel en los pasos ({n.per_step:.0f} por paso)",
    ItsLaunch: lambda n: f"su llamada de lanzamiento: {t(n.launch_us)} para lanzar un kernel de {t(n.kernel_us)}",
    ItsOp: lambda n: f"la operación que lo despachó: {t(n.op_us)}",
}

DOCS = """Qué:
Cada paso lanza muchos kernels diminutos y lanzar uno cuesta más tiempo de host que ejecutarlo: el
kernel mediano dura unos pocos µs o menos, mientras que la llamada de lanzamiento (cudaLaunchKernel,
cuLaunchKernelEx) tarda lo mismo o más, y la operación que lo despachó más todavía. La regla nombra
los kernels y las operaciones que los lanzan, y la GPU inactiva mientras el host los despacha.

Por qué:
Un lanzamiento cuesta ~5-10 µs de host (Python, el dispatcher, el driver CUDA); una operación
elemental sobre un tensor pequeño tarda 1 µs. Con cientos por paso, la GPU termina cada kernel antes
de que llegue el siguiente y el paso dura la suma de los lanzamientos. Una GPU más rápida no ayuda;
menos kernels y más grandes, sí.

Ejemplo:
gpu/launch_bound en una H200: 200 operaciones elementales diminutas (mul, add sobre 256 floats) por
paso; 600 kernels en 3 pasos de 0.928 µs de mediana, frente a un cudaLaunchKernel mediano de 6.49 µs;
188 µs de kernels por paso para 1.37 ms de llamadas de lanzamiento. La GPU espera 4.19 ms por paso a
que se lancen, el 95% de la mediana de paso de 4.41 ms.

Impacto:
Por paso: la GPU inactiva justo antes de cada kernel diminuto, desde el final del trabajo anterior del
dispositivo hasta el inicio del kernel (la GPU esperaba ese lanzamiento), sin contar la inactividad que
reclama otro hallazgo (de una sincronización, de una región de carga de datos, de la compilación, del
profiler): lo que fusionar esas operaciones en pocos kernels, o reproducirlas como CUDA graph,
ahorraría como mucho (cota superior). Es la parte de la inactividad por operación que explican los
kernels diminutos: `many-calls` y `overhead-bound` solo toman lo que queda, así que la misma
inactividad nunca se cuenta dos veces (en gpu/launch_bound overhead-bound se queda 59 µs, el 1.3%, y
many-calls nada). Antes la regla no tenía impacto y repetía el veredicto de overhead-bound y los
aten::mul / aten::add de many-calls.

Los kernels que reproduce un lanzamiento de graph (cudaGraphLaunch, hipGraphLaunch) no se lanzan uno
a uno y quedan fuera; a un programa que ya reproduce graphs se le dice que fusione el resto o lo
capture en esos graphs, no que capture el paso (issue 35: foreign/hta_negq_rank0, 14 lanzamientos de
graph por paso, sus 135 kernels contados antes). Las cifras por paso son medias sobre los pasos,
partes del paso medio (una parte media frente a la mediana de paso podía superarla).

Solución:
Fusiona las operaciones: torch.compile (Inductor fusiona cadenas elementales en un kernel Triton),
optimizadores foreach/fusionados (`fused=True`), vectoriza sobre el lote en vez de iterar en Python;
reproduce el paso entero como CUDA graph (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.CUDAGraph`) para que los lanzamientos cuesten uno solo. El código ya compilado necesita el
CUDA graph (o más trabajo por llamada), no otro torch.compile."""
