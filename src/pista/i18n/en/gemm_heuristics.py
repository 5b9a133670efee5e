"""gemm-heuristics in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.gemm_heuristics import GemmHeuristics, KernelNote, ShapeNote

TITLE = "GEMMs on new shapes wait for cuBLAS to choose a kernel"


def _steps(r: GemmHeuristics) -> str:
    if not r.in_steps:
        return "the window"
    return f"step {r.in_steps[0]}" if len(r.in_steps) == 1 else "steps " + ", ".join(map(str, r.in_steps))


def _per_step(r: GemmHeuristics) -> float:
    return r.wait_us / max(r.steps, 1)


def message(r: GemmHeuristics) -> str:
    calls = "; ".join(f"{n.op} {n.dims}: {t(n.wait_us)} before {n.kernel}" for n in r.new)
    usual = f", against {t(r.typical_us)} on shapes seen before" if r.typical_us is not None else ""
    text = (f"{r.calls} GEMM calls on {r.shapes} new shapes in {_steps(r)} wait {t(r.wait_us)} in all between their "
            f"start and their launch{usual}: {calls}.")
    if r.loads:
        text += f" {r.loads} kernel load(s) (CUDA lazy loading) in them: the kernels are new too."
    if r.queries:
        text += f" {r.queries} occupancy queries recorded in them."
    return text


def advice(r: GemmHeuristics) -> str:
    dims = ", ".join(n.dims for n in r.new[:3])
    if r.once:
        return (f"The new shapes ({dims}) are a first pass: they run again afterwards without the wait, so cuBLAS "
                "chose their kernels once. Warm each shape up before profiling (one iteration, or "
                "torch.profiler.schedule(wait=1, warmup=1, active=N)); nothing recurs in the steady state.")
    return (f"The GEMM's shape changes from call to call ({dims}): pad or bucket the varying dimension to a few sizes "
            "and warm each one up before profiling; under torch.compile mark it dynamic; CUDA graphs need static "
            "shapes too.")


def fix(r: GemmHeuristics) -> str:
    n = r.new[0]
    if r.once or (r.steps > 1 and len(r.in_steps) == 1):
        return (f"{n.op} meets {r.shapes} new shapes in {_steps(r)} ({' -> '.join(x.dims for x in r.new[:3])}), "
                f"{t(r.wait_us)} before their launches while cuBLAS chooses kernels: warm each shape up before "
                "profiling, and keep the shapes to a few sizes.")
    return (f"{n.op} gets a new shape every step ({' -> '.join(x.dims for x in r.new[:3])}), {t(_per_step(r))} per "
            "step before its launch while cuBLAS chooses a kernel: pad or bucket the shapes to a few sizes.")


def basis(r: GemmHeuristics) -> str:
    usual = (", less the op's wait on shapes seen before" if r.typical_us is not None
             else ", an upper bound (no shape seen before to compare with)")
    per = "once, a first pass" if r.once else "per step" if r.steps else "over the window"
    return f"the GPU idle from each new-shape GEMM call's start to its launch ({t(r.idle_us)}){usual}, {per}"


NOTES = {
    ShapeNote: lambda n: f"new shape {n.dims}: {t(n.wait_us)} before its launch",
    KernelNote: lambda n: f"the kernel it chose, {t(n.dur_us)}",
}
