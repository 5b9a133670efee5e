"""What:
The step waits on communication: collectives (NCCL kernels on the GPU, gloo's all-reduce on the
CPU) run while nothing else does, so their time adds straight onto the step instead of hiding
behind the backward pass or other compute.

Why:
Data-parallel training overlaps the all-reduce of one gradient bucket with the backward of the
next; only what is left when compute runs out is paid for. Exposed communication grows with the
number of ranks and the model size, and it is also where ranks wait for a slower peer, so it is
often the first place scaling efficiency goes.

Example:
Two gloo ranks training a 4-layer 256-wide MLP with DDP (0.25 MB buckets) on the CPU: each step's
all-reduces overlap backward for only part of their time, and the main thread waits for the rest
(tests/fixtures/gloo/balanced_2). With a slowed peer (straggler_2), the waiting rank's exposed
communication is most of its step.

Fix:
Give communication compute to hide behind: tune DDP's `bucket_cap_mb` so buckets start earlier,
keep `gradient_as_bucket_view=True`, accumulate gradients over several micro-batches under
`no_sync()`, shard with FSDP/ZeRO and prefetch, or compress gradients (DDP comm hooks). If a peer
is late (see `straggler`), fix that rank first: the wait is its lateness.
"""

from __future__ import annotations

import numpy as np

from pista.distributed.comm import communication
from pista.findings import Context, Evidence, Finding, Severity, legacy_finding

ID = "exposed-communication"
TITLE = "Exposed communication: steps wait for collectives"
SEVERITY = Severity.WARNING
# Median share of a step spent in communication with no compute beside it. A well-bucketed DDP step
# exposes little more than its last bucket's all-reduce; in the compute-heavy gloo fixture (tiny
# gradients, long matmuls) it is ~1% of the step. A tenth of every step is a cost worth removing.
MIN_EXPOSED_SHARE = 0.10
# ... and at least this much per step, so sub-millisecond toy steps do not fire on noise.
MIN_EXPOSED_MS = 0.5
EVIDENCE_EVENTS = 5


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    stats = communication(facts)
    if not stats.has_comm:
        return []
    steps = [s for s in stats.steps if s.dur > 0]
    if steps:
        shares = np.array([s.exposed / s.dur for s in steps])
        exposed_ms = float(np.median([s.exposed for s in steps])) / 1e6
        step_ms = float(np.median([s.dur for s in steps])) / 1e6
        share = float(np.median(shares))
    else:  # no ProfilerStep: the whole window counts as one step
        lo, hi = facts.window
        exposed_ms, step_ms = stats.exposed / 1e6, (hi - lo) / 1e6
        share = stats.exposed / max(hi - lo, 1)
    if share < MIN_EXPOSED_SHARE or exposed_ms < MIN_EXPOSED_MS:
        return []
    overlap = stats.overlap_share or 0.0
    trace = facts.trace
    idx = stats.work_index
    longest = idx[np.argsort(-trace.dur[idx], kind="stable")][:EVIDENCE_EVENTS]
    evidence = [Evidence.of(facts, int(i), detail="longest communication") for i in longest]
    where = "on the GPU" if stats.domain == "gpu" else "on gloo's threads"
    per = "per step (median)" if steps else "in the window"
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{exposed_ms:.3f} ms of communication {per} runs with no compute beside it: "
                 f"{100 * share:.1f}% of a {step_ms:.3f} ms step. Of {stats.comm / 1e6:.3f} ms of "
                 f"collectives {where} ({stats.collectives} events), {100 * overlap:.1f}% overlap compute."),
        advice=("Let communication hide behind compute: tune DDP bucket_cap_mb, accumulate gradients "
                "under no_sync(), prefetch with FSDP, or compress gradients; if a peer rank is late, "
                "fix that rank first (see straggler)."),
        evidence=evidence,
        metrics={"exposed_ms_per_step": exposed_ms, "exposed_share_of_step": share, "step_ms": step_ms,
                 "comm_ms": stats.comm / 1e6, "exposed_ms": stats.exposed / 1e6, "overlap_share": overlap,
                 "collectives": stats.collectives},
    )]
