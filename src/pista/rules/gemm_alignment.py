"""The gemm-alignment rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
gemm-alignment`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/gemm_alignment.ftl."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pista.efficiency import Gemm, card_of, gemms
from pista.findings import Context, Evidence, Finding, Record
from pista.opargs import op_args
from pista.query import name_mask
from pista.rules._attention import matmul_kernels
from pista.rules._common import device_ns_in_window, evidence, short_name, step_ops, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "gemm-alignment"

# Elements per 16 bytes, the alignment cuBLAS's tensor-core kernels need, per dtype.
ALIGN = {"bf16": 8, "fp16": 8, "fp8": 16, "tf32": 4}
# A misaligned call counts when it runs below this share of the aligned GEMMs' rate: gpu/gpt2_conv1d's
# head at 0.15-0.23 of it; aligned GEMMs of one model spread 0.6-1.2 around their mean (the same trace:
# 396-718 TFLOP/s).
SLOW_SHARE = 0.5
# The aligned GEMMs of the dtype must take this share of the misaligned ones' time to be a reference.
MIN_REFERENCE_SHARE = 0.05
MIN_STEP_SHARE = 0.01  # REVIEW.md: under 1% of the step is noise
# What to pad to: a multiple of 64 elements lets cuBLAS pick its widest tiles (nanoGPT's 50257 -> 50304).
PAD_TO = 64
EVIDENCE_CALLS = 3
# Without an aligned GEMM of the dtype to compare with (savings/h100/align_hidden: sizes 1000-4001-3001-1000,
# every GEMM misaligned), this share of the card's ceiling is the aligned rate: its aligned twin's GEMMs ran
# at 0.5-0.8 of the H100's measured bf16 ceiling.
REFERENCE_CEILING_SHARE = 0.5
# Ops whose input holds the token ids (batch, tokens): their last dimension is the tokens per sample.
EMBEDDING_OPS = frozenset({"aten::embedding"})


class Misaligned(Record):
    """The misaligned calls of one op on one shape."""

    op: str
    dtype: str
    mnk: tuple[int, int, int, int]  # batch, M, N, K
    odd: tuple[int, ...]  # its dimensions that are not multiples of the alignment
    calls: int
    us_per_step: float
    tflops: float
    kernel: str


class GemmAlignment(Record):
    steps: int
    calls: int
    kernel_us: float  # per step, the misaligned calls
    gpu_saved_us: float  # per step: the GPU time padding gives back
    busy_percent: float  # the window's GPU busy share, which scales it to the impact
    reference_tflops: float  # the aligned GEMMs' rate (the dtype of the biggest group)
    gpu_share_percent: float  # of the GPU time in the window
    odd: tuple[int, ...]  # every misaligned dimension, most time first
    pad_to: int  # the first of them rounded up to a multiple of PAD_TO (of the alignment, for a sequence length)
    groups: tuple[Misaligned, ...]  # most time first
    # the misaligned dimensions that are sequence lengths: an attention's batched GEMM over queries and keys
    # (the dimension twice among M, N, K), or the tokens per sample the model's embedding reads
    sequence: tuple[int, ...] = ()


class CallNote(Record):
    """Note on a misaligned call's kernel."""

    tflops: float
    reference_tflops: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    slow, dur, reference = _misaligned(facts) if facts.has_gpu else ([], {}, {})
    gpu_ns = sum(dur[g.kernel] - _reference_ns(g, reference) for g in slow)
    busy = ctx.busy_share
    impact = ctx.per_step(gpu_ns * busy)
    if not slow or impact.share < MIN_STEP_SHARE:
        return []
    record = _record(facts, slow, dur, reference, ctx.step_count, us(gpu_ns) / ctx.step_count, busy)
    padded = np.asarray([g.kernel for g in slow], np.int64)
    at_reference = np.array([min(dur[g.kernel], _reference_ns(g, reference)) for g in slow])
    return [Finding(ID, record, impact, _evidence(facts, slow, dur, reference),
                    edit=Edit("padded GEMMs", device_dur=(padded, at_reference)))]


def _misaligned(facts: Facts) -> tuple[list[Gemm], dict[int, float], dict[str, float]]:
    """The misaligned GEMM calls slow enough for padding to pay (_slow, _worth_padding), each rated call's kernel
    time, and each dtype's reference rate."""
    trace = facts.trace
    calls = [g for g in gemms(facts).values() if g.dtype in ALIGN and g.flops > 0]
    dur = {g.kernel: float(trace.dur[g.kernel]) for g in calls}
    odd = [g for g in calls if _odd(g)]
    if not odd:
        return [], dur, {}
    reference = _reference_rates(calls, dur)
    _add_ceilings(reference, odd, card_of(trace))
    return _worth_padding(facts, _slow(facts, odd, dur, reference), dur, reference), dur, reference


def _reference_ns(g: Gemm, reference: dict[str, float]) -> float:
    """The call's kernel time at its dtype's reference rate."""
    return g.flops / reference[g.dtype or ""] / 1e3


def _evidence(facts: Facts, slow: list[Gemm], dur: dict[int, float], reference: dict[str, float]) -> list[Evidence]:
    """The slowest calls' kernels, in time order, each with its rate and its dtype's reference."""
    trace = facts.trace
    slowest = sorted(slow, key=lambda g: -dur[g.kernel])[:EVIDENCE_CALLS]
    return [evidence(facts, g.kernel, CallNote(g.tflops(dur[g.kernel]), reference[g.dtype or ""]))
            for g in sorted(slowest, key=lambda g: int(trace.ts[g.kernel]))]


def _slow(facts, odd: list[Gemm], dur: dict[int, float], reference: dict[str, float]) -> list[Gemm]:
    """The misaligned calls far below their dtype's reference rate, less a written-out attention's matmuls:
    those are manual-attention's, F.scaled_dot_product_attention removes them (tl_h100_timesformer,
    tl_h100_owlv2: "pad 3137 / 5185 for a vocabulary" on the attention's bmm over its tokens)."""
    attention = set(matmul_kernels(facts).tolist())
    return [g for g in odd if g.dtype in reference and g.tflops(dur[g.kernel]) < SLOW_SHARE * reference[g.dtype]
            and g.kernel not in attention]


def _worth_padding(facts, slow: list[Gemm], dur: dict[int, float], reference: dict[str, float]) -> list[Gemm]:
    """The calls whose padding pays: a GEMM whose odd dimension is a sequence length is padded by padding every
    sequence, which every token's work pays for (the padded share of the GPU time, at least); where that costs
    more than the GEMMs give back, they are left out."""
    tokens = _tokens_per_sample(facts)
    device_ns = device_ns_in_window(facts)
    out = [g for g in slow if not _sequence_dims(g, tokens)]
    by_dim: dict[int, list[Gemm]] = defaultdict(list)
    for g in slow:
        if (dims := _sequence_dims(g, tokens)):
            by_dim[dims[0]].append(g)
    for d, members in by_dim.items():
        gain = sum(dur[g.kernel] - _reference_ns(g, reference) for g in members)
        cost = (_padded(d, ALIGN[members[0].dtype or ""]) / d - 1.0) * device_ns
        if gain > cost:
            out += members
    return out


def _padded(d: int, multiple: int) -> int:
    return -(-d // multiple) * multiple


def _tokens_per_sample(facts) -> frozenset[int]:
    """The tokens per sample the steps' embedding lookups read (their token-id input's last dimension)."""
    ops = np.flatnonzero(step_ops(facts) & name_mask(facts, EMBEDDING_OPS))
    out = set()
    for a in op_args(facts, ops.tolist()):
        dims = a.dims if a is not None else None
        if isinstance(dims, list) and len(dims) > 1 and isinstance(dims[1], list) and len(dims[1]) >= 2:
            out.add(int(dims[1][-1]))
    return frozenset(out)


def _sequence_dims(g: Gemm, tokens: frozenset[int]) -> tuple[int, ...]:
    """The odd dimensions of a GEMM that are sequence lengths: in a batched GEMM, a dimension found twice
    among M, N and K (an attention's q @ k^T is T x T, its scores @ v has M = K = T), or the tokens per sample."""
    b, m, n, k = g.mnk
    return tuple(d for d in _odd(g) if (b > 1 and (m, n, k).count(d) >= 2) or d in tokens)


def _add_ceilings(reference: dict[str, float], odd: list[Gemm], card) -> None:
    """Where every GEMM of a dtype is misaligned, its reference is a share of the card's ceiling."""
    for dtype in {g.dtype or "" for g in odd} - set(reference):
        ceiling = card.ceiling(dtype) if card else None
        if ceiling:
            reference[dtype] = REFERENCE_CEILING_SHARE * ceiling


def _record(facts, slow: list[Gemm], dur: dict[int, float], reference: dict[str, float], steps: int,
            gpu_saved_us: float, busy: float) -> GemmAlignment:
    groups = _groups(facts, slow, dur, steps)
    kernel_ns = sum(dur[g.kernel] for g in slow)
    dims: dict[int, float] = defaultdict(float)  # each misaligned dimension's kernel time
    for g in slow:
        for d in _odd(g):
            dims[d] += dur[g.kernel]
    odd = tuple(sorted(dims, key=lambda d: -dims[d]))
    tokens = _tokens_per_sample(facts)
    sequence = tuple(d for d in odd if any(d in _sequence_dims(g, tokens) for g in slow))
    # a sequence is padded to the alignment only (pad_to_multiple_of=8): every token pays for the padding
    pad_to = _padded(odd[0], ALIGN[groups[0].dtype]) if odd[0] in sequence else _padded(odd[0], PAD_TO)
    return GemmAlignment(
        steps=steps, calls=len(slow), kernel_us=us(kernel_ns) / steps, gpu_saved_us=gpu_saved_us,
        busy_percent=100.0 * busy, reference_tflops=reference[groups[0].dtype],
        gpu_share_percent=100.0 * kernel_ns / device_ns_in_window(facts),
        odd=odd, pad_to=pad_to, groups=tuple(groups), sequence=sequence)


def _odd(g: Gemm) -> tuple[int, ...]:
    align = ALIGN[g.dtype or ""]
    return tuple(sorted({d for d in g.mnk[1:] if d % align}))


def _reference_rates(calls: list[Gemm], dur: dict[int, float]) -> dict[str, float]:
    """Per dtype, the aligned GEMMs' time-weighted rate (FLOP per ns / 1e3: TFLOP/s), where they take
    MIN_REFERENCE_SHARE of the misaligned ones' time."""
    flops: dict[str, float] = defaultdict(float)
    time: dict[str, float] = defaultdict(float)
    odd_time: dict[str, float] = defaultdict(float)
    for g in calls:
        if _odd(g):
            odd_time[g.dtype or ""] += dur[g.kernel]
        else:
            flops[g.dtype or ""] += g.flops
            time[g.dtype or ""] += dur[g.kernel]
    return {d: flops[d] / time[d] / 1e3 for d in time
            if time[d] > 0 and time[d] >= MIN_REFERENCE_SHARE * odd_time.get(d, 0.0)}


def _groups(facts, slow: list[Gemm], dur: dict[int, float], steps: int) -> list[Misaligned]:
    trace = facts.trace
    by: dict[tuple[str, str, tuple[int, int, int, int]], list[Gemm]] = defaultdict(list)
    for g in slow:
        by[(trace.event_name(g.op), g.dtype or "", g.mnk)].append(g)
    out = []
    for (op, dtype, mnk), members in by.items():
        ns = sum(dur[g.kernel] for g in members)
        flops = sum(g.flops for g in members)
        longest = max(members, key=lambda g: dur[g.kernel])
        out.append(Misaligned(op, dtype, mnk, _odd(members[0]), len(members), us(ns) / steps,
                              flops / max(ns, 1.0) / 1e3, short_name(trace.event_name(longest.kernel))))
    return sorted(out, key=lambda m: -m.us_per_step)

