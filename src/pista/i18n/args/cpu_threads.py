"""cpu-threads: the arguments of its text (ftl/<lang>/cpu_threads.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say
from pista.i18n._fmt import t
from pista.rules.cpu_threads import CpuThreads, ThreadBoundCall


def args(r: CpuThreads, say: Say) -> dict[str, str]:
    return {
        "threads": str(r.threads), "cores": str(r.cores), "ops": ", ".join(r.ops), "gemm_us": t(r.gemm_us),
        "share": f"{r.step_share_percent:.1f}", "saved_us": t(r.saved_us),
    }


NOTES = {
    ThreadBoundCall: lambda n, say: {"own_us": t(n.own_us)},
}
