"""trailing-sync en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.trailing_sync import IdleSync, TrailingSync

TITLE = "Sincronización al final del paso sin nada que esperar"

# La llamada de Python detrás de cada llamada del runtime.
CALLS = {
    "cudaDeviceSynchronize": "torch.cuda.synchronize()",
    "cuCtxSynchronize": "torch.cuda.synchronize()",
    "cudaStreamSynchronize": "stream.synchronize()",
    "cuStreamSynchronize": "stream.synchronize()",
    "cudaEventSynchronize": "event.synchronize()",
    "cuEventSynchronize": "event.synchronize()",
}


def _call(r: TrailingSync) -> str:
    return CALLS.get(r.name, r.name)


def _steps(steps: tuple[int, ...]) -> str:
    if not steps:
        return "la ventana"
    if len(steps) == 1:
        return f"el paso {steps[0]}"
    return "los pasos " + ", ".join(map(str, steps))


def message(r: TrailingSync) -> str:
    where = f" en '{r.region}'" if r.region else ""
    idle = (f" (la GPU llevaba {t(r.gpu_idle_before_us)} inactiva)" if r.gpu_idle_before_us is not None else "")
    return (f"{r.syncs} llamada(s) {r.name}{where} al final de {_steps(r.steps_hit)} esperan poco o ningún trabajo "
            f"de GPU: la más larga dura {t(r.longest_us)} con {t(r.outstanding_us)} de trabajo pendiente{idle}. En "
            f"total {t(r.sync_us)}; cuestan {t(r.saved_us / r.steps)} por paso, el {r.step_share_percent:.1f}% del "
            "tiempo del paso"
            + (": las propias llamadas, porque la GPU no tenía nada pendiente." if not r.outstanding_us else "."))


def advice(r: TrailingSync) -> str:
    where = f" en '{r.region}'" if r.region else ""
    return (f"Quita el {_call(r)} de cada paso{where}: no espera a nada. Sincroniza solo donde el host necesita un "
            "resultado (registros cada N pasos, el final de una época) y mide el trabajo de GPU con eventos CUDA "
            "(torch.cuda.Event(enable_timing=True)) en lugar de sync + reloj de pared.")


def fix(r: TrailingSync) -> str:
    where = f" en '{r.region}'" if r.region else ""
    return (f"{r.name}{where} cierra cada paso con {t(r.outstanding_us)} de trabajo de GPU pendiente y cuesta "
            f"{t(r.saved_us / r.steps)} por paso: quita el {_call(r)} de cada paso y mide con eventos CUDA.")


def basis(r: TrailingSync) -> str:
    return ("la duración de las sincronizaciones, con el tope de la GPU inactiva desde el inicio de cada una hasta "
            "el siguiente trabajo de la GPU, por paso")


NOTES = {
    IdleSync: lambda n: (f"{t(n.outstanding_us)} de trabajo de GPU pendiente"
                         + (f" en '{n.region}'" if n.region else "") + f"; cuesta {t(n.saved_us)}"),
}

DOCS = """Qué:
Un `torch.cuda.synchronize()` explícito (cudaDeviceSynchronize / cudaStreamSynchronize llamado desde el
código del usuario, no desde dentro de un op) al final de un paso, cuando quedaba poco o ningún trabajo
de GPU pendiente: el host paga la llamada y empieza el paso siguiente con la cola de la GPU vacía.

Por qué:
Una sincronización solo compensa cuando espera a algo. Al final de un paso cuyos kernels ya
terminaron no compra nada: cuesta la propia llamada e impide que el host encole los lanzamientos del
paso siguiente mientras la GPU se vacía, así que CPU y GPU dejan de solaparse. Una sincronización que
espera a trabajo real y largo de la GPU (un GEMM fp32 de 2.6 ms) no es este problema: ahí el tiempo es
de la GPU.

Ejemplo:
`matmul_add` a 64x64 en bf16 en una H200 (gpu/trailing_sync), y después `torch.cuda.synchronize()` en
una región `sync` en cada paso: en el paso 2 el cudaDeviceSynchronize dura 3.799 µs con 0 µs de trabajo
pendiente (su último kernel terminó 26 µs antes); en los pasos 2-4 las tres sincronizaciones suman
9.887 µs, el 2.9% de los 344 µs de pasos.

Impacto:
Por paso: lo que cuesta de verdad cada sincronización, su duración con el tope de la GPU inactiva
desde su inicio hasta el siguiente trabajo de la GPU (o su final, en el último paso). Una
sincronización sin nada pendiente cuesta su propia llamada y nada más (la GPU no tenía nada que hacer
de todos modos): gpu/trailing_sync 3.3 µs de un paso de 114 µs (2.9%, info), gpu/capture_mm64_sync
10.9 µs de 325 µs (3.4%, info); las de 14 µs de los pasos de 15 ms de gpu/gpu_idle_dataloader (0.1%) y
las de fin de ventana de gpu/window_sync_* (menos del 1% de la ventana) no se reportan. Antes era
warning a partir de 1 ms de sincronización en total; ahora la severidad sigue a la parte del paso. El
cudaDeviceSynchronize que torch.profiler emite al parar es del profiler y nunca cuenta.

Solución:
Quita la sincronización de cada paso; sincroniza solo donde el host necesita un resultado (registros
cada N pasos, el final de una época) y mide el trabajo de GPU con eventos CUDA
(`torch.cuda.Event(enable_timing=True)`) en lugar de sync + reloj de pared."""
