"""kernel-variability in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._common import short_name
from pista.rules.kernel_variability import KernelVariability, SlowCall, TypicalCall

TITLE = "The same kernel varies from call to call"


def _what(r: KernelVariability) -> str:
    parts = [r.launch_config or "no launch config in the trace"]
    if r.input_dims:
        parts.append(f"inputs {r.input_dims}")
    if r.launch:
        parts.append(f"launch {r.launch + 1} within its op")
    return f"{short_name(r.name)} ({', '.join(parts)})"


def _steps(r: KernelVariability) -> str:
    if not r.slow_steps:
        return ""
    meds = list(r.step_median_us.values())
    which = ("steps " if len(r.slow_steps) > 1 else "step ") + ", ".join(map(str, r.slow_steps))
    return f" Median per step {min(meds):.1f}-{max(meds):.1f} µs; slow in {which}."


def message(r: KernelVariability) -> str:
    return (f"{_what(r)} over {r.calls} calls with the same inputs: min {t(r.min_us)}, median {t(r.median_us)}, "
            f"p95 {t(r.p95_us)} ({r.p95_over_median:.2f}x), max {t(r.max_us)} ({r.max_over_median:.2f}x); the calls "
            f"above the median cost {t(r.excess_us)} more than the median would, {t(r.excess_us / r.steps)} per "
            f"step ({r.step_share_percent:.1f}% of the step).{_steps(r)}")


def advice(r: KernelVariability) -> str:
    where = (f"in step{'s' if len(r.slow_steps) > 1 else ''} {', '.join(map(str, r.slow_steps))}"
             if r.slow_steps else "at the slowest calls")
    return (f"Look at what else runs {where} beside {short_name(r.name)} (other streams, other processes, "
            "clocks: nvidia-smi), separate or serialise the competing work, and compare medians per step rather "
            "than means.")


def fix(r: KernelVariability) -> str:
    where = f" in step{'s' if len(r.slow_steps) > 1 else ''} {', '.join(map(str, r.slow_steps))}" if r.slow_steps else ""
    return (f"{short_name(r.name)} takes up to {r.max_over_median:.1f}x its median for the same inputs{where}, "
            f"{t(r.excess_us / r.steps)} per step: find and separate the work that competes with its slow calls.")


def basis(r: KernelVariability) -> str:
    return ("the calls' time above the median of calls with the same kernel, launch and inputs, summed per step "
            "(an upper bound: a slow call off the critical path costs nothing)")


NOTES = {
    SlowCall: lambda n: f"{n.over_median:.2f}x the median",
    TypicalCall: lambda n: f"a typical call (nearest the {t(n.median_us)} median)",
}
