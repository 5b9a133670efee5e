"""static_first de launch-bound, en español: el texto en Python de overhead-bound la importa.

FALLBACK: el texto de launch-bound está en ftl/<lang>/launch_bound.ftl (su `static-first` dice lo mismo);
borra este módulo cuando overhead-bound esté convertido.
"""

from __future__ import annotations


def static_first(r) -> str:
    """La condición del CUDA graph, donde las formas del paso cambian (launch-bound, overhead-bound)."""
    if not r.new_shape_op:
        return ""
    return (f" Las formas cambian en cada paso ({r.new_shape_op}: {r.new_shape_calls_per_step:.0f} llamadas por paso "
            "con una forma que ningún otro paso de la ventana tiene): un CUDA graph reproduce formas fijas, así que "
            "hazlas estáticas primero (una caché KV estática preasignada donde una secuencia crece, longitudes "
            "rellenadas o por tramos), o torch.compile recompila y graba un grafo por forma.")
