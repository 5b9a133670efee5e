"""The dominant-event rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
dominant-event`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/dominant_event.ftl."""

from __future__ import annotations

import re

import numpy as np

from pista import efficiency
from pista.efficiency import Rate, card_of, device_name, gemms, headroom_ns, rate
from pista.findings import Context, Evidence, Finding, Impact, Record, top_indices
from pista.rules._common import evidence, us
from pista.rules._dominant import NEAR_PEAK_SHARE, dominant
from pista.trace.facts import Facts

ID = "dominant-event"
# A GEMM at or above this share of the card's ceiling runs as fast as the card allows (the
# ceiling's own spread, see pista.efficiency): seed_mm4096_warm 1.06 (803 of 757 TFLOP/s),
# seed_mm4096_compile 1.04, gpu/tf32_gemm 1.13.
NEAR_CEILING_SHARE = efficiency.AT_CEILING_SHARE
# Below-ceiling GEMMs smaller than this (FLOP per call) cannot fill the card: a 1024^3 GEMM is
# 2.1 GFLOP, under 3 µs at the H200's ceiling, shorter than its launch.
SMALL_GEMM_FLOPS = 2.0 * 1024**3
# Dimensions that are not multiples of this leave tensor-core tiles partly empty.
TILE_MULTIPLE = 16
# Below this GPU busy share, the text of a GEMM left alone names the GPU's idle time as the larger cost
# (tl_sglang_prefilldecode: 49.9% busy, its host blocked 493 ms on outside work).
IDLE_NAMED_BELOW = 60.0
EVIDENCE_EVENTS = 3  # instances shown (the longest); presentation, not a threshold


class DominantEvent(Record):
    kind: str  # kernel | copy | memset | op
    name: str
    calls: int
    total_us: float  # over the window
    avg_us: float
    share_percent: float  # of the Self CUDA total
    self_device_total_us: float
    launched_by: str
    verdict: str
    gpu_busy_percent: float
    steps: int
    # at-ceiling | near-ceiling | below-ceiling | precision | no-flops | unknown-card | transfer
    cause: str
    headroom_us: float  # over the window: its time above the card's ceiling
    rate: Rate | None  # its GEMM rate against the card (None for copies and memsets)
    shape: tuple[int, int, int, int] | None  # batch, M, N, K of its longest GEMM call, if known
    device: str | None  # the GPU's name as the trace gives it
    fp8: bool  # the card has fp8 tensor cores (a lower precision to suggest for bf16/fp16)


class Instance(Record):
    """Note on one of the longest calls: its rate where it is a GEMM."""

    tflops: float | None


# A collective's kernel or op, by name: NCCL/RCCL kernels, c10d ops, the profiler's record_param_comms.
COLLECTIVE = re.compile(r"nccl|rccl|^c10d::|^record_param_comms", re.I)


def check(ctx: Context) -> list[Finding]:
    if ctx.summary.host_bound:
        return []  # the GPU waits for the host: a faster kernel would only wait longer
    found = dominant(ctx)
    if found is None or found.kind in ("copy", "memset"):
        return []  # a copy's cost and fix are the copy rules' (pageable-memcpy): told once, there
    facts = ctx.facts
    trace = facts.trace
    if COLLECTIVE.search(found.name):
        # a collective's kernel (HTA's hta_sampled_rank0: ncclKernel_SendRecv 65% of the GPU time): what it
        # costs the step is its exposure, exposed-communication's; "check it with ncu" says nothing there
        return []
    members = found.members
    spent = int(trace.dur[members].sum())
    calls, launched_by = _calls(facts, found.kind, found.name, members)
    card = card_of(trace)
    gemm_rate = rate(facts, members, card) if found.kind in ("kernel", "op") else None
    cause, headroom = _cause(facts, members, gemm_rate, card, found.kind)
    impact = ctx.per_step(headroom) if cause in ("at-ceiling", "below-ceiling") else Impact.none()
    record = DominantEvent(
        kind=found.kind, name=found.name, calls=calls, total_us=us(spent), avg_us=us(spent / max(calls, 1)),
        share_percent=100.0 * spent / found.total_ns, self_device_total_us=us(found.total_ns),
        launched_by=launched_by, verdict=ctx.summary.verdict,
        gpu_busy_percent=100.0 * (ctx.summary.gpu_busy_share or 0.0), steps=ctx.step_count, cause=cause,
        headroom_us=us(headroom), rate=gemm_rate, shape=_shape(facts, members), device=device_name(trace),
        fp8=bool(card and card.peak("fp8")))
    return [Finding(ID, record, impact, _evidence(facts, members))]


def _calls(facts: Facts, kind: str, name: str, members: np.ndarray) -> tuple[int, str]:
    """The calls (an op's, or the kernel's launches) and the op that launched most of them ("" where none is
    known)."""
    trace = facts.trace
    if kind == "op":
        return int(np.unique(facts.owner[members]).size), name
    owners = facts.owner[members]
    owners = owners[owners >= 0]
    return int(members.size), trace.names[int(np.bincount(trace.name[owners]).argmax())] if owners.size else ""


def _evidence(facts: Facts, members: np.ndarray) -> list[Evidence]:
    """The longest calls, each with its achieved TFLOP/s where it is a rated GEMM."""
    trace = facts.trace
    member_mask = np.zeros(len(trace), dtype=bool)
    member_mask[members] = True
    table = gemms(facts)
    ev = []
    for i in top_indices(trace.dur, member_mask, EVIDENCE_EVENTS).tolist():
        g = table.get(int(i))
        ev.append(evidence(facts, int(i), Instance(g.tflops(int(trace.dur[i])) if g else None)))
    return ev


def _cause(facts, members: np.ndarray, r: Rate | None, card, kind: str) -> tuple[str, float]:
    if kind in ("copy", "memset"):
        return "transfer", 0.0
    if r is None or r.tflops is None:
        return "no-flops", 0.0
    if r.dtype in ("fp32", "fp64"):
        return "precision", 0.0
    if card is None or r.ceiling_tflops is None:
        return "unknown-card", 0.0
    headroom = headroom_ns(facts, members, card)
    share = r.ceiling_share or 0.0
    if share >= NEAR_CEILING_SHARE:
        return "at-ceiling", headroom
    # near the ceiling, the kernel does its job: its headroom is no saving to claim (see NEAR_PEAK_SHARE)
    return ("near-ceiling", headroom) if share >= NEAR_PEAK_SHARE else ("below-ceiling", headroom)


def _shape(facts, members: np.ndarray) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of the longest rated call, from its op's recorded shapes."""
    table = gemms(facts)
    rated = [table[int(k)] for k in members.tolist() if int(k) in table]
    if not rated:
        return None
    return max(rated, key=lambda g: int(facts.trace.dur[g.kernel])).mnk
