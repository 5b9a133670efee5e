"""allocator-churn: the arguments of its text (ftl/<lang>/allocator_churn.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.allocator_churn import AllocatorChurn, AllocCall, AllocNote


def _call(a: AllocCall, r: AllocatorChurn, say: Say) -> str:
    under = ", ".join(a.under[:3])
    return say("call-item", name=a.name, per_step=f"{a.per_step:.{1 if r.has_steps else 0}f}",
               has_steps=yes(r.has_steps), has_under=yes(under), under=under, host_us=t(a.host_us))


def _first(r: AllocatorChurn) -> str:
    """What the advice opens with: the frees inside ops, an empty_cache() in the loop, or grad mode."""
    if r.frees_in_ops:
        return "in-ops"
    if r.frees_outside_ops:
        return "outside-ops"
    return "grad-mode" if r.grad_mode else "none"


def _change(r: AllocatorChurn) -> str:
    if r.grad_mode:
        return "grad-mode"
    if r.frees_in_ops:
        return "in-ops"
    return "outside-ops" if r.frees_outside_ops else "static"


def args(r: AllocatorChurn, say: Say) -> dict[str, str]:
    return {
        "calls": "; ".join(_call(a, r, say) for a in r.calls), "has_steps": yes(r.has_steps),
        "steps_with_calls": str(r.steps_with_calls), "steps": str(r.steps), "host_us": t(r.host_us),
        "idle_us": t(r.idle_us), "share": f"{r.step_share_percent:.1f}", "frees_in_ops": yes(r.frees_in_ops),
        "first": _first(r), "change": _change(r), "names": "/".join(a.name for a in r.calls),
        "per_step": f"{r.calls_per_step:.0f}",
    }


NOTES = {
    AllocNote: lambda n, say: {"has_under": yes(n.under), "under": n.under, "host_us": t(n.host_us),
                               "busy_us": t(n.gpu_busy_us)},
}
