"""anomaly-mode: the arguments of its text (ftl/<lang>/anomaly_mode.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.anomaly_mode import AnomalyMode, CheckNote


def _forward(r: AnomalyMode) -> str:
    """What the message says of the forward: it records tracebacks, runs outside anomaly mode, or may do either."""
    if r.forward_tracebacks:
        return "tracebacks"
    return "outside" if r.idle_us_per_step is not None else "unknown"


def args(r: AnomalyMode, say: Say) -> dict[str, str]:
    return {
        "gradients": f"{r.gradients_checked_per_step:.0f}", "nodes": f"{r.nodes_checked_per_step:.0f}",
        "checks_us": t(r.checks_us_per_step), "gpu": yes(r.idle_us_per_step is not None),
        "idle_us": t_or_blank(r.idle_us_per_step), "forward": _forward(r),
    }


NOTES = {
    CheckNote: lambda n, say: {"node": n.node},
}
