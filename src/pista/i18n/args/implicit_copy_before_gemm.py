"""implicit-copy-before-gemm: the arguments of its text (ftl/<lang>/implicit_copy_before_gemm.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules._common import short_name
from pista.rules.implicit_copy_before_gemm import Fill, FillCall, FillGroup, GemmAfter, ImplicitCopy


def _steps(steps: tuple[int, ...]) -> str:
    """How the steps are written: none, one, a few listed, or a range."""
    return "none" if not steps else "one" if len(steps) == 1 else "few" if len(steps) <= 3 else "range"


def _group(g: FillGroup, say: Say) -> str:
    return say("group-item", count=str(g.count), fill=g.fill, op=g.op, gemm=short_name(g.gemm),
               steps=_steps(g.steps), step_list=", ".join(map(str, g.steps)),
               first=str(g.steps[0]) if g.steps else "", last=str(g.steps[-1]) if g.steps else "",
               n=str(len(g.steps)))


def args(r: ImplicitCopy, say: Say) -> dict[str, str]:
    top = r.groups[0] if r.groups else None
    return {
        "pairs": str(r.pairs), "groups": "; ".join(_group(g, say) for g in r.groups),
        "more": yes(r.more_groups), "more_groups": str(r.more_groups), "device_us": t(r.device_us),
        "host_api_us": t(r.host_api_us), "gap_min_us": t(r.gap_us_min), "gap_max_us": t(r.gap_us_max),
        "queued": str(r.queued), "cost_us": t(r.cost_us / r.steps), "share": f"{r.step_share_percent:.1f}",
        "op": top.op if top else "", "count": str(top.count) if top else "",
        "gemm": short_name(top.gemm) if top else "",
    }


NOTES = {
    Fill: lambda n, say: {"op": n.op, "cost_us": t(n.cost_us)},
    FillCall: lambda n, say: {"dur_us": t(n.dur_us)},
    GemmAfter: lambda n, say: {"gap_us": t(n.gap_us), "queued": yes(n.queued)},
}
