"""profiler-overhead: the arguments of its text (ftl/<lang>/profiler_overhead.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, how_many, yes
from pista.i18n._fmt import num, t
from pista.rules.profiler_overhead import InflatedOp, InsideOp, OutsideOps, ProfilerOverhead


def _op(o: InflatedOp, say: Say) -> str:
    return say("op-item", name=o.name, us=t(o.overhead_us), op_us=t(o.op_us),
               percent=f"{min(100.0, 100.0 * o.overhead_us / max(o.op_us, 1e-3)):.1f}", calls=str(o.calls),
               several=yes(o.calls > 1))


def args(r: ProfilerOverhead, say: Say) -> dict[str, str]:
    parts = [_op(o, say) for o in r.ops] + ([say("outside-item", us=t(r.outside_us))] if r.outside_us else [])
    return {
        "events": str(r.events), "names": ", ".join(r.names), "first_name": r.names[0],
        "in_steps": how_many(len(r.in_steps)), "step_list": ", ".join(map(str, r.in_steps)),
        "total_us": t(r.total_us), "window_percent": num(r.window_percent, 2), "idle_us": t(r.idle_us),
        "parts": "; ".join(parts), "has_ops": yes(r.ops), "op": r.ops[0].name if r.ops else "",
        "steps": str(r.steps or "N"),
    }


NOTES = {
    InsideOp: lambda n, say: {"op": n.op, "percent": f"{n.percent:.1f}", "has_together": yes(n.together_percent is not None),
                              "together": "" if n.together_percent is None else f"{n.together_percent:.1f}"},
    OutsideOps: lambda n, say: {"us": t(n.dur_us)},
}
