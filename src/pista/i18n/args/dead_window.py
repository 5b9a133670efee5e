"""dead-window: the arguments of its text (ftl/<lang>/dead_window.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.dead_window import DeadWindow, FillerNote, FirstCallNote, RegionNote, TargetNote, WindowNote


def args(r: DeadWindow, say: Say) -> dict[str, str]:
    typical = r.typical_gap_us
    return {
        "region": r.region, "step": "" if r.step is None else str(r.step), "in_step": yes(r.step is not None),
        "steps": str(r.steps or "N"), "target": key(r.target), "first_target": r.first_target,
        "in_op": r.in_op or "", "has_op": yes(r.in_op), "gap_us": t(r.gap_us),
        "has_typical": yes(typical is not None), "typical_us": t_or_blank(typical),
        "ratio": "" if typical is None else f"{r.gap_us / max(typical, 1e-3):.0f}",
        "recorded_us": t(r.recorded_us), "untraced_us": t(r.untraced_us),
        "fillers": ", ".join(say("call-item", name=f.name, us=t(f.self_us)) for f in r.fillers),
        "has_fillers": yes(r.fillers), "profiler_us": t(r.profiler_us), "has_profiler": yes(r.profiler_us),
        "first_calls": ", ".join(say("call-item", name=c.name, us=t(c.dur_us)) for c in r.first_calls),
        "has_first_calls": yes(r.first_calls), "first_calls_us": t(r.first_calls_us),
        "loading_us": t(r.loading_us), "has_loading": yes(r.loading_us),
        "cause": key(r.cause), "warmed_up": yes(r.warmed_up),
    }


NOTES = {
    WindowNote: lambda n, say: {"region": n.region, "target": key(n.target)},
    RegionNote: lambda n, say: {},
    TargetNote: lambda n, say: {"target": key(n.target), "in_op": n.in_op or "", "has_op": yes(n.in_op)},
    FillerNote: lambda n, say: {"us": t(n.self_us)},
    FirstCallNote: lambda n, say: {"us": t(n.dur_us)},
}
