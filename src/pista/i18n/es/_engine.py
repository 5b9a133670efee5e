"""El texto del motor en español: cómo se estimó un impacto reproducido."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.timeline import EditCounts


def _what(c: EditCounts) -> str:
    parts = []
    if c.removed:
        parts.append(f"{c.removed:,} evento(s) quitados (operaciones con lo que lanzaron, o kernels y copias)")
    if c.scaled_host:
        parts.append(f"el tiempo del host bajo {c.scaled_host:,} evento(s) acortado")
    if c.resized_work:
        parts.append(f"{c.resized_work:,} kernel(s) o copias redimensionados")
    if c.unblocked:
        parts.append(f"{c.unblocked:,} espera(s) quitadas")
    if c.readied:
        parts.append(f"{c.readied:,} kernel(s) o copias ejecutados al lanzarse, sin la espera que la traza muestra antes")
    return "; ".join(parts) or "ningún cambio"


def replay_basis(us: float, alone_us: float | None, unprofiled_us: float | None, unprofiled_share: float | None,
                 counts: EditCounts) -> str:
    alone = ""
    if alone_us is not None and abs(alone_us - us) >= 0.05 * max(us, 1e-9):
        alone = (f" ({t(alone_us)} por sí solo, perfilado; parte se atribuye a los arreglos ordenados antes)"
                 if alone_us > us else f" ({t(alone_us)} por sí solo, perfilado; más una vez hechos los arreglos "
                 "ordenados antes)")
    clean = "" if unprofiled_us is None else "; la cifra sin el profiler es la que lo ordena"
    return f"reproducción de los pasos perfilados con el arreglo aplicado ({_what(counts)}){alone}{clean}"
