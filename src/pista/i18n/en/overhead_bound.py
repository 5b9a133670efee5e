"""overhead-bound in English."""

from __future__ import annotations

from pista.i18n._fmt import pct, t
from pista.i18n.en.launch_bound import static_first
from pista.rules.overhead_bound import BetweenOps, GpuWaitedUnder, OverheadBound

TITLE = "Host overhead bound: the GPU waits while the host dispatches ops"

ELSEWHERE = {
    "sync_us": "after syncs",
    "data_us": "under regions that launch almost nothing",
    "cold_us": "in one-time set-up",
    "compile_us": "while compiling",
    "profiler_us": "in the profiler's buffer requests",
    "setup_us": "while cuDNN sets up new shapes",
    "launch_us": "before tiny kernels",
    "calls_us": "under very repeated calls",
}

# a claim no rule with a finding reports (OverheadBound.owners), said as what it is
UNOWNED = {
    "sync_us": "waiting after syncs",
    "data_us": "under regions that launch almost nothing",
    "cold_us": "one-time set-up (first calls: CUDA's context, libraries and kernel loading)",
    "compile_us": "compiling",
    "profiler_us": "the profiler's own buffer requests",
    "setup_us": "cuDNN setting up new shapes",
    "launch_us": "before tiny kernels",
    "calls_us": "under very repeated calls",
}


def _left(r: OverheadBound) -> list[str]:
    return [f"{t(us)} claimed by {', '.join(rules)}" if claim == "others" else f"{t(us)} {ELSEWHERE[claim]} ({', '.join(rules)})"
            for claim, us, rules in r.left_to()]


def _unowned(r: OverheadBound) -> list[str]:
    return [f"{t(us)} {UNOWNED[claim]}" for claim, us in r.unowned()]


def _whole(r) -> float:
    """The mean step (the window): the per-step figures are means over the steps, so their whole is one too."""
    return r.mean_step_us or r.step_us


def _share(r: OverheadBound, us: float) -> str:
    share = pct(min(us / _whole(r), 1.0)) if _whole(r) else "0.0%"
    return f"{share} of the {t(_whole(r))} {'mean step' if r.has_steps else 'window'}"


def _ratio(r: OverheadBound) -> str:
    return f"{r.cpu_to_device_ratio:.0f}x" if r.cpu_to_device_ratio is not None else "no measurable GPU time"


def _top(r: OverheadBound) -> str:
    return ", ".join(f"{o.name} ({o.calls_per_step:.0f} per step, {t(o.idle_us_per_step)})" for o in r.top_ops)


def _where(r: OverheadBound) -> str:
    return r.where


def _profiler(r: OverheadBound) -> str:
    options = " and ".join(o for o, on in (("record_shapes", r.record_shapes), ("with_stack", r.with_stack)) if on)
    text = " The profiler about doubles the host time of loops like this" + (f" (and {options} add more)"
                                                                            if options else "") + ": "
    if r.unprofiled_us_per_step <= 0.01 * r.step_us:
        return text + "this idle could be the profiler's own cost; time the step unprofiled before acting on it."
    return text + (f"with half of the host time taken off, about {t(r.unprofiled_us_per_step)} per step would "
                   "still be idle.")


def message(r: OverheadBound) -> str:
    text = (f"Self CPU total {t(r.self_cpu_total_us)} vs Self CUDA total {t(r.self_device_total_us)} ({_ratio(r)}); "
            f"the GPU is busy {r.gpu_busy_percent:.1f}% of the {t(r.window_us)} window. Of its "
            f"{t(r.idle_us_per_step)} of idle per step, {t(r.per_op_us_per_step)} "
            f"({_share(r, r.per_op_us_per_step)}) is per-op overhead, the GPU waiting while the host "
            "dispatches ops")
    parts = []
    if r.between_ops_us_per_step > 0:
        engine = (f"; {t(r.engine_us_per_step)} of it around the backward, while the autograd engine starts or "
                  "finishes, which the profiler inflates" if r.engine_us_per_step >= 0.01 * r.step_us else "")
        parts.append(f"{t(r.between_ops_us_per_step)} with the host in no op (Python between ops{engine})")
    if r.compiled_us_per_step > 0:
        parts.append(f"{t(r.compiled_us_per_step)} inside compiled code")
    text += (": " + ", ".join(parts) if parts else "") + "."
    if r.top_ops:
        text += f" The GPU waits most under {_top(r)}."
    left = _left(r)
    if left:
        text += " Left to other findings, per step: " + "; ".join(left) + "."
    unowned = _unowned(r)
    if unowned:
        text += " Not per-op overhead either, per step: " + "; ".join(unowned) + "."
    if r.near_threshold:
        text += (f" The verdict sits near its threshold ({_ratio(r)} against {r.ratio_threshold:g}x, GPU busy "
                 f"{r.gpu_busy_percent:.0f}% against at most {r.busy_threshold_percent:.0f}%).")
    return text + _profiler(r)


ADVICE = {
    "compiled": ("The host time is in code that is already compiled: another torch.compile will not help. Replay "
                 "it as a CUDA graph (torch.compile(mode='reduce-overhead')) or give each call more work (a bigger "
                 "batch) so its fixed cost is shared."),
    "partly compiled": ("Part of the step already runs compiled: compile the rest with it (the loss, the backward's "
                        "eager ops, the optimizer step) so one graph holds the step, then replay it as a CUDA graph "
                        "(torch.compile(mode='reduce-overhead')); another torch.compile of the compiled part will not "
                        "help."),
    "python": ("Most of it is Python between ops: torch.compile the step (it traces the Python away and fuses the "
               "ops) or capture the step as a CUDA graph (torch.cuda.CUDAGraph, "
               "torch.compile(mode='reduce-overhead'))."),
    "dispatch": ("Most of it is the ops' own dispatch and launches: fuse them with torch.compile, capture the step "
                 "as a CUDA graph (torch.compile(mode='reduce-overhead'), torch.cuda.CUDAGraph), or give each call "
                 "more work (batch the inputs)."),
}


GRAPHED = {
    "mostly": ("The step already replays CUDA graphs ({n:.0f} graph launch(es) per step, most of its kernels): the GPU "
               "waits for the host's work around the replays (its Python, sampling, scheduling, input preparation), "
               "not for launches. Overlap that work with the replay (prepare the next step while the graph runs) or "
               "give each replay more work (a bigger batch); another CUDA graph or torch.compile will not help."),
    "partly": ("Part of the step already replays CUDA graphs ({n:.0f} graph launch(es) per step): capture the ops "
               "launched outside them into those graphs, or fuse them with torch.compile."),
}


def advice(r: OverheadBound) -> str:
    if r.graphed:
        return GRAPHED[r.graphed].format(n=r.graph_launches_per_step) + static_first(r)
    text = ""
    if r.syncs_at_end:
        text += (f"The {r.end_syncs_per_step:.0f} {r.sync_op} sync(s) per step come after the step's last kernel (its "
                 "result read back): capture what comes before them as a CUDA graph, and read the result after the "
                 "replay. ")
    if r.syncs_at_start:
        text += (f"The {r.start_syncs_per_step:.0f} {r.sync_op} sync(s) per step come before the step's first kernel "
                 "(its input's upload): they stay outside a CUDA graph of what follows, which reads the input from a "
                 "static buffer. ")
    if r.syncs_first:
        see = r.named(("host-sync", "pageable-memcpy"))
        text += (f"First remove the {r.mid_syncs_per_step:.0f} sync(s) per step inside ops"
                 + (f" (see {', '.join(see)})" if see else "") + ": a CUDA graph cannot "
                "capture a sync (.item(), .cpu(), torch.cuda.synchronize()) and torch.compile breaks its graph at "
                "one. ")
    text += ADVICE[_where(r)] + static_first(r)
    if r.near_threshold or r.record_shapes or r.with_stack:
        text += " Before acting, time the step without the profiler: it inflates exactly this host time."
    return text


def fix(r: OverheadBound) -> str:
    top = r.top_ops[0].name if r.top_ops else "the ops"
    head = (f"the GPU waits {t(r.per_op_us_per_step)} per step ({_share(r, r.per_op_us_per_step)}) while the host "
            f"dispatches ops ({top})")
    if r.graphed == "mostly":
        return f"{head} around its CUDA graph replays: overlap that host work with the replay, or batch more per replay"
    if r.graphed:
        return f"{head} outside the CUDA graphs it replays: capture those ops into the graphs, or fuse them"
    if r.syncs_first:
        return (f"{head}: remove the {r.mid_syncs_per_step:.0f} {r.sync_op} sync(s) per step, then "
                "capture the step as a CUDA graph")
    if r.syncs_at_end:
        return (f"{head}: capture the step up to its {r.sync_op} as a CUDA graph (the read-back stays outside) or "
                "torch.compile it")
    if _where(r) == "compiled":
        return f"{head} in compiled code: use torch.compile(mode='reduce-overhead') (CUDA graphs) or a bigger batch"
    if _where(r) == "partly compiled":
        return f"{head}, partly outside the compiled code: compile the whole step, then replay it as a CUDA graph"
    return f"{head}: torch.compile the step or capture it as a CUDA graph"


def basis(r: OverheadBound) -> str:
    return ("GPU idle inside the steps while the host dispatches ops, per step, without the idle other findings "
            "claim (after syncs, under data or set-up regions, compiling, the profiler's buffers, before tiny kernels, "
            "under repeated calls); upper bound")


NOTES = {
    GpuWaitedUnder: lambda n: (f"GPU idle {t(n.idle_us)} under this call; {t(n.idle_us_per_step)} per step under all "
                               "calls of this op"),
    BetweenOps: lambda n: f"GPU idle {t(n.idle_us)} with the host in no op (" + (
        "around the backward, the autograd engine starting or finishing)" if n.engine else "Python between ops)"),
}
