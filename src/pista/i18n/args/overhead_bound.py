"""overhead-bound: the arguments of its text (ftl/<lang>/overhead_bound.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import pct, t
from pista.rules.overhead_bound import BetweenOps, GpuWaitedUnder, OverheadBound


def _whole(r: OverheadBound) -> float:
    """The mean step (the window): the per-step figures are means over the steps, so their whole is one too."""
    return r.mean_step_us or r.step_us


def _options(r: OverheadBound) -> str:
    on = [o for o, flag in (("record_shapes", r.record_shapes), ("with_stack", r.with_stack)) if flag]
    return "both" if len(on) == 2 else on[0] if on else "none"


def _parts(r: OverheadBound, say: Say) -> str:
    parts = []
    if r.between_ops_us_per_step > 0:
        parts.append(say("between-item", us=t(r.between_ops_us_per_step), engine_us=t(r.engine_us_per_step),
                         engine=yes(r.engine_us_per_step >= 0.01 * r.step_us)))
    if r.compiled_us_per_step > 0:
        parts.append(say("compiled-item", us=t(r.compiled_us_per_step)))
    return ", ".join(parts)


def _left(r: OverheadBound, say: Say) -> str:
    return "; ".join(say("left-item", claim=key(claim), us=t(us), rules=", ".join(rules))
                     for claim, us, rules in r.left_to())


def _unowned(r: OverheadBound, say: Say) -> str:
    return "; ".join(say("unowned-item", claim=key(claim), us=t(us)) for claim, us in r.unowned())


def _top_ops(r: OverheadBound, say: Say) -> dict[str, str]:
    """The ops the GPU waits under most: the first's name and the list."""
    return {"has_top": yes(r.top_ops), "top": r.top_ops[0].name if r.top_ops else "",
            "top_ops": ", ".join(say("top-item", name=o.name, calls=f"{o.calls_per_step:.0f}", us=t(o.idle_us_per_step))
                                 for o in r.top_ops)}


def _fix_case(r: OverheadBound) -> str:
    if r.graphed:
        return f"graphed-{r.graphed}"
    if r.syncs_first:
        return "syncs-first"
    if r.syncs_at_end:
        return "syncs-at-end"
    return key(r.where) if key(r.where) in ("compiled", "partly-compiled") else "other"


def args(r: OverheadBound, say: Say) -> dict[str, str]:
    whole = _whole(r)
    parts, left, unowned = _parts(r, say), _left(r, say), _unowned(r, say)
    see = r.named(("host-sync", "pageable-memcpy")) if r.syncs_first else ()
    return {
        "self_cpu_us": t(r.self_cpu_total_us), "self_cuda_us": t(r.self_device_total_us),
        "has_ratio": yes(r.cpu_to_device_ratio is not None),
        "ratio": f"{r.cpu_to_device_ratio:.0f}" if r.cpu_to_device_ratio is not None else "",
        "ratio_threshold": f"{r.ratio_threshold:g}",
        "busy": f"{r.gpu_busy_percent:.1f}", "busy_round": f"{r.gpu_busy_percent:.0f}",
        "busy_threshold": f"{r.busy_threshold_percent:.0f}", "near_threshold": yes(r.near_threshold),
        "window_us": t(r.window_us), "idle_us": t(r.idle_us_per_step), "per_op_us": t(r.per_op_us_per_step),
        "share": pct(min(r.per_op_us_per_step / whole, 1.0)) if whole else "0.0%", "whole_us": t(whole),
        "whole": "step" if r.has_steps else "window",
        "has_parts": yes(parts), "parts": parts,
        **_top_ops(r, say),
        "has_left": yes(left), "left": left, "has_unowned": yes(unowned), "unowned": unowned,
        "options": _options(r), "unprofiled_small": yes(r.unprofiled_us_per_step <= 0.01 * r.step_us),
        "unprofiled_us": t(r.unprofiled_us_per_step),
        "graphed": key(r.graphed) if r.graphed else "none", "graph_launches": f"{r.graph_launches_per_step:.0f}",
        "new_shapes": yes(r.new_shape_op), "new_shape_op": r.new_shape_op,
        "new_shape_calls": f"{r.new_shape_calls_per_step:.0f}",
        "sync_op": r.sync_op, "syncs_at_end": yes(r.syncs_at_end), "end_syncs": f"{r.end_syncs_per_step:.0f}",
        "syncs_at_start": yes(r.syncs_at_start), "start_syncs": f"{r.start_syncs_per_step:.0f}",
        "syncs_first": yes(r.syncs_first), "mid_syncs": f"{r.mid_syncs_per_step:.0f}",
        "has_see": yes(see), "see": ", ".join(see), "where": key(r.where),
        "caution": yes(r.near_threshold or r.record_shapes or r.with_stack), "fix_case": _fix_case(r),
    }


NOTES = {
    GpuWaitedUnder: lambda n, say: {"idle_us": t(n.idle_us), "idle_us_per_step": t(n.idle_us_per_step)},
    BetweenOps: lambda n, say: {"idle_us": t(n.idle_us), "engine": yes(n.engine)},
}
