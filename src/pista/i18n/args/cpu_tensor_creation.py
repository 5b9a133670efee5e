"""cpu-tensor-creation: the arguments of its text (ftl/<lang>/cpu_tensor_creation.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, yes
from pista.i18n._fmt import t
from pista.rules.cpu_tensor_creation import CopiedToGpu, CpuTensorCreation, MadeOnCpu

# the factories named, at most
OPS_NAMED = 3


def args(r: CpuTensorCreation, say: Say) -> dict[str, str]:
    return {
        "calls": str(r.calls), "ops": ", ".join(r.ops[:OPS_NAMED]) + (", ..." if len(r.ops) > OPS_NAMED else ""),
        "one_op": yes(len(r.ops) == 1), "per_step": yes(r.steps > 1), "create_us": t(r.create_us),
        "copy_us": t(r.copy_us), "total_us": t(r.create_us + r.copy_us),
    }


NOTES = {
    MadeOnCpu: lambda n, say: {"dur_us": t(n.dur_us)},
    CopiedToGpu: lambda n, say: {"dur_us": t(n.dur_us)},
}
