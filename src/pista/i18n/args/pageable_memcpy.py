"""pageable-memcpy: the arguments of its text (ftl/<lang>/pageable_memcpy.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.pageable_memcpy import BlockedCopyCall, CopyGroup, PageableCopy, PageableMemcpy

# A copy this small (MiB per call) is a tensor built on the host each step: build it on the GPU.
SMALL_MIB = 1.0


def _where(g: CopyGroup) -> dict[str, str]:
    return {"op": g.op, "region": g.region or "", "in_region": yes(g.region)}


def _group(g: CopyGroup, say: Say) -> str:
    return say("group-item", **_where(g), copies=str(g.copies), one=yes(g.copies == 1), direction=g.direction,
               read_back=yes(g.direction == "DtoH"), why="yes", mib=f"{g.mib:.1f}", device_us=t(g.device_us),
               gb_s=f"{g.gb_s:.1f}", has_pinned=yes(g.pinned_gb_s),
               pinned_gb_s=f"{g.pinned_gb_s:.1f}" if g.pinned_gb_s else "", blocked_us=t(g.blocked_us),
               saved_us=t(g.saved_us))


def _change(g: CopyGroup) -> str:
    """Which change the costliest group's copies ask for."""
    if g.direction == "DtoH":
        return "read-back"
    if g.loader:
        return "loader"
    return "small" if g.mib / max(g.copies, 1) < SMALL_MIB else "pin"


def _first(r: PageableMemcpy) -> dict[str, str]:
    """The costliest group's: its advice and fix."""
    if not r.groups:
        return dict.fromkeys(("op", "region", "in_region", "change", "htod", "read_back", "mib_call",
                              "step_blocked_us", "saved_us"), "")
    g = r.groups[0]
    return {
        **_where(g), "change": _change(g), "htod": yes(g.direction == "HtoD"),
        "read_back": yes(g.direction == "DtoH"), "mib_call": f"{g.mib / max(g.copies, 1):.1f}",
        "step_blocked_us": t(g.blocked_us / r.steps), "saved_us": t(g.saved_us / r.steps),
    }


def args(r: PageableMemcpy, say: Say) -> dict[str, str]:
    return {
        "groups": "; ".join(_group(o, say) for o in r.groups), "total_us": t(r.saved_us / r.steps),
        "share": f"{r.step_share_percent:.1f}", "why": "no", "has_others": yes(len(r.groups) > 1),
        "others": ", ".join(say("where-item", **_where(o)) for o in r.groups[1:]), **_first(r),
    }


NOTES = {
    PageableCopy: lambda n, say: {"mib": f"{n.mib:.1f}", "gb_s": f"{n.gb_s:.1f}", "has_pinned": yes(n.pinned_gb_s),
                                  "pinned_gb_s": f"{n.pinned_gb_s:.1f}" if n.pinned_gb_s else ""},
    BlockedCopyCall: lambda n, say: {"blocked_us": t(n.blocked_us), "saved_us": t(n.saved_us),
                                     "read_back": yes(n.read_back), "why": "yes"},
}
