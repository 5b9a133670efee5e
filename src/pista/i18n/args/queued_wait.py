"""queued-wait: the arguments of its text (ftl/<lang>/queued_wait.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key
from pista.i18n._fmt import t
from pista.rules.queued_wait import QueuedWait, StallNote


def _parts(r: QueuedWait) -> str:
    """Which of the two waits the finding tells: inside the window, before its first work, both or none."""
    inside, first = r.stall_us > 0, r.first_wait_us > 0
    return "both" if inside and first else "inside" if inside else "first" if first else "none"


def args(r: QueuedWait, say: Say) -> dict[str, str]:
    lo, hi = r.ahead_ms
    return {
        "parts": _parts(r), "unit": "step" if r.has_steps else "window",
        "stall_us": t(r.stall_us), "stalls": f"{r.stalls:.0f}", "longest_us": t(r.longest_us),
        "lo": f"{lo:.1f}", "hi": f"{hi:.1f}",
        "ends": ", ".join(say("end-item", us=t(v), next=key(k)) for k, v in r.by_next),
        "next": key(r.by_next[0][0]) if r.by_next else "none",
        "first_name": r.first_name, "first_launch_at_us": t(r.first_launch_at_us),
        "first_start_at_us": t(r.first_start_at_us), "first_wait_us": t(r.first_wait_us),
        "busy_after": f"{r.busy_after_percent:.0f}", "host_done_at_us": t(r.host_done_at_us),
    }


NOTES = {
    StallNote: lambda n, say: {"idle_us": t(n.idle_us), "ahead_us": t(n.ahead_us), "kind": key(n.next_kind)},
}
