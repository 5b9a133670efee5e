"""unfused-optimizer in English."""

from __future__ import annotations

from pista.i18n._fmt import num, t
from pista.rules.unfused_optimizer import CpuStepCall, OptimizerKernel, StepCall, UnfusedOptimizer

TITLE = "The optimizer step runs unfused (foreach or per parameter)"


def _event(r: UnfusedOptimizer) -> str:
    return r.event or "a hand-written update loop after backward()"


def _how(r: UnfusedOptimizer) -> str:
    if r.device == "cpu":
        ops = ", ".join(r.foreach_ops[:4]) + (", ..." if len(r.foreach_ops) > 4 else "")
        if r.mode == "foreach":
            return f"foreach ({ops}), {r.passes:.0f} sweeps over the parameters per call where fused makes one"
        return (f"a loop over the parameters (foreach=False, the CPU default), {r.ops_per_step:.0f} ops per step "
                f"({ops})")
    if r.mode == "foreach":
        ops = ", ".join(r.foreach_ops[:4]) + (", ..." if len(r.foreach_ops) > 4 else "")
        return f"foreach ({ops}), {r.passes:.0f} sweeps over the parameters per call where fused makes one"
    if r.mode == "hand-written":
        ops = ", ".join(r.foreach_ops[:4])
        return f"a Python loop over the parameters, {r.ops_per_step:.0f} in-place ops per step ({ops})"
    return f"one kernel per parameter and operation, {r.passes:.0f} kernels per call where fused launches one"


def message(r: UnfusedOptimizer) -> str:
    if r.device == "cpu":
        return (f"{_event(r)} runs {_how(r)}: it takes {t(r.host_us)} of each step on the CPU. Fused it would keep "
                f"about {r.fused_host_ratio:.2f} of that.")
    return (f"{_event(r)} runs {_how(r)}: {r.kernels_per_step:.0f} kernels per step take {t(r.gpu_us)} of GPU time "
            f"({r.gpu_share_percent:.1f}% of the device time), and the host spends {t(r.host_us)} per step in it, "
            f"{t(r.exposed_host_us)} of that with the GPU idle. Fused would take about {t(r.gpu_saving_us)} less GPU "
            f"time and {t(r.host_saving_us)} less host time per step." + _communication(r))


def _communication(r: UnfusedOptimizer) -> str:
    if not r.comm_op:
        return ""
    return (f" Its step also runs {r.comm_op}: {t(r.comm_us)} of communication on the GPU per step, and the "
            f"{t(r.comm_wait_us)} per step the host spends in the step while it is in flight are left out of these "
            "figures: that is communication (see exposed-communication), which fusing or compiling the update "
            "does not shorten.")


def advice(r: UnfusedOptimizer) -> str:
    if r.mode == "hand-written":
        return (f"Replace the loop with torch.optim.{r.optimizer}(model.parameters(), ..., fused=True) and "
                "opt.step(): one kernel updates every parameter (momentum buffers included) in a single pass, "
                "where the loop dispatches and launches an op per parameter and operation.")
    if r.device == "cpu" and r.fusable:
        return (f"Construct the optimizer with fused=True (torch.optim.{r.optimizer}(params, ..., fused=True), "
                "on the CPU since torch 2.4): one vectorised pass over each parameter instead of one op per "
                "parameter and operation.")
    if r.fusable:
        return (f"Construct the optimizer with fused=True (torch.optim.{r.optimizer}(params, ..., fused=True)): one "
                "kernel updates every parameter in a single pass over memory (beside one small add to the step "
                "counters), and the host dispatches two ops instead of a dozen foreach ops and the per-parameter "
                "step bookkeeping.")
    return (f"{r.optimizer} has no fused implementation: compile its step (opt.step = torch.compile(opt.step)) so the "
            "foreach ops become a few fused kernels, or switch to Adam/AdamW/SGD with fused=True if that suits.")


def fix(r: UnfusedOptimizer) -> str:
    if r.device == "cpu":
        change = (f"torch.optim.{r.optimizer}(..., fused=True)" if r.fusable
                  else "compile the step (torch.compile(opt.step))")
        return f"{_event(r)} takes {t(r.host_us)} of CPU time per step running {r.mode}: {change}"
    change = (f"torch.optim.{r.optimizer}(..., fused=True)" if r.fusable
              else "compile the step (torch.compile(opt.step))")
    if r.mode == "hand-written":
        return (f"{_event(r)} runs {r.ops_per_step:.0f} in-place ops per step ({', '.join(r.foreach_ops[:3])}): "
                f"use {change} and opt.step()")
    return (f"{_event(r)} takes {t(r.gpu_us)} of GPU and {t(r.exposed_host_us)} of exposed host time per step "
            f"running {r.mode}: {change}")


def basis(r: UnfusedOptimizer) -> str:
    if r.device == "cpu":
        return (f"Optimizer.step's CPU time per step times 1 - {num(r.fused_host_ratio, 3)}, the share fused kept of "
                f"{r.mode} AdamW on a 2-core AMD EPYC (torch 2.13; gpu/cpu_adamw_loop vs gpu/cpu_adamw_fused); an "
                "estimate for other models and CPUs")
    return (f"how much earlier the device work after each Optimizer.step could start if its kernels took "
            f"{num(r.fused_gpu_ratio, 3)} of their time and its host call {num(r.fused_host_ratio, 3)} of its own, as fused "
            "did on the H200 (gpu/adamw_foreach vs gpu/adamw_fused, the same MLP), per step; an estimate for other "
            "models")


NOTES = {
    StepCall: lambda n: (f"host {t(n.host_us)} ({t(n.exposed_host_us)} with the GPU idle), launched {n.kernels} "
                         f"kernel(s), {t(n.gpu_us)} of GPU time"),
    CpuStepCall: lambda n: f"{t(n.host_us)} on the CPU, {n.ops} aten op(s) dispatched",
    OptimizerKernel: lambda n: f"optimizer kernel launched by {n.op or 'an unknown op'}",
}
