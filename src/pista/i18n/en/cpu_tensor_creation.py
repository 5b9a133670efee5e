"""cpu-tensor-creation in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cpu_tensor_creation import CopiedToGpu, CpuTensorCreation, MadeOnCpu

TITLE = "Tensors are made on the CPU in the step, then copied to the GPU"


def _ops(r: CpuTensorCreation) -> str:
    return ", ".join(r.ops[:3]) + (", ..." if len(r.ops) > 3 else "")


def message(r: CpuTensorCreation) -> str:
    per = "per step" if r.steps > 1 else "in the window"
    return (f"{r.calls} call(s) of {_ops(r)} run on the CPU (they launch no kernel) and their tensors are then "
            f"copied to the GPU: {t(r.create_us)} of host time {per} making them and {t(r.copy_us)} copying them, "
            "with the GPU waiting.")


def advice(r: CpuTensorCreation) -> str:
    return ("Make the tensors on the GPU: pass device='cuda' to the factory (torch.randn(shape, device='cuda'); every "
            "factory takes device=), or build constant tensors once before the loop. Data that must come from the "
            "host belongs in DataLoader workers with pin_memory=True and .to(device, non_blocking=True).")


def fix(r: CpuTensorCreation) -> str:
    verb = "makes its tensors" if len(r.ops) == 1 else "make their tensors"
    return (f"{_ops(r)} {verb} on the CPU, then copies go to the GPU ({t(r.create_us + r.copy_us)}): pass "
            "device='cuda' to the factory.")


def basis(r: CpuTensorCreation) -> str:
    return ("the factory calls' host time and their copies' removed from the replayed step (made on the GPU, the "
            "tensor is a kernel of microseconds, not counted)")


NOTES = {
    MadeOnCpu: lambda n: f"made on the CPU in {t(n.dur_us)}, no kernel launched",
    CopiedToGpu: lambda n: f"its copy to the GPU: {t(n.dur_us)} of host time",
}
