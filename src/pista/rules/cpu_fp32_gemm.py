"""The cpu-fp32-gemm rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
cpu-fp32-gemm`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/cpu_fp32_gemm.ftl."""

from __future__ import annotations

from typing import Any

import numpy as np

from pista.efficiency import gemm_flops
from pista.findings import Context, Finding, Record, Severity
from pista.opargs import op_args
from pista.rules._common import evidence, gemm_calls, idle_cores, op_dims, ops_by_time, us
from pista.trace.facts import Facts

ID = "cpu-fp32-gemm"
# bf16 over fp32 on the capture CPU: the GEMMs' own time in gpu/cpu_linear_host (24.3 ms per step)
# over gpu/cpu_linear_bf16's (12.0 ms).
CPU_BF16_SPEEDUP = 2.0
# Without pista_host the CPU is unknown (bf16 is slower than fp32 without native support): speak,
# at info, only where the fp32 GEMMs are this share of the step.
MIN_UNKNOWN_CPU_SHARE = 0.30
# GEMMs smaller than this on average (FLOPs per call) are mostly dispatch and cast, not arithmetic:
# gpu/python_loop_cpu's 16x256x256 calls (2.1 MFLOP) and gpu/cpu_only's 64x256x512 (17 MFLOP) stay
# silent; gpu/cpu_adamw_loop's 32x512x2048 (67 MFLOP) and the workloads' 1024-wide ones (2.1 GFLOP)
# do not.
MIN_MFLOP_PER_CALL = 50
# Without record_shapes a call's FLOPs are unknown: its own time stands in for them. gpu/graph_break_*
# (compiled 16-wide linears) take 33-35 µs a call and stay silent; monisha_trace's 7.9 ms calls do not.
MIN_UNRECORDED_CALL_US = 200
# The saving must reach this share of the step (REVIEW.md: under a few percent is noise).
MIN_STEP_SHARE = 0.05
EVIDENCE_EVENTS = 3


class CpuFp32Gemm(Record):
    ops: tuple[str, ...]  # the fp32 GEMM ops, most CPU time first
    calls: int  # in the window
    gemm_us: float  # per step: their own CPU time
    step_share_percent: float  # of the step
    gflops: float | None  # achieved, over the calls with recorded shapes
    cpu_capability: str  # torch's: AVX512, AVX2...
    amx: bool
    known_cpu: bool  # pista_host says the CPU has bf16 GEMMs; False: a trace from elsewhere
    threads_scale: float  # the GEMM time kept once cpu-threads' idle cores are used (1: none idle)
    speedup: float
    saved_us: float  # per step
    steps: int
    dtype_known: bool = True  # False: record_shapes was off, the GEMMs' dtype is not in the trace


class Fp32Call(Record):
    """Note on one fp32 GEMM call."""

    dims: tuple[tuple[int, ...], ...]
    gflops: float | None


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    cpu = _cpu(facts)
    calls = _fp32_calls(facts) if cpu is not None else None
    if cpu is None or calls is None:
        return []
    host, known = cpu
    idx, args, unrecorded = calls
    own_ns = facts.self_time[idx].astype(float)
    step_share = float(own_ns.sum()) / ctx.step_count / max(ctx.step_ns, 1.0)
    if _too_little(own_ns, step_share, known, unrecorded):
        return []
    idle = idle_cores(host)
    scale = idle[0] / idle[1] if idle else 1.0
    impact = ctx.per_step(float(own_ns.sum()) * scale * (1.0 - 1.0 / CPU_BF16_SPEEDUP))
    flops = [gemm_flops(facts.trace.event_name(int(i)), a.dims if a is not None else None)
             for i, a in zip(idx.tolist(), args, strict=True)]
    if impact.share < MIN_STEP_SHARE or _small_calls(flops):
        return []
    record = _record(ctx, host, idx, own_ns, flops, step_share, scale, impact.us, known, unrecorded)
    return [Finding(ID, record, impact, _evidence(facts, idx, own_ns, flops),
                    severity=None if known and not unrecorded else Severity.INFO)]


def _cpu(facts: Facts) -> tuple[dict, bool] | None:
    """What pista_host says of the CPU ({} where the trace does not say) and whether it says; None on a GPU
    trace or a CPU pista_host says has no native bf16 GEMMs."""
    host: Any = facts.trace.metadata.get("pista_host")  # JSON: a dict where pista recorded the host
    known = isinstance(host, dict)
    if facts.has_gpu or (known and host.get("bf16_gemm") is not True):
        return None
    return (host if known else {}), known


def _too_little(own_ns: np.ndarray, step_share: float, known: bool, unrecorded: bool) -> bool:
    """Calls too short to be GEMMs worth moving without recorded shapes (MIN_UNRECORDED_CALL_US), or too little of
    the step on a CPU the trace does not describe (MIN_UNKNOWN_CPU_SHARE)."""
    return bool((unrecorded and own_ns.mean() < MIN_UNRECORDED_CALL_US * 1e3)
                or (not known and step_share < MIN_UNKNOWN_CPU_SHARE))


def _small_calls(flops: list) -> bool:
    """Whether the calls with recorded shapes do under MIN_MFLOP_PER_CALL each, on average."""
    known_flops = [f for f in flops if f]
    return bool(known_flops) and sum(known_flops) / len(known_flops) < MIN_MFLOP_PER_CALL * 1e6


def _record(ctx: Context, host: dict, idx: np.ndarray, own_ns: np.ndarray, flops: list, step_share: float,
            scale: float, saved_us: float, known: bool, unrecorded: bool) -> CpuFp32Gemm:
    rated = [(f, d) for f, d in zip(flops, own_ns.tolist(), strict=True) if f and d > 0]
    steps = ctx.step_count
    return CpuFp32Gemm(
        ops=ops_by_time(ctx.facts, idx, own_ns), calls=int(idx.size), gemm_us=us(own_ns.sum()) / steps,
        step_share_percent=100.0 * min(1.0, step_share),
        gflops=sum(f for f, _ in rated) / sum(d for _, d in rated) if rated else None,
        cpu_capability=str(host.get("cpu_capability", "")), amx=host.get("amx") is True,
        known_cpu=known, threads_scale=scale, speedup=CPU_BF16_SPEEDUP, saved_us=saved_us, steps=steps,
        dtype_known=not unrecorded)


def _fp32_calls(facts) -> tuple[np.ndarray, list, bool] | None:
    """The fp32 GEMM calls, their args, and whether record_shapes was off (then every GEMM is taken as
    fp32); None without any."""
    idx = gemm_calls(facts)
    args = op_args(facts, idx.tolist())
    # record_shapes off: no call has its dtype (monisha_trace, 79% of the CPU time in aten::mm/addmm):
    # the GEMMs are taken as fp32, torch's default, and the finding says the dtype was not recorded
    unrecorded = bool(args) and all(a is None or a.types is None for a in args)
    fp32 = np.array([unrecorded or (a is not None and _is_fp32(a.types)) for a in args], dtype=bool)
    if not fp32.any():
        return None
    return idx[fp32], [a for a, keep in zip(args, fp32.tolist(), strict=True) if keep], unrecorded


def _evidence(facts, idx: np.ndarray, own_ns: np.ndarray, flops: list) -> list:
    """The calls with the most CPU time, each with its shapes and achieved GFLOP/s."""
    ev = []
    for pos in np.argsort(-own_ns, kind="stable")[:EVIDENCE_EVENTS].tolist():
        f, d = flops[pos], own_ns[pos]
        ev.append(evidence(facts, int(idx[pos]), Fp32Call(op_dims(facts, int(idx[pos])), f / d if f and d > 0 else None)))
    return ev


def _is_fp32(types: Any) -> bool:
    return isinstance(types, list) and "float" in types and not {"c10::BFloat16", "c10::Half", "double"} & set(types)
