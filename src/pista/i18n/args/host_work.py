"""host-work: the arguments of its text (ftl/<lang>/host_work.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.host_work import HostWork, Preprocess, Stretch

# the preprocessing's arguments where the stretches hold none
_NO_PREPROCESS = {"preprocess": "no", "pre_us": "", "entry": "", "caller": "", "has_caller": "no", "who": ""}


def _where(r: HostWork) -> str:
    """Where the work is: in the user's frames, between two ops, after or before one, or outside any op."""
    if r.frames:
        return "frames"
    before, after = r.between
    if before and after:
        return "between"
    return "after" if before else ("before" if after else "none")


def _preprocess(p: Preprocess | None) -> dict[str, str]:
    if p is None:
        return _NO_PREPROCESS
    return {"preprocess": "yes", "pre_us": t(p.us), "entry": p.entry, "caller": p.caller, "has_caller": yes(p.caller),
            "who": p.caller or p.entry}


def args(r: HostWork, say: Say) -> dict[str, str]:
    return {
        "work_us": t(r.work_us), "stretches": str(r.stretches), "longest_us": t(r.longest_us), "idle_us": t(r.idle_us),
        "where": _where(r), "frames": ", ".join(f"{name} ({t(us)})" for name, us in r.frames),
        "before": r.between[0], "after": r.between[1], "has_frames": yes(r.frames), **_preprocess(r.preprocess),
    }


NOTES = {
    Stretch: lambda n, say: {"dur_us": t(n.dur_us), "idle_us": t(n.idle_us), "frame": n.frame,
                             "has_frame": yes(n.frame)},
}
