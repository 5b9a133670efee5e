"""gemm-heuristics: the arguments of its text (ftl/<lang>/gemm_heuristics.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.gemm_heuristics import GemmHeuristics, KernelNote, ShapeNote


def _per(r: GemmHeuristics) -> str:
    return "once" if r.once else "step" if r.steps else "window"


def args(r: GemmHeuristics, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "shapes": str(r.shapes), "steps_hit": how_many(len(r.in_steps)),
        "step_list": ", ".join(map(str, r.in_steps)), "wait_us": t(r.wait_us),
        "usual": yes(r.typical_us is not None), "typical_us": t_or_blank(r.typical_us),
        "new": "; ".join(say("call-item", op=n.op, dims=n.dims, wait_us=t(n.wait_us), kernel=n.kernel) for n in r.new),
        "loads": str(r.loads), "has_loads": yes(r.loads), "queries": str(r.queries), "has_queries": yes(r.queries),
        "dims": ", ".join(n.dims for n in r.new[:3]), "once": yes(r.once),
        "first_pass": yes(r.once or (r.steps > 1 and len(r.in_steps) == 1)),
        "op": r.new[0].op if r.new else "", "chain": " -> ".join(x.dims for x in r.new[:3]),
        "per_step_us": t(r.wait_us / max(r.steps, 1)), "idle_us": t(r.idle_us), "per": _per(r),
    }


NOTES = {
    ShapeNote: lambda n, say: {"dims": n.dims, "wait_us": t(n.wait_us)},
    KernelNote: lambda n, say: {"dur_us": t(n.dur_us)},
}
