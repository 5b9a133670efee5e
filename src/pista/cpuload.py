"""Whether the CPU a CPU-only trace ran on was shared: GEMMs that take many times what their FLOPs need on
the slowest core pista expects. Issue 34: a 64x64 matmul at 16-38 ms on a busy shared machine got no word,
while cpu-threads advised more threads. Made here: `pista run matmul_add --size 64 --device cpu` beside six
busy processes took 18.2 ms a call (tests/fixtures/cpu_busy_mm64); alone on the same 2 cores, ~6 µs."""

from __future__ import annotations

import msgspec
import numpy as np

from pista.efficiency import ARITHMETIC_GEMM_OPS, call_flops
from pista.trace.facts import Facts, per_facts

# A tenth of one AVX2 core's fp32 GEMM rate (~10 GFLOP/s at 64^3 on any x86 core since 2013; the fixtures'
# CPU GEMMs run at 25-380 GFLOP/s, gpu/cpu_grouped's small grouped ones at 0.2-2.7): the slowest a core does.
SLOW_CORE_FLOPS = 1e9
# Per call on top: dispatch, oneDNN's primitive lookup, a thread pool's wake-up (gpu/cpu_grouped: ~30 µs).
CALL_NS = 50_000
# A GEMM this many times slower than that was not running: the busy trace 32x, the quiet fixtures under 1x.
BUSY_FACTOR = 10.0
MIN_CALLS = 3


class BusyCpu(msgspec.Struct, frozen=True):
    op: str  # the slowest call's op
    mflop: float  # its work
    ms: float  # its own time
    factor: float  # the median call's time over what the slowest core needs
    calls: int  # GEMM calls read


@per_facts
def busy_cpu(facts: Facts) -> BusyCpu | None:
    """The CPU was shared (other processes, or more threads than cores) where the median GEMM call of a CPU-only
    trace takes BUSY_FACTOR times what the slowest core needs; None otherwise, and on GPU traces."""
    if facts.has_gpu:
        return None
    trace = facts.trace
    lo, hi = facts.window
    idx = np.flatnonzero(facts.is_host & (trace.ts >= lo) & (trace.ts < hi) & _gemm_names(facts)[trace.name])
    if idx.size < MIN_CALLS:
        return None
    flops = call_flops(facts, idx)
    known = ~np.isnan(flops)
    if known.sum() < MIN_CALLS:
        return None
    idx, flops = idx[known], flops[known]
    own = facts.self_time[idx].astype(np.float64)
    factor = own / (flops / SLOW_CORE_FLOPS * 1e9 + CALL_NS)
    median = float(np.median(factor))
    if median < BUSY_FACTOR:
        return None
    worst = int(np.argmax(own))
    return BusyCpu(trace.event_name(int(idx[worst])), float(flops[worst]) / 1e6, float(own[worst]) / 1e6, median,
                   int(idx.size))


def _gemm_names(facts: Facts) -> np.ndarray:
    """Per interned name: whether it is a GEMM op (a table lookup per event after)."""
    return np.array([bool(ARITHMETIC_GEMM_OPS.match(n)) for n in facts.trace.names], dtype=bool)
