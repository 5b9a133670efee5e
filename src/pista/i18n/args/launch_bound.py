"""launch-bound: the arguments of its text (ftl/<lang>/launch_bound.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import pct, t, t_or_blank
from pista.rules.launch_bound import ItsLaunch, ItsOp, LaunchBound, TinyKernel


def _share(r: LaunchBound) -> str:
    whole = r.mean_step_us or r.step_us  # the per-step figures are means over the steps: so is their whole
    return pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%"


def args(r: LaunchBound, say: Say) -> dict[str, str]:
    names = list(dict.fromkeys(e.op for e in r.examples if e.op))
    return {
        "kernels": str(r.kernels), "steps": str(r.steps), "per_step": f"{r.kernels_per_step:.0f}",
        "median_kernel_us": t(r.median_kernel_us), "median_launch_us": t(r.median_launch_us),
        "has_op": yes(r.median_op_us is not None),
        "median_op_us": t_or_blank(r.median_op_us),
        "kernel_us": t(r.kernel_us_per_step), "launch_us": t(r.launch_us_per_step),
        "idle_us": t(r.idle_us_per_step), "share": _share(r), "whole_us": t(r.mean_step_us or r.step_us),
        "has_steps": yes(r.has_steps), "tiny": f"{r.tiny_per_step:.0f}", "tiny_max_us": t(r.tiny_max_us),
        "compiled": yes(r.compiled), "graphed": yes(r.graphed),
        "examples": "; ".join(say("example-item", count=str(e.count), kernel=e.kernel, op=e.op, has_op=yes(e.op))
                              for e in r.examples),
        "has_ops": yes(names), "ops": ", ".join(names),
        "new_shape": yes(r.new_shape_op), "new_shape_op": r.new_shape_op,
        "new_shape_calls": f"{r.new_shape_calls_per_step:.0f}", "graph_launches": f"{r.graph_launches_per_step:.0f}",
    }


NOTES = {
    TinyKernel: lambda n, say: {"count": str(n.count), "per_step": f"{n.per_step:.0f}"},
    ItsLaunch: lambda n, say: {"launch_us": t(n.launch_us), "kernel_us": t(n.kernel_us)},
    ItsOp: lambda n, say: {"op_us": t(n.op_us)},
}
