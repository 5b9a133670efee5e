"""outside-wait: the arguments of its text (ftl/<lang>/outside_wait.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.outside_wait import BlockedCall, OutsideWait, WaitNote


def _call(c: BlockedCall, say: Say) -> str:
    return say("call-item", name=c.name, has_op=yes(c.op), op=c.op or "", us=t(c.dur_us), busy_us=t(c.busy_us),
               has_step=yes(c.step is not None), step=str(c.step))


def args(r: OutsideWait, say: Say) -> dict[str, str]:
    c = r.longest[0] if r.longest else None
    return {
        "calls": str(r.calls), "blocked_us": t(r.blocked_us / max(r.steps, 1)), "share": f"{r.step_share_percent:.1f}",
        "longest": "; ".join(_call(x, say) for x in r.longest),
        "name": c.name if c else "", "us": t(c.dur_us) if c else "",
    }


NOTES = {
    WaitNote: lambda n, say: {"busy_us": t(n.busy_us), "has_op": yes(n.op), "op": n.op or ""},
}
