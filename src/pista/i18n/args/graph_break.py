"""graph-break: the arguments of its text (ftl/<lang>/graph_break.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.graph_break import CallNote, GapNote, GraphBreak


def args(r: GraphBreak, say: Say) -> dict[str, str]:
    n = round(r.graphs_per_call - 1)
    return {
        "frame": str(r.frame), "graphs": f"{r.graphs_per_call:.0f}", "calls": str(r.calls),
        "once": yes(n == 1), "breaks": str(n),
        "causes": "; ".join(say("cause-item", cause=key(c)) for c in r.causes),
        "fixes": "; ".join(say("fix-item", cause=key(c)) for c in r.causes),
        "cause": key(r.causes[0]) if r.causes else "none",
        "has_ops": yes(r.ops_between), "ops": ", ".join(r.ops_between[:4]),
        "gap_us": t(r.gap_us_per_step), "gpu": yes(r.idle_us_per_step is not None),
        "idle_us": t_or_blank(r.idle_us_per_step),
        "inflation": f"{r.host_inflation:.0f}",
    }


NOTES = {
    CallNote: lambda n, say: {"graphs": str(n.graphs)},
    GapNote: lambda n, say: {"gap_us": t(n.gap_us), "has_ops": yes(n.ops), "ops": ", ".join(n.ops)},
}
