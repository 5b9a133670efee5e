"""The cpu-threads rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
cpu-threads`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/cpu_threads.ftl."""

from __future__ import annotations

import numpy as np

from pista.cpuload import busy_cpu
from pista.efficiency import call_flops
from pista.findings import Context, Finding, Record
from pista.rules._common import evidence, gemm_calls, idle_cores, ops_by_time, us

ID = "cpu-threads"
# The saving must reach this share of the step (REVIEW.md: under a few percent is noise).
MIN_STEP_SHARE = 0.05
EVIDENCE_EVENTS = 3
# A GEMM gains from more threads only when each thread gets real work: a 1024^3 matmul (2.1 GFLOP) scaled
# 2.06x on 2 threads (gpu/cpu_linear_1thread), a 64x64x64 one (0.5 MFLOP) gains ~1 µs of its ~6 (issue 34's
# busy shared CPU); calls below this many MFLOP are left out of the saving.
MIN_THREADED_MFLOP = 8


class CpuThreads(Record):
    threads: int  # torch's intra-op threads
    cores: int  # the cores the process may run on
    ops: tuple[str, ...]  # the GEMM ops, most CPU time first
    gemm_us: float  # per step: their own CPU time
    step_share_percent: float
    saved_us: float  # per step
    steps: int


class ThreadBoundCall(Record):
    """Note on one GEMM call that could split across more threads."""

    own_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    host = facts.trace.metadata.get("pista_host")
    idle = idle_cores(host) if isinstance(host, dict) and not facts.has_gpu else None
    if idle is None or busy_cpu(facts) is not None:
        return []  # on a shared CPU, more threads would contend for cores others hold (the notice says so)
    threads, cores = idle
    idx = _splittable(facts, gemm_calls(facts))
    if idx.size == 0:
        return []
    own_ns = facts.self_time[idx].astype(float)
    impact = ctx.per_step(float(own_ns.sum()) * (1.0 - threads / cores))
    if impact.share < MIN_STEP_SHARE:
        return []
    steps = ctx.step_count
    record = CpuThreads(threads=threads, cores=cores, ops=ops_by_time(facts, idx, own_ns),
                        gemm_us=us(own_ns.sum()) / steps,
                        step_share_percent=100.0 * float(own_ns.sum()) / steps / max(ctx.step_ns, 1.0),
                        saved_us=impact.us, steps=steps)
    ev = [evidence(facts, int(idx[p]), ThreadBoundCall(us(own_ns[p])))
          for p in np.argsort(-own_ns, kind="stable")[:EVIDENCE_EVENTS].tolist()]
    return [Finding(ID, record, impact, ev)]


def _splittable(facts, idx: np.ndarray) -> np.ndarray:
    """The GEMM calls big enough to split across threads: MIN_THREADED_MFLOP or more, or of unknown size (no
    recorded shapes)."""
    if idx.size == 0:
        return idx
    flops = call_flops(facts, idx)
    return idx[np.isnan(flops) | (flops >= MIN_THREADED_MFLOP * 1e6)]
