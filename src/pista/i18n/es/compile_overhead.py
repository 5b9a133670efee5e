"""compile-overhead en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.compile_overhead import CompileOverhead, GuardCheck, WrapperCall

TITLE = "El envoltorio por llamada de torch.compile deja la GPU inactiva"


def _regions(r: CompileOverhead) -> str:
    return ", ".join(r.regions)


def _op_by_op(r: CompileOverhead) -> str:
    return (f"{r.calls} llamada(s) compiladas ({_regions(r)}) ejecutan su grafo operación a operación: "
            f"{r.op_by_op_ops} ops aten por llamada y ningún kernel generado, con {t(r.wrapper_us_per_call)} de host "
            f"por llamada entre esas ops y alrededor (el Python del grafo, no un envoltorio) para "
            f"{t(r.gpu_us_per_call)} de trabajo de GPU lanzado por llamada. {t(r.exposed_us)} de ese tiempo corre con "
            f"la GPU inactiva: {t(r.exposed_per_step_us)} en el paso mediano, el {r.step_share_percent:.1f}% del "
            "tiempo del paso.")


def message(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return _op_by_op(r)
    text = (f"{r.calls} llamada(s) compiladas ({_regions(r)}) pasan {t(r.wrapper_us)} de host en el envoltorio de "
            f"torch.compile (búsqueda en caché, guardas, prólogo, envoltorio generado; {t(r.wrapper_us_per_call)} por "
            f"llamada) para {t(r.gpu_us_per_call)} de trabajo de GPU lanzado por llamada. {t(r.exposed_us)} de ese "
            f"tiempo corre con la GPU inactiva: {t(r.exposed_per_step_us)} en el paso mediano, el "
            f"{r.step_share_percent:.1f}% del tiempo del paso.")
    if r.profiler_may_explain:
        text += (" El trabajo de GPU por llamada casi cubre el envoltorio: sin el profiler (que casi duplica "
                 "el tiempo de host de bucles densos en operaciones) el host podría adelantarse y ocultarlo; mide "
                 "el paso sin perfilar antes de actuar.")
    return text


def _eager(r: CompileOverhead) -> str:
    return ", ".join(n.removeprefix("autograd::engine::evaluate_function: ") for n in r.eager_ops)


def _change(r: CompileOverhead) -> str:
    graphs = ("torch.compile(mode='reduce-overhead') para reproducir los lanzamientos como CUDA graph sin el Python "
              "del envoltorio")
    if r.op_by_op_ops:
        return ("compila con un backend que genere código (backend='inductor', el de torch.compile por defecto, no "
                "'aot_eager' ni un compilador nulo o de TorchScript para AOTAutograd), para que las ops del grafo se "
                f"fusionen en kernels lanzados desde un único envoltorio generado, y luego usa {graphs}")
    if r.eager_ops:
        return (f"compila con las llamadas compiladas lo que el paso ejecuta en eager a su alrededor ({_eager(r)}: "
                f"{t(r.eager_idle_us)} de GPU inactiva por paso bajo ellas), para que un solo grafo contenga el paso, "
                f"y usa {graphs}")
    if r.wrapper_dominates:
        return (f"da más trabajo a cada llamada compilada (compila el paso entero en lugar de funciones pequeñas, "
                f"lotes más grandes) y usa {graphs}")
    return f"usa {graphs}"


def advice(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return f"Cada llamada ejecuta {r.op_by_op_ops} ops aten una a una: {_change(r)}."
    text = (f"Cada llamada lanza {t(r.gpu_us_per_call)} de trabajo de GPU tras {t(r.wrapper_us_per_call)} de "
            f"envoltorio: {_change(r)}; mantén estáticas las formas de entrada para que el grafo se reutilice.")
    if r.backward:
        text += " El backward compilado (CompiledFunctionBackward) se captura con él."
    if r.profiler_may_explain:
        text += " Comprueba antes el coste sin perfilar: puede ser del profiler."
    return text


def fix(r: CompileOverhead) -> str:
    who = r.regions[0] if len(r.regions) == 1 else f"Cada llamada compilada ({_regions(r)})"
    if r.op_by_op_ops:
        return (f"{who} ejecuta su grafo operación a operación ({r.op_by_op_ops} ops aten por llamada, ningún kernel "
                f"generado), {t(r.exposed_per_step_us)} por paso con la GPU inactiva: {_change(r)}.")
    return (f"{who} pasa {t(r.wrapper_us_per_call)} por llamada en el envoltorio de compilación para "
            f"{t(r.gpu_us_per_call)} de trabajo de GPU, {t(r.exposed_per_step_us)} por paso con la GPU inactiva: "
            f"{_change(r)}" + (" (si persiste sin perfilar)." if r.profiler_may_explain else "."))


def basis(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return "el tiempo de host entre las ops del grafo compilado con la GPU inactiva, en el paso mediano"
    text = ("el tiempo de host del envoltorio (búsqueda en caché, guardas, prólogo, código generado) con la GPU "
            "inactiva, en el paso mediano")
    return text + (" (puede ser coste del propio profiler)" if r.profiler_may_explain else "")


NOTES = {
    WrapperCall: lambda n: ((f"{t(n.host_us)} de tiempo de host entre sus ops" if n.between_ops else f"{t(n.host_us)} de tiempo de host en el envoltorio")
                            + (f" (incl. {t(n.lookup_us)} de búsqueda en caché)" if n.lookup_us is not None else "")
                            + f", {t(n.exposed_us)} con la GPU inactiva, para {t(n.gpu_us)} de trabajo de GPU "
                            "lanzado"),
    GuardCheck: lambda n: f"comprobación de guardas antes de la llamada: {t(n.lookup_us)}",
}

SEVERITY_EXCEPTION = "info donde la envoltura expuesta puede ser el coste del propio profiler (con la condición dicha)"

DOCS = """Qué:
El coste de host por llamada de torch.compile deja la GPU sin trabajo. Cada llamada a una función
compilada recorre las guardas (`TorchDynamo Cache Lookup`), entra en la `Torch-Compiled Region`,
ejecuta `Pregraph bytecode` y el `AOTDispatcher Runtime Wrapper Prologue` y luego el envoltorio
generado (`## Call CompiledFxGraph ...`) antes del primer lanzamiento; la regla suma ese tiempo de
host (la región menos los ops aten, los lanzamientos y el trabajo del profiler que contiene) y mide
qué parte corre con la GPU inactiva.

Por qué:
El grafo compilado ahorra trabajo por kernel, pero el envoltorio cuesta unos cientos de µs fijos de
Python por llamada. Si la llamada lanza un kernel de 2 µs, el envoltorio es el tiempo de ejecución y el
paso compilado puede ser más lento que el eager. Mientras la GPU tenga trabajo en cola, ese tiempo de
host se oculta y no cuesta nada.

Ejemplo:
`torch.compile(matmul_add)` a 64x64 en bf16 en una H200 (seed_mm64_compile): por llamada 34 µs de
búsqueda en caché y 345 µs en `Torch-Compiled Region: 0/1`, de ellos 115 µs de aten::addmm, para un
kernel de 2.1 µs. A 4096 (seed_mm4096_compile) el mismo envoltorio cuesta unos 200 µs por llamada
para un GEMM de 175 µs.

Impacto:
El tiempo de host del envoltorio (búsqueda en caché más la región sin su carga útil) durante el que
no corría ningún trabajo en la GPU, en el paso mediano: lo oculto tras la GPU no ahorra nada, y el
primer paso de una ventana suele empezar con la cola vacía (capture_mm4096_compile: 169, 0 y 0 µs por
paso, así que no se reporta). seed_mm64_compile 228 µs de 422 (54%, critical); series_mlp_compile
2.34 ms de 8.44 (28%, critical); capture_mlp_compile 794 µs de 4.40 ms (18%, warning). Cuando el
trabajo de GPU por llamada llega a la mitad del envoltorio, la exposición puede ser del profiler
(seed_mm4096_compile: 142 µs de 368 perfilados, pero sin profiler el paso tarda 182 µs con 174 µs de
GPU; gpu/elementwise_compiled 92 µs de 199, 46%): el mensaje lo dice y el hallazgo es info, como un
coste latente, con esa condición. Antes se disparaba por la razón entre tiempo de host y de GPU
(0.5x), contando también el tiempo oculto, siempre como warning.

Solución:
Nunca "prueba torch.compile": el código ya está compilado. Usa `mode="reduce-overhead"` (CUDA
graphs) para reproducir los lanzamientos sin el envoltorio de Python; donde el envoltorio domina, da
más trabajo a cada llamada (compila el paso entero, lotes más grandes)."""
