"""The compute-bound rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
compute-bound`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/compute_bound.ftl."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from pista import findings
from pista.efficiency import card_of, gemms, headroom_ns, rate
from pista.findings import Context, Evidence, Finding, Impact, Record
from pista.rules._common import evidence, us
from pista.rules._dominant import NEAR_PEAK_SHARE, dominant
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "compute-bound"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The verdict's thresholds live with the verdict (pista.findings); shown here for `pista explain`.
COMPUTE_MIN_GPU_BUSY = findings.COMPUTE_MIN_GPU_BUSY
COMPUTE_MAX_RATIO = findings.COMPUTE_MAX_RATIO
# Below this share of the step the GEMMs' headroom is noise (REVIEW.md: under ~1% of the step).
MIN_STEP_SHARE = 0.01
# The precisions that run on tensor cores; fp32/fp64 GEMMs are fp32-gemm's and fp64-gemm's.
TENSOR_CORE_DTYPES = ("fp8", "bf16", "fp16", "tf32")
MAX_KERNELS = 3  # GEMM kernels named, most headroom first; presentation
# The rules whose findings name the time of each purpose: where one is printed, the GEMMs-near-peak finding
# points at it.
PURPOSE_RULES = {"elementwise": ("unfused-elementwise", "tanh-gelu"), "reduction": ("unfused-elementwise",),
                 "cast": ("autocast-casts", "unfused-elementwise"), "attention": ("manual-attention",),
                 "optimizer": ("unfused-optimizer",), "communication": ("exposed-communication",),
                 "copy": ("pageable-memcpy",), "conv": ("channels-last",)}
EVIDENCE_EVENTS = 3


class GemmKernel(Record):
    """One GEMM kernel name: its calls, time and rate against the card."""

    name: str
    calls: int
    total_us: float
    tflops: float
    dtype: str
    ceiling_tflops: float
    ceiling_share: float
    headroom_us: float  # over the window


class ComputeBound(Record):
    gpu_busy_percent: float
    self_device_total_us: float
    self_cpu_total_us: float
    card: str
    ceiling_measured: bool
    gemm_us: float  # tensor-core GEMM time over the window
    headroom_us: float  # over the window
    steps: int
    kernels: tuple[GemmKernel, ...]  # most headroom first


class NearPeak(Record):
    """The finding where the GEMMs run near the ceiling and another kind of work takes more of the GPU."""

    gpu_busy_percent: float
    card: str
    ceiling_measured: bool
    steps: int
    gemm_us: float  # tensor-core GEMM time over the window
    gemm_percent: float  # of the device time
    kernels: tuple[GemmKernel, ...]  # most time first
    other: str  # the purpose (pista.purpose.PURPOSES) with the most GPU time
    other_us: float  # per step
    other_percent: float  # of the device time
    named_by: tuple[str, ...] = ()  # the printed findings' rules that name that purpose's time (pista.engine)

    def with_printed(self, rules: frozenset[str]) -> NearPeak:
        """This record once the reading is known: which of the rules on its purpose have a finding in it."""
        return msgspec.structs.replace(self, named_by=tuple(r for r in PURPOSE_RULES.get(self.other, ()) if r in rules))


class SlowCall(Record):
    """Note on a GEMM call below the ceiling."""

    tflops: float
    ceiling_tflops: float
    headroom_us: float


def check(ctx: Context) -> list[Finding]:
    s = ctx.summary
    if s.verdict != "compute-bound" or dominant(ctx) is not None:
        return []
    facts = ctx.facts
    trace = facts.trace
    card = card_of(trace)
    table = gemms(facts)
    calls = np.array(sorted(k for k, g in table.items() if g.dtype in TENSOR_CORE_DTYPES), dtype=np.int64)
    if card is None or calls.size == 0:
        return []
    kernels, near = _kernels(facts, calls, card)
    gemm_ns = trace.dur[calls].sum()
    # a GEMM near the ceiling does its job (NEAR_PEAK_SHARE): its calls have nothing to give back
    calls = calls[~near]
    per_call = np.array([headroom_ns(facts, calls[i:i + 1], card) for i in range(calls.size)])
    impact = ctx.per_step(float(per_call.sum()))
    if impact.share < MIN_STEP_SHARE or not (per_call > 0).any():
        return _near_peak(ctx, kernels, card)
    slow_kernels = [k for k in kernels if k.ceiling_share < NEAR_PEAK_SHARE]
    record = ComputeBound(
        gpu_busy_percent=100.0 * (s.gpu_busy_share or 0.0), self_device_total_us=s.self_device_total_us,
        self_cpu_total_us=s.self_cpu_total_us, card=card.name,
        ceiling_measured=all(card.ceiling_measured(k.dtype) for k in slow_kernels),
        gemm_us=us(gemm_ns), headroom_us=us(per_call.sum()), steps=ctx.step_count,
        kernels=tuple(sorted(slow_kernels, key=lambda k: -k.headroom_us)[:MAX_KERNELS]))
    ev = _evidence(facts, calls, per_call, card)
    slow = calls[per_call > 0]
    return [Finding(ID, record, impact, ev, edit=Edit("GEMMs at the ceiling", device_dur=(
        slow, trace.dur[slow] - per_call[per_call > 0])))]


def _evidence(facts: Facts, calls: np.ndarray, per_call: np.ndarray, card: Any) -> list[Evidence]:
    """The calls with the most headroom, each with its rate, the card's ceiling in its dtype and its headroom."""
    trace = facts.trace
    table = gemms(facts)
    ev = []
    for pos in np.argsort(-per_call, kind="stable")[:EVIDENCE_EVENTS].tolist():
        k = int(calls[pos])
        g = table[k]
        ev.append(evidence(facts, k, SlowCall(g.tflops(int(trace.dur[k])), float(card.ceiling(g.dtype) or 0.0),
                                              us(per_call[pos]))))
    return ev


def _kernels(facts, calls: np.ndarray, card) -> tuple[list[GemmKernel], np.ndarray]:
    """Per GEMM kernel name, its calls' rate against the card; and the mask of the calls whose kernel runs at
    NEAR_PEAK_SHARE of the ceiling or more."""
    trace = facts.trace
    kernels = []
    near = np.zeros(calls.size, dtype=bool)
    names = trace.name[calls]
    for name_id in np.unique(names).tolist():
        mine = names == name_id
        members = calls[mine]
        r = rate(facts, members, card)
        kernels.append(GemmKernel(
            name=trace.names[name_id], calls=int(members.size), total_us=us(trace.dur[members].sum()),
            tflops=float(r.tflops or 0.0), dtype=str(r.dtype), ceiling_tflops=float(r.ceiling_tflops or 0.0),
            ceiling_share=float(r.ceiling_share or 0.0), headroom_us=us(headroom_ns(facts, members, card))))
        near[mine] = (r.ceiling_share or 0.0) >= NEAR_PEAK_SHARE
    return kernels, near


def _near_peak(ctx: Context, kernels: list[GemmKernel], card) -> list[Finding]:
    """The GEMMs run near the ceiling: said (info, nothing claimed) where another kind of work takes more of
    the GPU than they do, and named (tl_h100_qwen05: GEMMs at 82% of the ceiling, elementwise 56% of the GPU
    time); a healthy trace whose time is its GEMMs hears nothing."""
    near = sorted((k for k in kernels if k.ceiling_share >= NEAR_PEAK_SHARE), key=lambda k: -k.total_us)
    by_purpose = {p: t for p, t in ctx.summary.gpu_time_by_purpose.items() if p != "gemm"}
    if not near or not by_purpose:
        return []
    other = max(by_purpose, key=lambda p: by_purpose[p])
    total = sum(ctx.summary.gpu_time_by_purpose.values()) or 1.0
    gemm_us = sum(k.total_us for k in near)
    steps = ctx.step_count
    if by_purpose[other] <= gemm_us / steps:
        return []
    s = ctx.summary
    record = NearPeak(
        gpu_busy_percent=100.0 * (s.gpu_busy_share or 0.0), card=card.name,
        ceiling_measured=all(card.ceiling_measured(k.dtype) for k in near), steps=steps, gemm_us=gemm_us,
        gemm_percent=100.0 * gemm_us / steps / total, kernels=tuple(near[:MAX_KERNELS]), other=other,
        other_us=by_purpose[other], other_percent=100.0 * by_purpose[other] / total)
    return [Finding(ID, record, Impact.none())]
