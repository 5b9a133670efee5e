"""graph-break en español."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.graph_break import BRANCH, READ, CallNote, GapNote, GraphBreak

TITLE = "torch.compile rompe el grafo: cada llamada corre como varios grafos con Python entre ellos"

_CAUSE = {
    BRANCH: "un if de Python sobre el valor de un tensor (aten::is_nonzero: bool(tensor))",
    READ: "el valor de un tensor leído en Python (aten::item: .item(), float(t), .tolist())",
}
_PYTHON = "Python que Dynamo no traza (no corre ningún op: print, logging, una llamada a otra biblioteca)"
_FIX = {
    BRANCH: "calcula ambas ramas y elige con torch.where (o torch.cond)",
    READ: "deja el valor como tensor y léelo cada N pasos fuera de la función compilada",
}
_FIX_PYTHON = "saca el print, el logging o la llamada ajena de la función compilada"


def _breaks(r: GraphBreak) -> str:
    n = round(r.graphs_per_call - 1)
    return "una vez" if n == 1 else f"{n} veces"


def message(r: GraphBreak) -> str:
    causes = "; ".join(_CAUSE.get(c, _PYTHON) for c in r.causes)
    ops = f" ({', '.join(r.ops_between[:4])})" if r.ops_between else ""
    gpu = f", {t(r.idle_us_per_step)} de ellos con la GPU inactiva" if r.idle_us_per_step is not None else ""
    return (f"La función compilada (frame {r.frame} de Dynamo) corre como {r.graphs_per_call:.0f} grafos por llamada "
            f"en sus {r.calls} llamadas: Dynamo rompió su grafo {_breaks(r)} por llamada. Entre los grafos: "
            f"{causes}{ops}. El host pasa {t(r.gap_us_per_step)} por paso entre los grafos{gpu}; cada ruptura además "
            "corta la fusión ahí, y los CUDA graphs no pueden cruzarla.")


def advice(r: GraphBreak) -> str:
    fixes = "; ".join(_FIX.get(c, _FIX_PYTHON) for c in r.causes)
    return ("Encuentra cada ruptura con TORCH_LOGS=\"graph_breaks\" (o torch._dynamo.explain(fn)(*args)) y luego "
            f"{fixes}; para una lectura de valor, torch._dynamo.config.capture_scalar_outputs = True también la deja "
            "en el grafo. torch.compile(fullgraph=True) convierte cualquier ruptura en un error, así que no vuelve.")


def fix(r: GraphBreak) -> str:
    first = r.causes[0] if r.causes else ""
    return (f"torch.compile rompe el grafo {_breaks(r)} por llamada "
            f"({_CAUSE.get(first, _PYTHON).split(' (')[0]}): encuéntrala con TORCH_LOGS=\"graph_breaks\" y "
            f"{_FIX.get(first, _FIX_PYTHON)}; fullgraph=True hace de una ruptura un error.")


def basis(r: GraphBreak) -> str:
    if r.idle_us_per_step is not None:
        return ("la GPU inactiva entre los grafos de cada llamada rota, por paso; una cota superior (el código entre "
                "ellos se queda)")
    return (f"el tiempo del host entre los grafos de cada llamada rota, por paso, dividido por {r.host_inflation:.0f} "
            "por la inflación del tiempo del host que causa el profiler; una cota superior (el código entre ellos se "
            "queda)")


NOTES = {
    CallNote: lambda n: f"una llamada compilada que corre como {n.graphs} grafos",
    GapNote: lambda n: f"el grafo siguiente, tras {t(n.gap_us)} de " + (", ".join(n.ops) if n.ops else "solo Python"),
}


DOCS = """Qué:
Una función compilada con torch.compile cuyo grafo rompe Dynamo: cada llamada corre como varios
grafos compilados con Python entre ellos. En la traza, una llamada `Torch-Compiled Region: F/C` de
primer nivel contiene las regiones de otros frames (las funciones de reanudación de Dynamo,
compiladas desde la ruptura) y dos o más `## Call CompiledFxGraph`; lo que corre entre los grafos
dice qué la rompió: `aten::is_nonzero` (un `if` de Python sobre un tensor), `aten::item` (un valor
leído en Python: `.item()`, `float(t)`, `.tolist()`) o ningún op (Python que Dynamo no traza:
`print`, una llamada a una biblioteca que no conoce).

Por qué:
Cada ruptura termina un grafo y empieza otro: una comprobación de guardas, una región y un envoltorio
más por llamada; la fusión se corta en la ruptura, y leer un valor sincroniza el host con la GPU, así
que la cola se vacía y la GPU espera mientras Python corre la función de reanudación y lanza el grafo
siguiente. Los CUDA graphs (`mode="reduce-overhead"`) tampoco pueden cruzar una ruptura.

Ejemplo:
gpu/graph_break_two (CPU, un hilo, un bloque de 3 Linear de 256 con lote 16): `if h.abs().mean() > 10:`
y `self.last = h.mean().item()` rompen el forward dos veces, tres grafos por llamada, 31 µs de host
entre grafos por ruptura con el profiler; sin profiler 165.5 µs por llamada frente a 130.6 µs de su
gemelo (torch.where, sin lectura; gpu/graph_break_whole, un grafo): 35 µs, el 27%. Una ruptura
(graph_break_branch, graph_break_item): 17-19 µs de 132 µs.

Impacto:
Por paso, el tiempo entre los grafos de cada llamada rota (del final de un `## Call CompiledFxGraph`
al inicio del siguiente): con GPU, la inactividad de la GPU en él (el vaciado por la sincronización y
el Python de la reanudación); solo CPU, su tiempo de host dividido por la inflación del tiempo de
host que causa el profiler (PROFILER_HOST_INFLATION: los 31 µs por ruptura de graph_break_two con
profiler, 17.5 µs sin él). Una cota superior: el trabajo entre los grafos (la reducción de la propia
rama) se queda. host-sync deja a esta regla las sincronizaciones en esos huecos. Calla por debajo
del 1% del paso; los fixtures compilados sin ruptura (seed_mm4096_compile, capture_mlp_compile,
series_mlp_compile, los que recompilan) no tienen ninguna región dentro de otra.

Solución:
Encuentra la ruptura con `TORCH_LOGS="graph_breaks"` (o `torch._dynamo.explain(fn)(*args)`);
`torch.compile(fullgraph=True)` convierte cualquier ruptura en un error. Una rama sobre un tensor:
`torch.where` o `torch.cond`; una lectura de valor: déjalo como tensor y léelo cada N pasos fuera de
la función compilada (o `torch._dynamo.config.capture_scalar_outputs = True`); print y logging:
sácalos de la función compilada."""
