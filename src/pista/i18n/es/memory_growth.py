"""memory-growth en español."""

from __future__ import annotations

from pista.rules.memory_growth import Held, MemoryGrowth

TITLE = "La memoria crece paso a paso"


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def message(r: MemoryGrowth) -> str:
    text = (f"La memoria asignada en {r.device} al final de cada uno de {r.steps} pasos sube de "
            f"{_mb(r.first_bytes)} a {_mb(r.last_bytes)}, {_mb(r.growth_bytes_per_step)} más en cada paso")
    if r.steps_to_oom is not None:
        text += (f"; los {_mb(r.capacity_bytes)} del dispositivo duran unos {r.steps_to_oom:,.0f} pasos más a este "
                 "ritmo")
    held = f" Casi todo lo que retiene el último paso lo asignó {r.top_op}." if r.top_op else ""
    return text + "." + held


def advice(r: MemoryGrowth) -> str:
    return ("Algo mantiene vivos los tensores de cada paso: guarda los escalares como números (loss.item() cada N "
            "pasos) o separa lo que guardes (loss.detach()), y vacía listas y cachés que sobreviven al paso"
            + (f"; empieza por lo que retiene las salidas de {r.top_op}." if r.top_op else "."))


def fix(r: MemoryGrowth) -> str:
    return (f"La memoria de {r.device} crece {_mb(r.growth_bytes_per_step)} por paso"
            + (f" (retenida desde {r.top_op})" if r.top_op else "")
            + ": no guardes tensores con su grafo entre pasos (loss.detach() o loss.item()).")


def basis(r: MemoryGrowth) -> str:
    return ("memoria, no tiempo: bytes asignados al final de cada paso, creciendo en todos (no ahorra tiempo por "
            "paso)")


NOTES = {
    Held: lambda n: f"{n.bytes / 1e6:,.1f} MB asignados aquí en el último paso, aún retenidos al final",
}

SEVERITY_EXCEPTION = "una fuga cuesta memoria, no tiempo: se gradúa por lo pronto que el dispositivo se queda sin ella"

DOCS = """Qué:
Memoria que crece paso a paso: en una traza con `profile_memory=True`, los bytes asignados en un
dispositivo al final de cada paso perfilado suben en todos los pasos. La causa habitual es un tensor
guardado entre pasos con su grafo de autograd (`losses.append(loss)` en vez de `loss.item()` o
`loss.detach()`), o una caché que solo crece. La regla nombra los ops que asignaron la memoria que
sigue retenida al final de la ventana.

Por qué:
Cada paso mantiene vivas sus activaciones: la memoria sube hasta que el asignador se queda sin ella
(CUDA out of memory) horas después; antes, un asignador más lleno se fragmenta y llama más a cudaMalloc.

Ejemplo:
gpu/memory_leak en una H200: un paso de una MLP 2048-8192-2048 que añade su pérdida (con el grafo) a
una lista: la memoria asignada al final de los pasos es 663.8, 739.3 y 814.8 MB, +75.5 MB por paso;
los 150.1 GB de la H200 duran unos 1.980 pasos más. gpu/memory_steady (el mismo bucle guardando
`loss.detach()`) crece 512 bytes por paso y no dice nada.

Impacto:
No es tiempo: una fuga no cuesta nada por paso hasta que la ejecución falla. Es la excepción
documentada a la gravedad según el impacto: aviso siempre que se activa, crítico cuando el
dispositivo se quedaría sin memoria en menos de CRITICAL_STEPS_TO_OOM pasos a este ritmo. Su
impacto es 0 µs.

Solución:
Guarda los escalares como números de Python (`loss.item()`, cada N pasos) o separa lo que guardes
(`loss.detach()`); vacía las cachés y listas que sobreviven al paso; compruébalo con
`torch.cuda.memory_allocated()` al final de cada paso."""
