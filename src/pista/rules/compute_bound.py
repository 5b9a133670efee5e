"""What:
GPU time dominates: the device is busy most of the profiled window and Self CUDA total is of the
same order as Self CPU total (both in ms). Informational: this is where you want to be.

Why:
When the GPU is the bottleneck, host-side tricks (CUDA graphs, less Python) buy little; the time
is in the kernels themselves, so the next step is to make those kernels cheaper or fewer.

Example:
`torch.add(torch.matmul(x, w), b)` at 4096x4096 in bf16 on an H200: 640 µs of Self CUDA for 729 µs
of Self CPU over 3 steps; the GPU is busy 79% of the window, nearly all of it in one GEMM.

Fix:
Start with the dominant kernel (see `dominant-event`): lower precision (bf16/fp8 where accuracy
allows), fuse the epilogue (torch.compile turns matmul+add into addmm with a bias epilogue),
check the achieved FLOP/s against the datasheet.
"""

from __future__ import annotations

import numpy as np

from pista import findings
from pista.findings import Context, Evidence, Finding, Severity, legacy_finding, top_indices

ID = "compute-bound"
TITLE = "Compute bound: the GPU is the limit"
SEVERITY = Severity.INFO
EVIDENCE_EVENTS = 3
# The verdict's thresholds live with the verdict (pista.findings); shown here for `pista explain`.
COMPUTE_MIN_GPU_BUSY = findings.COMPUTE_MIN_GPU_BUSY
COMPUTE_MAX_RATIO = findings.COMPUTE_MAX_RATIO


def check(ctx: Context) -> list[Finding]:
    s = ctx.summary
    if s.verdict != "compute-bound":
        return []
    facts = ctx.facts
    dur = facts.trace.dur.astype(np.int64)
    picks = top_indices(dur, facts.is_device_work, EVIDENCE_EVENTS)
    evidence = [Evidence.of(facts, int(i), detail="longest device work") for i in picks]
    busy = 100.0 * (s.gpu_busy_share or 0.0)
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"The GPU is busy {busy:.1f}% of the {s.window_us / 1000:.3f} ms window; Self CUDA total "
                 f"{s.self_device_total_us / 1000:.3f} ms against Self CPU total "
                 f"{s.self_cpu_total_us / 1000:.3f} ms."),
        advice=("Optimize the kernels themselves, starting with the dominant one: lower precision, "
                "fused epilogues, better shapes; host-side tricks will not help much."),
        evidence=evidence,
        metrics={"gpu_busy_percent": busy},
    )]
