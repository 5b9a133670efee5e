"""unfused-optimizer: the arguments of its text (ftl/<lang>/unfused_optimizer.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import num, t
from pista.rules.unfused_optimizer import CpuStepCall, OptimizerKernel, StepCall, UnfusedOptimizer


def _how(r: UnfusedOptimizer) -> str:
    """Which way the step runs, as the message tells it."""
    if r.mode == "foreach":
        return "foreach"
    return "loop" if r.device == "cpu" else key(r.mode)


def _advice(r: UnfusedOptimizer) -> str:
    if r.mode == "hand-written":
        return "hand-written"
    if r.fusable:
        return "cpu" if r.device == "cpu" else "gpu"
    return "compile"


def args(r: UnfusedOptimizer, say: Say) -> dict[str, str]:
    ops = r.foreach_ops
    return {
        "event": r.event, "has_event": yes(r.event), "optimizer": r.optimizer, "device": key(r.device),
        "mode": key(r.mode), "how": _how(r), "advice_kind": _advice(r), "fusable": yes(r.fusable),
        "fix_kind": "cpu" if r.device == "cpu" else key(r.mode),
        "ops": ", ".join(ops[:4]) + (", ..." if len(ops) > 4 else ""), "ops4": ", ".join(ops[:4]),
        "ops3": ", ".join(ops[:3]), "passes": f"{r.passes:.0f}", "ops_per_step": f"{r.ops_per_step:.0f}",
        "kernels_per_step": f"{r.kernels_per_step:.0f}", "gpu_us": t(r.gpu_us),
        "gpu_share": f"{r.gpu_share_percent:.1f}", "host_us": t(r.host_us), "exposed_host_us": t(r.exposed_host_us),
        "gpu_saving_us": t(r.gpu_saving_us), "host_saving_us": t(r.host_saving_us),
        "kept": f"{r.fused_host_ratio:.2f}", "host_ratio": num(r.fused_host_ratio, 3),
        "gpu_ratio": num(r.fused_gpu_ratio, 3),
        "comm": yes(r.comm_op), "comm_op": r.comm_op, "comm_us": t(r.comm_us), "comm_wait_us": t(r.comm_wait_us),
    }


NOTES = {
    StepCall: lambda n, say: {"host_us": t(n.host_us), "exposed_host_us": t(n.exposed_host_us),
                              "kernels": str(n.kernels), "gpu_us": t(n.gpu_us)},
    CpuStepCall: lambda n, say: {"host_us": t(n.host_us), "ops": str(n.ops)},
    OptimizerKernel: lambda n, say: {"op": n.op, "has_op": yes(n.op)},
}
