"""cpu-threads in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.cpu_threads import CpuThreads, ThreadBoundCall

TITLE = "torch uses fewer CPU threads than the cores it may use"


def message(r: CpuThreads) -> str:
    return (f"torch ran with {r.threads} intra-op thread(s) on a process allowed {r.cores} cores; "
            f"{', '.join(r.ops)} take {t(r.gemm_us)} per step ({r.step_share_percent:.1f}% of the step) and split "
            f"across threads: on {r.cores} they would take about {t(r.saved_us)} less per step.")


def advice(r: CpuThreads) -> str:
    return (f"Call torch.set_num_threads({r.cores}) at start-up, or unset OMP_NUM_THREADS (or set it to {r.cores}) "
            "in the job's environment; if several processes share the host, give each its share of the cores.")


def fix(r: CpuThreads) -> str:
    return (f"{r.threads} thread(s) of {r.cores} cores run the GEMMs: torch.set_num_threads({r.cores}) saves about "
            f"{t(r.saved_us)} per step")


def basis(r: CpuThreads) -> str:
    return (f"the GEMM ops' own CPU time per step times 1 - {r.threads}/{r.cores}, scaling linearly with the threads "
            "(a 1024^3 matmul ran 2.06x faster on 2 threads than on 1); elementwise ops not counted")


NOTES = {
    ThreadBoundCall: lambda n: f"GEMM, {t(n.own_us)} of its own CPU time on too few threads",
}
