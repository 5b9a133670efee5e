"""profiler-overhead in English."""

from __future__ import annotations

from pista.i18n._fmt import num, t
from pista.rules.profiler_overhead import InsideOp, OutsideOps, ProfilerOverhead

TITLE = "Profiler overhead inflates the ops it lands in"


def _schedule(r: ProfilerOverhead) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _where(r: ProfilerOverhead) -> str:
    if not r.in_steps:
        return ""
    return f" in step {r.in_steps[0]}" if len(r.in_steps) == 1 else " in steps " + ", ".join(map(str, r.in_steps))


def message(r: ProfilerOverhead) -> str:
    parts = [f"{t(o.overhead_us)} inside {o.name} ({100.0 * o.overhead_us / max(o.op_us, 1e-3):.1f}% of its "
             f"{t(o.op_us)})" for o in r.ops]
    if r.outside_us:
        parts.append(f"{t(r.outside_us)} outside any op")
    return (f"{r.events} profiler overhead event(s) ({', '.join(r.names)}){_where(r)}, {t(r.total_us)} in all, "
            f"{num(r.window_percent, 2)}% of the window, {t(r.idle_us)} of it with the GPU idle: " + "; ".join(parts)
            + ". The program does not pay it without the profiler.")


def advice(r: ProfilerOverhead) -> str:
    op = f" from {r.ops[0].name}'s CPU total and" if r.ops else " from"
    return (f"Nothing to change in the program: profile with {_schedule(r)} so the profiler sets up its buffers in the "
            f"warm-up steps, profile more steps so a request weighs less, and discount it{op} its step's width.")


def fix(r: ProfilerOverhead) -> str:
    where = f" inside {r.ops[0].name}" if r.ops else ""
    return (f"The profiler's own {r.names[0]} takes {t(r.total_us)}{where}{_where(r)}: profile with {_schedule(r)} "
            "so it falls in the warm-up steps.")


def basis(r: ProfilerOverhead) -> str:
    return "one-time: the GPU idle during the profiler's own events; the program without the profiler does not pay it"


NOTES = {
    InsideOp: lambda n: (f"inside {n.op}, {n.percent:.1f}% of its wall time"
                         + (f"; all of them there: {n.together_percent:.1f}%" if n.together_percent is not None
                            else "")),
    OutsideOps: lambda n: f"in no op, {t(n.dur_us)}",
}
