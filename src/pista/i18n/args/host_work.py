"""host-work: the arguments of its text (ftl/<lang>/host_work.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.host_work import HostWork, Stretch


def _where(r: HostWork) -> str:
    """Where the work is: in the user's frames, between two ops, after or before one, or outside any op."""
    if r.frames:
        return "frames"
    before, after = r.between
    if before and after:
        return "between"
    return "after" if before else ("before" if after else "none")


def args(r: HostWork, say: Say) -> dict[str, str]:
    p = r.preprocess
    return {
        "work_us": t(r.work_us), "stretches": str(r.stretches), "longest_us": t(r.longest_us), "idle_us": t(r.idle_us),
        "where": _where(r), "frames": ", ".join(f"{name} ({t(us)})" for name, us in r.frames),
        "before": r.between[0], "after": r.between[1], "has_frames": yes(r.frames),
        "preprocess": yes(p), "pre_us": t(p.us) if p else "", "entry": p.entry if p else "",
        "caller": p.caller if p else "", "has_caller": yes(p and p.caller),
        "who": (p.caller or p.entry) if p else "",
    }


NOTES = {
    Stretch: lambda n, say: {"dur_us": t(n.dur_us), "idle_us": t(n.idle_us), "frame": n.frame,
                             "has_frame": yes(n.frame)},
}
