"""cold-start in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules._one_time import FIRST_CALLS, HOST, LIBRARY, PROFILER
from pista.rules.cold_start import ColdStart, FirstNote, OpNote, ProfilerNote, SteadyNote

TITLE = "Cold start: the first step is much slower than the rest"


def _first(r: ColdStart) -> str:
    if r.kind == "iteration":
        return f"the first iteration (from the first '{r.name}' call to the next)"
    return f"step {r.step}" if r.kind == "step" else f"the first '{r.name}' call"


def _others(r: ColdStart) -> str:
    if r.kind != "step":
        return f"the {r.others} later {'iteration' if r.kind == 'iteration' else 'call'}(s)"
    if len(r.other_steps) == 1:
        return f"step {r.other_steps[0]}"
    return f"steps {r.other_steps[0]}-{r.other_steps[-1]}"


def _schedule(r: ColdStart) -> str:
    return f"torch.profiler.schedule(wait=1, warmup=1, active={r.steps or 'N'})"


def _op(r: ColdStart) -> str:
    return r.ops[0].name if r.ops else r.name


def message(r: ColdStart) -> str:
    first = _first(r)
    text = f"{first[0].upper() + first[1:]} took {t(r.first_us)}"
    left_out = [f"compiling, {t(r.compile_us)}" if r.compile_us else "",
                f"the profiler's own events, {t(r.profiler_us)}" if r.profiler_us else ""]
    if any(left_out):
        text += f" ({t(r.own_us)} once " + " and ".join(p for p in left_out if p) + ", are left out)"
    text += f", {r.ratio:.0f}x the median {t(r.median_others_us)} of {_others(r)}: one-time set-up was profiled."
    if r.ops:
        text += " Most of it is self time of " + ", ".join(
            f"{o.name} {t(o.first_us)} (usually {t(o.typical_us)})" for o in r.ops) + "."
    parts = []
    if r.loading_us:
        parts.append(f"CUDA module loading, {t(r.loading_us)}")
    if r.queries:
        parts.append(f"{r.queries} occupancy queries, {t(r.query_us)}")
    if parts:
        text += " It also holds " + "; ".join(parts) + "."
    return text


def advice(r: ColdStart) -> str:
    if r.cause == PROFILER:
        return (f"Most of it is the profiler's own buffer requests, not the program: profile with {_schedule(r)} so "
                "they fall in the warm-up steps, and read only the steady steps.")
    if r.cause == LIBRARY and not r.gpu:
        return (f"{_op(r)}'s first call sets up the CPU's GEMM library (oneDNN/MKL: its thread pool, weight packing, "
                f"kernel choice): run the step once before profiling, or profile with {_schedule(r)} and read only "
                "the steady steps.")
    if r.cause == LIBRARY:
        return (f"{_op(r)}'s first call sets up cuBLAS (handle, workspace, kernel choice) and loads its kernels: run "
                f"the step once before profiling, or profile with {_schedule(r)} and read only the steady steps.")
    if r.cause == HOST:
        return (f"{_first(r)[0].upper() + _first(r)[1:]}'s own Python (outside any op) is slow the first time "
                f"(imports, caches, data loader start-up): warm up before profiling, or profile with {_schedule(r)}.")
    if r.cause == FIRST_CALLS and not r.gpu:
        return (f"The first calls of {', '.join(o.name for o in r.ops)} allocate and set up their CPU kernels: run "
                f"the step once (every branch and shape) before profiling, or profile with {_schedule(r)}.")
    if r.cause == FIRST_CALLS:
        return (f"The first calls of {', '.join(o.name for o in r.ops)} load their CUDA kernels and allocate: run "
                f"the step once (every branch and shape) before profiling, or profile with {_schedule(r)}; "
                "CUDA_MODULE_LOADING=EAGER moves the loading to start-up.")
    raise KeyError(r.cause)


def fix(r: ColdStart) -> str:
    first = _first(r)
    where = f", {t(r.ops[0].first_us)} of it in {r.ops[0].name}" if r.ops else ""
    return (f"{first[0].upper() + first[1:]} takes {t(r.first_us)} against {t(r.median_others_us)} for the "
            f"rest{where} (one-time set-up): warm up before profiling with {_schedule(r)}.")


def basis(r: ColdStart) -> str:
    if r.kind == "step":
        return f"one-time: the GPU idle in step {r.step} beyond the other steps' median"
    if r.kind == "iteration":
        return "one-time: the GPU idle in the first iteration beyond the later iterations' median"
    return f"one-time: the GPU idle in the first '{r.name}' call beyond its later calls' median"


NOTES = {
    FirstNote: lambda n: f"{n.ratio:.0f}x the median {t(n.median_us)} of the other {n.others}",
    OpNote: lambda n: f"self time {t(n.self_us)}; usually {t(n.typical_us)}",
    ProfilerNote: lambda n: f"the profiler's own work, {t(n.dur_us)}",
    SteadyNote: lambda n: f"a steady one, {t(n.dur_us)}, for comparison",
}
