"""cudnn-setup: the arguments of its text (ftl/<lang>/cudnn_setup.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, key, yes
from pista.i18n._fmt import t, t_or_blank
from pista.rules.cudnn_setup import CallNote, CudnnSetup


def args(r: CudnnSetup, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "ops": ", ".join(r.ops), "kind": key(r.kind), "benchmark": yes(r.benchmark),
        "launches": f"{r.launches_per_call:.0f}", "syncs": str(r.syncs), "per_step": yes(r.steps),
        "steps_hit": how_many(len(r.in_steps)), "step_list": ", ".join(map(str, r.in_steps)),
        "idle_us": t(r.idle_us), "step_idle_us": t(r.idle_us / max(r.steps, 1)), "per_call_us": t(r.per_call_us),
        "has_typical": yes(r.typical_us is not None), "typical_us": t_or_blank(r.typical_us),
        "has_new": yes(r.new_shapes is not None), "new_shapes": str(r.new_shapes), "once": yes(r.once),
        "op": r.slowest[0].op if r.slowest else r.ops[0],
    }


NOTES = {
    CallNote: lambda n, say: {"idle_us": t(n.idle_us), "launches": str(n.launches), "dims": n.dims,
                              "has_dims": yes(n.dims)},
}
