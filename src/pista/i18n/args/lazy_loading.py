"""lazy-loading: the arguments of its text (ftl/<lang>/lazy_loading.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.lazy_loading import CallNote, FirstCall, LazyLoading, LoadNote, SetupNote, StartupNote


def _call(c: FirstCall, say: Say) -> str:
    return say("call-item", op=c.op, dur_us=t(c.dur_us), has_usual=yes(c.typical_us is not None),
               typical_us=t_or_blank(c.typical_us), has_loads=yes(c.loads),
               loads=str(c.loads), via=c.via, has_setup=yes(c.setup), setup=c.setup, setup_us=t(c.setup_us))


def args(r: LazyLoading, say: Say) -> dict[str, str]:
    return {
        "count": str(len(r.calls)), "events": str(r.events), "has_events": yes(r.events),
        "steps_hit": how_many(len(r.in_steps)), "step_list": ", ".join(map(str, r.in_steps)),
        "first_calls_us": t(r.first_calls_us), "load_us": t(r.load_us),
        "calls": "; ".join(_call(c, say) for c in r.calls), "ops": ", ".join(c.op for c in r.calls[:3]),
        "active": str(r.steps or "N"), "op": r.calls[0].op if r.calls else "",
        "has_others": yes(len(r.calls) > 1), "others": str(len(r.calls) - 1),
    }


NOTES = {
    CallNote: lambda n, say: {"loads": str(n.loads), "load_us": t(n.load_us)},
    LoadNote: lambda n, say: {"via": n.via},
    StartupNote: lambda n, say: {"has_setup": yes(n.setup), "setup": n.setup, "setup_us": t(n.setup_us)},
    SetupNote: lambda n, say: {"dur_us": t(n.dur_us)},
}
