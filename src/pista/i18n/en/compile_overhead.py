"""compile-overhead in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.compile_overhead import CompileOverhead, GuardCheck, WrapperCall

TITLE = "torch.compile's per-call wrapper leaves the GPU idle"


def _regions(r: CompileOverhead) -> str:
    return ", ".join(r.regions)


def _op_by_op(r: CompileOverhead) -> str:
    return (f"{r.calls} compiled call(s) ({_regions(r)}) run their graph op by op: {r.op_by_op_ops} aten ops a call "
            f"and no generated kernel, with {t(r.wrapper_us_per_call)} of host time a call between and around those "
            f"ops (the graph's Python, not a wrapper) for {t(r.gpu_us_per_call)} of GPU work launched per call. "
            f"{t(r.exposed_us)} of it ran with the GPU idle: {t(r.exposed_per_step_us)} in the median step, "
            f"{r.step_share_percent:.1f}% of the step time.")


def message(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return _op_by_op(r)
    text = (f"{r.calls} compiled call(s) ({_regions(r)}) spend {t(r.wrapper_us)} of host time in the torch.compile "
            f"wrapper (cache lookup, guards, prologue, generated wrapper; {t(r.wrapper_us_per_call)} per call) for "
            f"{t(r.gpu_us_per_call)} of GPU work launched per call. {t(r.exposed_us)} of it ran with the GPU idle: "
            f"{t(r.exposed_per_step_us)} in the median step, {r.step_share_percent:.1f}% of the step time.")
    if r.profiler_may_explain:
        text += (" The GPU work per call nearly covers the wrapper: without the profiler (which about doubles "
                 "the host time of op-dense loops) the host may run ahead and hide it; time the step "
                 "unprofiled before acting.")
    return text


def _eager(r: CompileOverhead) -> str:
    return ", ".join(n.removeprefix("autograd::engine::evaluate_function: ") for n in r.eager_ops)


def _change(r: CompileOverhead) -> str:
    graphs = "torch.compile(mode='reduce-overhead') to replay the launches as a CUDA graph without the wrapper's Python"
    if r.op_by_op_ops:
        return ("compile with a backend that generates code (backend='inductor', torch.compile's default, not "
                "'aot_eager' or a no-op/TorchScript compiler for AOTAutograd), so the graph's ops fuse into kernels "
                f"launched from one generated wrapper, then use {graphs}")
    if r.eager_ops:
        return (f"compile what the step runs eagerly around the compiled calls with them ({_eager(r)}: "
                f"{t(r.eager_idle_us)} of GPU idle per step under them), so one graph holds the step, and use {graphs}")
    if r.wrapper_dominates:
        return (f"give each compiled call more work (compile the whole step rather than small functions, bigger "
                f"batches) and use {graphs}")
    return f"use {graphs}"


def advice(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return f"Each call runs {r.op_by_op_ops} aten ops one by one: {_change(r)}."
    text = (f"Each call launches {t(r.gpu_us_per_call)} of GPU work behind {t(r.wrapper_us_per_call)} of wrapper: "
            f"{_change(r)}; keep input shapes static so the graph is reused.")
    if r.backward:
        text += " The compiled backward (CompiledFunctionBackward) is graphed with it."
    if r.profiler_may_explain:
        text += " First check the cost unprofiled: it may be the profiler's."
    return text


def fix(r: CompileOverhead) -> str:
    who = r.regions[0] if len(r.regions) == 1 else f"Each compiled call ({_regions(r)})"
    if r.op_by_op_ops:
        return (f"{who} runs its graph op by op ({r.op_by_op_ops} aten ops a call, no generated kernel), "
                f"{t(r.exposed_per_step_us)} per step with the GPU idle: {_change(r)}.")
    return (f"{who} spends {t(r.wrapper_us_per_call)} per call in the compile wrapper for "
            f"{t(r.gpu_us_per_call)} of GPU work, {t(r.exposed_per_step_us)} per step with the GPU idle: "
            f"{_change(r)}" + (" (if it persists unprofiled)." if r.profiler_may_explain else "."))


def basis(r: CompileOverhead) -> str:
    if r.op_by_op_ops:
        return "the host time between the compiled graph's ops while the GPU was idle, in the median step"
    text = ("the wrapper's host time (cache lookup, guards, prologue, generated code) while the GPU was idle, in the "
            "median step")
    return text + (" (may be the profiler's own cost)" if r.profiler_may_explain else "")


NOTES = {
    WrapperCall: lambda n: ((f"{t(n.host_us)} of host time between its ops" if n.between_ops else f"{t(n.host_us)} of wrapper host time")
                            + (f" (incl. {t(n.lookup_us)} cache lookup)" if n.lookup_us is not None else "")
                            + f", {t(n.exposed_us)} with the GPU idle, for {t(n.gpu_us)} of GPU work launched"),
    GuardCheck: lambda n: f"guard check before the call: {t(n.lookup_us)}",
}
