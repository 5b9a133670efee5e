"""gpu-idle: the arguments of its text (ftl/<lang>/gpu_idle.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import pct, t
from pista.rules.gpu_idle import GpuIdle, IdleGap, Region, SelfTime, UnderRegion

# torch's name for a DataLoader that already has worker processes
WORKERS = "_MultiProcessingDataLoaderIter"


def _remedy(g: Region) -> str:
    """unfused-optimizer's remedy for the mode the region's ops show: none (already), fused, foreach or unknown."""
    if g.mode == "fused" or (g.mode == "foreach" and not g.fusable):
        return "already"
    if g.fusable:
        return "fused"
    return "foreach" if g.mode == "per-parameter" else "unknown"


def _region(g: Region, r: GpuIdle, say: Say) -> str:
    return say("region-item", **_region_args(g), step=_step(r), idle_us=t(g.idle_us_per_step))


def _step(r: GpuIdle) -> str:
    return "step" if r.has_steps else "window"


def _region_args(g: Region) -> dict[str, str]:
    return {
        "name": g.name, "kind": key(g.kind), "calls": str(g.calls), "many_calls": yes(g.calls > 1),
        "host_us": t(g.host_us_per_call), "launches": yes(g.launches_per_call >= 0.5),
        "launches_per_call": f"{g.launches_per_call:.0f}", "has_optimizer": yes(g.optimizer),
        "optimizer": g.optimizer, "optimizer_cap": g.optimizer[:1].upper() + g.optimizer[1:],
        "mode": key(g.mode) if g.mode else "none", "fusable": yes(g.fusable), "collective": g.collective,
    }


def args(r: GpuIdle, say: Say) -> dict[str, str]:
    g = r.regions[0]
    share = r.idle_us_per_step / r.step_us if r.step_us else 0.0
    return {
        **_region_args(g), "step": _step(r), "step_us": t(r.step_us), "idle_us": t(r.idle_us_per_step),
        "share": pct(min(share, 1.0)), "claimed_us": t(r.claimed_us_per_step),
        "all_collective": yes(all(x.kind == "collective" for x in r.regions)),
        "regions": "; ".join(_region(x, r, say) for x in r.regions), "longest_us": t(r.longest_gap_us),
        "has_ops": yes(r.ops_self_us), "ops": ", ".join(f"{n} {t(v)}" for n, v in r.ops_self_us),
        "no_op": yes(r.names_no_op), "no_op_us": t(r.no_op_us_per_step),
        "remedy": _remedy(g), "fix_fused": yes(g.fusable and g.mode != "fused"),
        "workers": yes(WORKERS in g.name),
    }


NOTES = {
    IdleGap: lambda n, say: {"idle_us": t(n.idle_us)},
    UnderRegion: lambda n, say: {"idle_us": t(n.idle_us), "launches": str(n.launches)},
    SelfTime: lambda n, say: {"self_us": t(n.self_us)},
}
