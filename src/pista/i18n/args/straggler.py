"""straggler: the arguments of its text (ftl/<lang>/straggler.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.straggler import LateCall, SlowStep, Straggler

# the arguments of the extra work where the rank did none more than the others
_NO_EXTRA = {"extra": "none", "alone": "no", "extra_name": "", "extra_us": "", "extra_others_us": "", "extra_more_us": ""}


def _extra(r: Straggler) -> dict[str, str]:
    x = r.extra
    if x is None:
        return _NO_EXTRA
    return {
        "extra": "device" if x.device else "host", "alone": yes(x.others_us < 1.0), "extra_name": x.name,
        "extra_us": t(x.own_us), "extra_others_us": t(x.others_us), "extra_more_us": t(x.own_us - x.others_us),
    }


def args(r: Straggler, say: Say) -> dict[str, str]:
    exposed = r.peers_exposed_us is not None and r.own_exposed_us is not None and r.peers_exposed_us > r.own_exposed_us
    return {
        "rank": str(r.rank), "others": str(r.world - 1), "cause": key(r.cause.value),
        "late_us": t(r.late_us or 0.0), "matched": str(r.matched_collectives), "step_us": t(r.step_us or 0.0),
        "others_step_us": t(r.others_step_us or 0.0), "wait_us": t(r.wait_us), "exposed": yes(exposed),
        "peers_exposed_us": t_or_blank(r.peers_exposed_us), "own_exposed_us": t_or_blank(r.own_exposed_us),
        **_extra(r),
    }


NOTES = {
    LateCall: lambda n, say: {"late_us": t(n.late_us), "nth": str(n.nth)},
    SlowStep: lambda n, say: {"more_us": t(n.dur_us - n.others_us), "others_us": t(n.others_us)},
}
