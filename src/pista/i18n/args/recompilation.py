"""recompilation: the arguments of its text (ftl/<lang>/recompilation.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, key, yes
from pista.i18n._fmt import t
from pista.rules.recompilation import STEADY, CompileSpan, Recompilation, RegionCall


def _rate(r: Recompilation) -> dict[str, str]:
    """In the steady state, how soon the fullest frame near the limit reaches it."""
    near = [f for f in r.frames if f.frame in r.near_limit]
    if r.kind != STEADY or not near:
        return {"has_rate": "no", "rate": "", "rate_frame": "", "rate_steps": ""}
    f = max(near, key=lambda f: f.entries)
    rate = f.compiles / max(r.steps, 1)
    return {"has_rate": yes(rate > 0), "rate": f"{rate:.1f}", "rate_frame": str(f.frame),
            "rate_steps": f"{max(0.0, (r.recompile_limit - f.entries) / rate):.0f}" if rate > 0 else ""}


def args(r: Recompilation, say: Say) -> dict[str, str]:
    near = [f for f in r.frames if f.frame in r.near_limit]
    return {
        "kind": key(r.kind), "compiles": str(r.compiles), "autotunes": str(r.autotunes),
        "has_autotunes": yes(r.autotunes), "steps_hit": how_many(len(r.steps_compiling)),
        "step_list": ", ".join(map(str, r.steps_compiling)),
        "compile_us": t(r.compile_us), "exposed_us": t(r.exposed_us), "share": f"{r.step_share_percent:.1f}",
        "step_exposed_us": t(r.exposed_us / r.steps) if r.steps else "",
        "has_frames": yes(r.frames),
        "ids": "; ".join(say("id-item", frame=str(f.frame), ids=", ".join(f.ids)) for f in r.frames),
        "frame_list": ", ".join(say("frame-item", frame=str(f.frame), ids=", ".join(f.ids)) for f in r.frames),
        "many_graphs": yes(r.graphs > 1), "graphs": str(r.graphs),
        "has_shapes": yes(r.shapes), "shapes": " -> ".join(r.shapes),
        "near": yes(r.near_limit), "limit": str(r.recompile_limit),
        "held": ", ".join(say("held-item", frame=str(f.frame), entries=str(f.entries)) for f in near),
        **_rate(r),
    }


NOTES = {
    CompileSpan: lambda n, say: {"autotune": yes(n.autotune), "has_id": yes(n.compile_id),
                                 "compile_id": n.compile_id or "", "dur_us": t(n.dur_us)},
    RegionCall: lambda n, say: {"frame": str(n.frame), "count": str(n.count)},
}
