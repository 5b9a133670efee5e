"""The fp64-gemm rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
fp64-gemm`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/fp64_gemm.ftl."""

from __future__ import annotations

import numpy as np

from pista.efficiency import Gemm, card_of, gemms
from pista.findings import Context, Finding, Record
from pista.rules._common import evidence, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "fp64-gemm"
# Under this share of the step the saving is noise (REVIEW.md: ~1%).
MIN_STEP_SHARE = 0.01
EVIDENCE_CALLS = 3


class Fp64Gemm(Record):
    calls: int
    ops: tuple[str, ...]
    kernel: str  # the costliest fp64 GEMM kernel
    gemm_us: float  # over the window
    tflops: float
    shape: tuple[int, int, int, int]  # batch, M, N, K of the costliest call
    card: str | None
    target: str  # the precision it could run in: tf32 or fp32
    target_tflops: float
    saved_us: float  # over the window
    steps: int


class Fp64Call(Record):
    """Note on one fp64 GEMM call."""

    tflops: float
    saved_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    calls = _fp64_calls(facts) if facts.has_gpu else []
    card = card_of(trace)
    target = _target(card)
    if not calls or target is None:
        return []
    name, ceiling = target
    saved = {g.kernel: max(0.0, float(trace.dur[g.kernel]) - g.flops / (ceiling * 1e3)) for g in calls}
    impact = ctx.per_step(sum(saved.values()))
    if impact.share < MIN_STEP_SHARE:
        return []
    dur = np.array([float(trace.dur[g.kernel]) for g in calls])
    top = calls[int(np.argmax(dur))]
    flops = sum(g.flops for g in calls)
    record = Fp64Gemm(
        calls=len(calls), ops=tuple(sorted({trace.event_name(g.op) for g in calls})),
        kernel=trace.event_name(top.kernel), gemm_us=us(dur.sum()), tflops=flops / dur.sum() / 1e3,
        shape=top.mnk, card=card.name if card else None, target=name, target_tflops=ceiling,
        saved_us=us(sum(saved.values())), steps=ctx.step_count)
    picks = sorted(calls, key=lambda g: -saved[g.kernel])[:EVIDENCE_CALLS]
    ev = [evidence(facts, g.kernel, Fp64Call(g.tflops(trace.dur[g.kernel]), us(saved[g.kernel]))) for g in picks]
    kernels = np.array([g.kernel for g in calls], dtype=np.int64)
    edit = Edit("GEMMs at the target dtype", device_dur=(kernels, trace.dur[kernels] - np.array([saved[g.kernel] for g in calls])))
    return [Finding(ID, record, impact, ev, edit=edit)]


def _fp64_calls(facts: Facts) -> list[Gemm]:
    """The fp64 GEMM calls whose kernel starts inside the window."""
    lo, hi = facts.window
    return [g for k, g in gemms(facts).items() if g.dtype == "fp64" and lo <= facts.trace.ts[k] < hi]


def _target(card) -> tuple[str, float] | None:
    """The precision an fp64 GEMM could run in on this card, and its ceiling in TFLOP/s."""
    if card is None:
        return None
    fp64 = card.ceiling("fp64") or 0.0
    for dtype in ("tf32", "fp32"):
        ceiling = card.ceiling(dtype)
        if ceiling and ceiling > fp64:
            return dtype, ceiling
    return None
