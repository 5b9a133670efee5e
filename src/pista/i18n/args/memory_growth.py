"""memory-growth: the arguments of its text (ftl/<lang>/memory_growth.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.rules.memory_growth import Held, MemoryGrowth


def _mb(b: float) -> str:
    return f"{b / 1e6:,.1f} MB"


def args(r: MemoryGrowth, say: Say) -> dict[str, str]:
    return {
        "device": r.device, "steps": str(r.steps), "first": _mb(r.first_bytes), "last": _mb(r.last_bytes),
        "growth": _mb(r.growth_bytes_per_step), "capacity": _mb(r.capacity_bytes),
        "has_oom": yes(r.steps_to_oom is not None),
        "to_oom": "" if r.steps_to_oom is None else f"{r.steps_to_oom:,.0f}",
        "has_op": yes(r.top_op), "top_op": r.top_op,
    }


NOTES = {
    Held: lambda n, say: {"mb": f"{n.bytes / 1e6:,.1f}"},
}
