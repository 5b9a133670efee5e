"""kernel-variability: the arguments of its text (ftl/<lang>/kernel_variability.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, yes
from pista.i18n._fmt import t
from pista.rules._common import short_name
from pista.rules.kernel_variability import KernelVariability, SlowCall, TypicalCall


def _what(r: KernelVariability, say: Say) -> str:
    """The kernel's launch config, inputs and launch within its op, as far as the trace says."""
    parts = [say("config-item", config=r.launch_config, has_config=yes(r.launch_config))]
    if r.input_dims:
        parts.append(say("inputs-item", dims=r.input_dims))
    if r.launch:
        parts.append(say("launch-item", launch=str(r.launch + 1)))
    return ", ".join(parts)


def args(r: KernelVariability, say: Say) -> dict[str, str]:
    meds = list(r.step_median_us.values())
    return {
        "kernel": short_name(r.name), "what": _what(r, say), "calls": str(r.calls), "min_us": t(r.min_us),
        "median_us": t(r.median_us), "p95_us": t(r.p95_us), "p95_ratio": f"{r.p95_over_median:.2f}",
        "max_us": t(r.max_us), "max_ratio": f"{r.max_over_median:.2f}", "max_ratio_1": f"{r.max_over_median:.1f}",
        "excess_us": t(r.excess_us), "step_excess_us": t(r.excess_us / r.steps) if r.steps else "",
        "share": f"{r.step_share_percent:.1f}", "slow": how_many(len(r.slow_steps)),
        "slow_list": ", ".join(map(str, r.slow_steps)),
        "min_med": f"{min(meds):.1f}" if meds else "", "max_med": f"{max(meds):.1f}" if meds else "",
    }


NOTES = {
    SlowCall: lambda n, say: {"ratio": f"{n.over_median:.2f}"},
    TypicalCall: lambda n, say: {"median_us": t(n.median_us)},
}
