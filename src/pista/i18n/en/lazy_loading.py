"""lazy-loading in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.lazy_loading import CallNote, FirstCall, LazyLoading, LoadNote, SetupNote, StartupNote

TITLE = "First calls inside the window: CUDA loads their kernels lazily"


def _steps(r: LazyLoading) -> str:
    if not r.in_steps:
        return "the window"
    return f"step {r.in_steps[0]}" if len(r.in_steps) == 1 else "steps " + ", ".join(map(str, r.in_steps))


def _schedule(r: LazyLoading) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _call(c: FirstCall) -> str:
    usual = f" (usually {t(c.typical_us)})" if c.typical_us is not None else ""
    if c.loads:
        return f"{c.op} {t(c.dur_us)}{usual}, {c.loads} load(s) in {c.via}"
    where = f"{t(c.setup_us)} in {c.setup}" if c.setup else f"{t(c.setup_us)} of set-up no call records"
    return f"{c.op} {t(c.dur_us)}{usual}, {where}"


def message(r: LazyLoading) -> str:
    calls = "; ".join(_call(c) for c in r.calls)
    if not r.events:
        return (f"{len(r.calls)} call(s) start CUDA up for the first time in the process, in {_steps(r)}, "
                f"{t(r.first_calls_us)} in all: the context, cuBLAS/cuDNN's handles and their kernels' loading "
                f"(this trace records no load event for them): {calls}.")
    text = (f"{len(r.calls)} op call(s) run for the first time in the process, in {_steps(r)}: {r.events} kernel "
            f"load event(s), {t(r.load_us)}, but the calls holding them take {t(r.first_calls_us)}: {calls}.")
    return text


def advice(r: LazyLoading) -> str:
    ops = ", ".join(c.op for c in r.calls[:3])
    if not r.events:
        return (f"{ops} start CUDA up inside the window: a one-time cost of the process, not of the steady state. "
                f"Run one iteration before profiling, or profile with {_schedule(r)}; nothing to optimise in the "
                "loop itself.")
    return (f"{ops} run for the first time inside the window (a branch taken late, an evaluation, a new dtype): run "
            f"every code path once before profiling, or profile with {_schedule(r)}; CUDA_MODULE_LOADING=EAGER loads "
            "the kernels at start-up if a first call itself must be fast.")


def fix(r: LazyLoading) -> str:
    c = r.calls[0]
    others = f" and {len(r.calls) - 1} other op(s)" if len(r.calls) > 1 else ""
    if not r.events:
        return (f"{c.op}{others} start CUDA up in {_steps(r)} ({t(r.first_calls_us)} of one-time start-up): run "
                "one iteration before profiling.")
    return (f"{c.op}{others} run for the first time in {_steps(r)} ({t(r.first_calls_us)} of first calls, kernels "
            "loaded lazily): take that code path once before profiling.")


def basis(r: LazyLoading) -> str:
    if not r.events:
        return "one-time: the GPU idle in the first calls that start CUDA up, less the same ops' usual time"
    return "one-time: the GPU idle in the op calls that load their kernels, less the same ops' usual time"


NOTES = {
    CallNote: lambda n: f"a first call: {n.loads} kernel load(s), {t(n.load_us)}",
    LoadNote: lambda n: f"inside {n.via}",
    StartupNote: lambda n: (f"a first call: {t(n.setup_us)} in {n.setup}" if n.setup
                            else f"a first call: {t(n.setup_us)} of host time no call records (set-up)"),
    SetupNote: lambda n: f"start-up inside it, {t(n.dur_us)}",
}
