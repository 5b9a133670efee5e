"""graph-break in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.graph_break import BRANCH, READ, CallNote, GapNote, GraphBreak

TITLE = "torch.compile's graph breaks: each call runs as several graphs with Python between them"

_CAUSE = {
    BRANCH: "a Python if on a tensor's value (aten::is_nonzero: bool(tensor))",
    READ: "a tensor's value read in Python (aten::item: .item(), float(t), .tolist())",
}
_PYTHON = "Python Dynamo does not trace (no op runs there: print, logging, a call into another library)"
_FIX = {
    BRANCH: "compute both sides and pick with torch.where (or torch.cond)",
    READ: "keep the value a tensor and read it every N steps outside the compiled function",
}
_FIX_PYTHON = "move the print, logging or foreign call out of the compiled function"


def _breaks(r: GraphBreak) -> str:
    n = round(r.graphs_per_call - 1)
    return "once" if n == 1 else f"{n} times"


def message(r: GraphBreak) -> str:
    causes = "; ".join(_CAUSE.get(c, _PYTHON) for c in r.causes)
    ops = f" ({', '.join(r.ops_between[:4])})" if r.ops_between else ""
    gpu = f", {t(r.idle_us_per_step)} of it with the GPU idle" if r.idle_us_per_step is not None else ""
    return (f"The compiled function (Dynamo frame {r.frame}) runs as {r.graphs_per_call:.0f} graphs a call in its "
            f"{r.calls} calls: Dynamo broke its graph {_breaks(r)} a call. Between the graphs: {causes}{ops}. "
            f"The host spends {t(r.gap_us_per_step)} per step between the graphs{gpu}; each break also stops "
            "fusion there, and CUDA graphs cannot span it.")


def advice(r: GraphBreak) -> str:
    fixes = "; ".join(_FIX.get(c, _FIX_PYTHON) for c in r.causes)
    return ("Find each break with TORCH_LOGS=\"graph_breaks\" (or torch._dynamo.explain(fn)(*args)), then "
            f"{fixes}; for a value read, torch._dynamo.config.capture_scalar_outputs = True also keeps it in the "
            "graph. torch.compile(fullgraph=True) turns any break into an error, so none comes back.")


def fix(r: GraphBreak) -> str:
    first = r.causes[0] if r.causes else ""
    return (f"torch.compile's graph breaks {_breaks(r)} a call ({_CAUSE.get(first, _PYTHON).split(' (')[0]}): "
            f"find it with TORCH_LOGS=\"graph_breaks\" and {_FIX.get(first, _FIX_PYTHON)}; fullgraph=True makes a "
            "break an error.")


def basis(r: GraphBreak) -> str:
    if r.idle_us_per_step is not None:
        return ("the GPU idle between each broken call's graphs, per step; an upper bound (the code between them "
                "stays)")
    return (f"the host time between each broken call's graphs, per step, over {r.host_inflation:.0f} for the "
            "profiler's inflation of host time; an upper bound (the code between them stays)")


NOTES = {
    CallNote: lambda n: f"a compiled call run as {n.graphs} graphs",
    GapNote: lambda n: f"the next graph, after {t(n.gap_us)} of " + (", ".join(n.ops) if n.ops else "Python alone"),
}
