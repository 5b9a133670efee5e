"""dead-window in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._one_time import FIRST_CALLS, HOST, LIBRARY, PROFILER
from pista.rules.dead_window import DeadWindow, FillerNote, FirstCallNote, RegionNote, TargetNote, WindowNote

TITLE = "Dead window: a region waits long before its first launch"


def _target(kind: str) -> str:
    return "kernel launch" if kind == "launch" else "aten:: op"


def _where(r: DeadWindow) -> str:
    return f" (step {r.step})" if r.step is not None else ""


def _schedule(r: DeadWindow) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _or_schedule(r: DeadWindow) -> str:
    """The schedule as the other way out, unless the trace's schedule already warmed up."""
    return " (the schedule's warm-up steps did not run it)" if r.warmed_up else f", or profile with {_schedule(r)}"


def message(r: DeadWindow) -> str:
    in_op = f" inside {r.in_op}" if r.in_op else ""
    compare = (f", {r.gap_us / max(r.typical_gap_us, 1e-3):.0f}x the {t(r.typical_gap_us)} its other calls take"
               if r.typical_gap_us is not None else "")
    fillers = ", ".join(f"{f.name} {t(f.self_us)}" for f in r.fillers)
    text = (f"'{r.region}'{_where(r)} ran {t(r.gap_us)} before its first {_target(r.target)} "
            f"({r.first_target}{in_op}){compare}. {t(r.recorded_us)} of it is in recorded calls"
            + (f" ({fillers})" if fillers else "") + f"; {t(r.untraced_us)} is untraced set-up{in_op}.")
    if r.profiler_us:
        text += f" The profiler's own buffer requests are {t(r.profiler_us)} of the wait."
    if r.first_calls:
        calls = ", ".join(f"{c.name} {t(c.dur_us)}" for c in r.first_calls)
        text += (f" Then first calls in the same region (ops loading their CUDA kernels) add {t(r.first_calls_us)}: "
                 f"{calls}.")
    if r.loading_us:
        text += (f" CUPTI records {t(r.loading_us)} of kernel loading in them; the rest of those calls is set-up "
                 "it does not trace (module loading, allocations).")
    return text


def advice(r: DeadWindow) -> str:
    if r.cause == PROFILER:
        return (f"Most of the wait is the profiler's own buffer requests, not the program: profile with "
                f"{_schedule(r)} so they fall in the warm-up steps.")
    if r.cause == LIBRARY:
        return (f"{r.in_op}'s first call sets up cuBLAS (handle, workspace, kernel choice) and loads its kernels: run "
                f"'{r.region}' once before profiling{_or_schedule(r)}.")
    if r.cause == HOST:
        return (f"'{r.region}' runs its own code for long before its first op the first time (imports, caches, data "
                f"loader start-up): warm it up before profiling{_or_schedule(r)}.")
    if r.cause == FIRST_CALLS:
        return (f"'{r.region}' runs its ops for the first time in the process (CUDA loads their kernels lazily): run "
                f"it once (every branch and shape) before profiling{_or_schedule(r)}; "
                "CUDA_MODULE_LOADING=EAGER moves the loading to start-up.")
    raise KeyError(r.cause)


def fix(r: DeadWindow) -> str:
    more = f", and its first calls add {t(r.first_calls_us)}" if r.first_calls else ""
    in_op = f" in {r.in_op}" if r.in_op else ""
    return (f"'{r.region}'{_where(r)} waits {t(r.gap_us)} before its first {_target(r.target)}{more} (one-time "
            f"set-up{in_op}): run it once before profiling{_or_schedule(r)}.")


def basis(r: DeadWindow) -> str:
    usual = ", less its other calls' usual wait" if r.typical_gap_us is not None else ""
    return (f"one-time: the GPU idle from the region's start to its first {_target(r.target)} and in its later first "
            f"calls{usual}")


NOTES = {
    WindowNote: lambda n: f"from {n.region} to its first {_target(n.target)}",
    RegionNote: lambda n: "the region",
    TargetNote: lambda n: f"its first {_target(n.target)}" + (f" inside {n.in_op}" if n.in_op else ""),
    FillerNote: lambda n: f"in the window, self time {t(n.self_us)}",
    FirstCallNote: lambda n: f"a first call (its kernel loaded lazily), {t(n.dur_us)} after the wait",
}
