"""launch-bound in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.rules.launch_bound import ItsLaunch, ItsOp, LaunchBound, TinyKernel

TITLE = "Many tiny kernels: the GPU waits while the host dispatches and launches them"


def _ops(r: LaunchBound) -> str:
    names = list(dict.fromkeys(e.op for e in r.examples if e.op))
    return ", ".join(names) if names else "the ops"


def message(r: LaunchBound) -> str:
    op = f", the median dispatching op {t(r.median_op_us)}" if r.median_op_us is not None else ""
    whole = r.mean_step_us or r.step_us  # the per-step figures are means over the steps: so is their whole
    share = pct(min(r.idle_us_per_step / whole, 1.0)) if whole else "0.0%"
    step = "mean step" if r.has_steps else "window"
    examples = "; ".join(f"{e.count}x {e.kernel}" + (f" from {e.op}" if e.op else "") for e in r.examples)
    return (f"{r.kernels} kernels in {r.steps} step(s) ({r.kernels_per_step:.0f} per step), median "
            f"{t(r.median_kernel_us)} each, while the median launch call takes {t(r.median_launch_us)}{op}; per "
            f"step {t(r.kernel_us_per_step)} of kernels for {t(r.launch_us_per_step)} of launch calls. The GPU "
            f"waits {t(r.idle_us_per_step)} per step ({share} of the {t(whole)} {step}) for the {r.tiny_per_step:.0f} "
            f"of them that run {t(r.tiny_max_us)} or less to be launched"
            + (" from compiled code" if r.compiled else "") + f". Most launched: {examples}.")


def static_first(r) -> str:
    """The CUDA graph's condition, where the steps' shapes change (launch-bound, overhead-bound)."""
    if not r.new_shape_op:
        return ""
    return (f" The shapes change every step ({r.new_shape_op}: {r.new_shape_calls_per_step:.0f} calls per step on a "
            "shape no other step in the window has): a CUDA graph replays fixed shapes, so make them static first "
            "(a preallocated static KV cache where a sequence grows, padded or bucketed lengths), or torch.compile "
            "recompiles and records a graph per shape.")


def _graphed(r: LaunchBound) -> str:
    return (f"The step already replays CUDA graphs ({r.graph_launches_per_step:.0f} graph launch(es) per step); these "
            "kernels are launched one by one outside them")


def advice(r: LaunchBound) -> str:
    if r.graphed:
        return (f"{_graphed(r)}: fuse the small ops ({_ops(r)}) with torch.compile, or capture them into the graphs "
                "with the rest, so their launches ride on a replay." + static_first(r))
    if r.compiled:
        return ("These tiny kernels come from code that is already compiled: capture the step as a CUDA graph "
                "(torch.compile(mode='reduce-overhead')) so their launches cost one graph launch, or give each "
                "kernel more work (a bigger batch)." + static_first(r))
    return (f"Fuse the small ops ({_ops(r)}): torch.compile fuses elementwise chains into one kernel; turn a Python "
            "loop over slices into tensor ops on the whole batch; or capture the step "
            "as a CUDA graph (torch.compile(mode='reduce-overhead')) so the launches cost one graph launch."
            + static_first(r))


def fix(r: LaunchBound) -> str:
    head = (f"{r.tiny_per_step:.0f} tiny kernels per step ({_ops(r)}) wait for the host to dispatch and launch "
            f"them, {t(r.idle_us_per_step)} of GPU idle per step")
    if r.graphed:
        return f"{head}, outside the CUDA graphs the step replays: fuse them, or capture them into those graphs"
    if r.compiled:
        return f"{head}: capture the compiled step as a CUDA graph (mode='reduce-overhead')"
    graph = (f"a CUDA graph once its shapes are static ({r.new_shape_op} changes shape every step)"
             if r.new_shape_op else "a CUDA graph")
    return f"{head}: fuse them with torch.compile or capture the step as {graph}"


def basis(r: LaunchBound) -> str:
    return ("GPU idle just before each tiny kernel, from the end of the previous device work to its start, per step, "
            "without idle other findings claim (syncs, data loading, compiling); upper bound")


NOTES = {
    TinyKernel: lambda n: f"{n.count} launches of this kernel in the steps ({n.per_step:.0f} per step)",
    ItsLaunch: lambda n: f"its launch call: {t(n.launch_us)} to launch a {t(n.kernel_us)} kernel",
    ItsOp: lambda n: f"the op that dispatched it: {t(n.op_us)}",
}
