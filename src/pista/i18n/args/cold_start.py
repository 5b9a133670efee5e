"""cold-start: the arguments of its text (ftl/<lang>/cold_start.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, key, yes
from pista.i18n._fmt import t
from pista.rules.cold_start import ColdStart, FirstNote, OpNote, ProfilerNote, SteadyNote


def _other_steps(others: tuple[int, ...]) -> dict[str, str]:
    """The other steps it comes back in: how many, the first and the last."""
    if not others:
        return {"other_steps": how_many(0), "other_first": "", "other_last": ""}
    return {"other_steps": how_many(len(others)), "other_first": str(others[0]), "other_last": str(others[-1])}


def _first_op(r: ColdStart) -> dict[str, str]:
    """The op that costs most on its first call (the cold call itself where none is named)."""
    if not r.ops:
        return {"op": r.name, "op_us": ""}
    return {"op": r.ops[0].name, "op_us": t(r.ops[0].first_us)}


def args(r: ColdStart, say: Say) -> dict[str, str]:
    return {
        "kind": key(r.kind), "name": r.name, "step": str(r.step), "others": str(r.others),
        **_other_steps(r.other_steps), "steps": str(r.steps or "N"),
        "first_us": t(r.first_us), "own_us": t(r.own_us), "median_us": t(r.median_others_us),
        "ratio": f"{r.ratio:.0f}",
        "compile_us": t(r.compile_us), "has_compile": yes(r.compile_us),
        "profiler_us": t(r.profiler_us), "has_profiler": yes(r.profiler_us),
        "ops": ", ".join(say("op-item", name=o.name, us=t(o.first_us), typical_us=t(o.typical_us)) for o in r.ops),
        "op_names": ", ".join(o.name for o in r.ops), "has_ops": yes(r.ops),
        **_first_op(r),
        "loading_us": t(r.loading_us), "has_loading": yes(r.loading_us),
        "queries": str(r.queries), "query_us": t(r.query_us), "has_queries": yes(r.queries),
        "cause": key(r.cause), "gpu": yes(r.gpu),
    }


NOTES = {
    FirstNote: lambda n, say: {"ratio": f"{n.ratio:.0f}", "median_us": t(n.median_us), "others": str(n.others)},
    OpNote: lambda n, say: {"us": t(n.self_us), "typical_us": t(n.typical_us)},
    ProfilerNote: lambda n, say: {"us": t(n.dur_us)},
    SteadyNote: lambda n, say: {"us": t(n.dur_us)},
}
