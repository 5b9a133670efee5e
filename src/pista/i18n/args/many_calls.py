"""many-calls: the arguments of its text (ftl/<lang>/many_calls.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import pct, t
from pista.rules.many_calls import ManyCalls, OneOfMany, RepeatedCall


def _step(r: ManyCalls) -> str:
    return "step" if r.has_steps else "window"


def _call(c: RepeatedCall, r: ManyCalls, say: Say) -> str:
    return say("call-item", kind=key(c.kind), name=c.name, per_step=f"{c.calls_per_step:.0f}", step=_step(r),
               source=key(c.source), launch_us=t(c.launch_us_per_step), gpu_us=t(c.gpu_us_per_step),
               avg_us=t(c.avg_us), cost_us=t(c.cost_us_per_step), idle_us=t(c.idle_us_per_step),
               has_gpu=yes(r.has_gpu))


def args(r: ManyCalls, say: Say) -> dict[str, str]:
    whole = r.mean_step_us or r.step_us  # the per-step figures are means over the steps: so is their whole
    c = r.calls[0]
    return {
        "count": str(len(r.calls)), "step": _step(r), "has_gpu": yes(r.has_gpu),
        "calls": "; ".join(_call(x, r, say) for x in r.calls), "idle_us": t(r.idle_us_per_step),
        "share": pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%", "whole_us": t(whole),
        "advices": " ".join(say("advice-item", source=key(s)) for s in dict.fromkeys(x.source for x in r.calls)),
        "graph": yes(r.has_gpu and not r.graphed),
        "name": c.name, "per_step": f"{c.calls_per_step:.0f}", "source": key(c.source),
        "call_idle_us": t(c.idle_us_per_step),
    }


NOTES = {
    OneOfMany: lambda n, say: {"per_step": f"{n.calls_per_step:.0f}", "steps": yes(n.steps)},
}
