"""The implicit-copy-before-gemm rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
implicit-copy-before-gemm`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/implicit_copy_before_gemm.ftl."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import pattern_mask
from pista.rules._common import evidence, us
from pista.trace.facts import Facts

ID = "implicit-copy-before-gemm"

# Ops whose job is to copy or fill: a memset/copy they launch was written by the user.
EXPLICIT_OPS = re.compile(
    r"^aten::(copy_|_copy_from|_copy_from_and_resize|zero_|fill_|zeros|zeros_like|ones|ones_like|full|full_like"
    r"|new_zeros|new_ones|new_full|clone|contiguous|to|_to_copy|index_put_|masked_fill_|cat|stack)$"
)
# The device work a fill is: a memset, or a device-to-device copy.
FILL_NAME = re.compile(r"^(?:Memset|Memcpy DtoD)")
# cuBLAS/cuBLASLt/CUTLASS/cuDNN GEMM kernel names as they appear in the fixtures (nvjet_sm90_tst_...,
# sm80_xmma_gemm_..., sm90_xmma_fprop_implicit_gemm_...)
GEMM_NAME = re.compile(r"nvjet|gemm|cutlass|xmma|cublas|sm\d+_.*tst|matmul", re.I)
# How close the GEMM must follow: the next device work on the stream, within this many µs of the
# copy's end. seed_mm4096_compile's GEMM starts 19.8-24.0 µs after its memset, series_linear_train's
# 21.0-23.2 µs, big_gpt_eager_20steps' up to 31.5 µs (50.3 µs cold); 100 µs still means "right before".
IMPLICIT_COPY_MAX_GAP_US = 100.0
# What the memsets cost the GPU, as a share of the step, below which the rule is silent: REVIEW.md
# calls the memset before every cooperative GEMM normal (noise under ~1% of the step), and the
# fixtures' normal cases reach 1.0%: gpu/bias_addmm (1.8 µs of 175 µs), seed_mm4096_warm 0.9%,
# gpu/resnet50_bf16 0.4%, gpu/gpt_bf16_fused 0.2%, big_gpt_eager_20steps 0.05%.
IMPLICIT_MIN_STEP_SHARE = 0.015
EVIDENCE_PAIRS = 3  # memset/GEMM pairs shown; presentation
MAX_GROUPS = 3  # kinds of pair named, the most frequent first; presentation


class FillGroup(Record):
    """One kind of pair: the fill, the op that launched it and the GEMM kernel after it."""

    fill: str
    op: str
    gemm: str
    count: int
    steps: tuple[int, ...]


class ImplicitCopy(Record):
    pairs: int
    queued: int  # pairs whose GEMM was already queued when the fill ran
    groups: tuple[FillGroup, ...]  # the most frequent kinds of pair, MAX_GROUPS at most
    more_groups: int  # kinds of pair not named
    device_us: float  # the fills' own time, over the window
    host_api_us: float  # their cudaMemsetAsync/cudaMemcpyAsync calls, over the window
    cost_us: float  # what the GPU would gain without them, over the window
    gap_us_min: float
    gap_us_max: float
    gemm_kernels: tuple[str, ...]
    steps: int
    step_share_percent: float  # cost per step over the step (at least the GPU work per step)


class Fill(Record):
    """Note on a fill: the op it was launched in."""

    op: str
    cost_us: float


class FillCall(Record):
    """Note on the fill's host API call."""

    dur_us: float


class GemmAfter(Record):
    """Note on the GEMM after it."""

    gap_us: float
    queued: bool


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    pairs = _pairs(ctx)
    # what a fill costs: from its start to its GEMM's where the GEMM was queued behind it, else its own time
    costs = [float(trace.ts[gemm] - trace.ts[fill]) if queued else float(trace.dur[fill])
             for fill, gemm, _gap, queued in pairs]
    cost = sum(costs, 0.0)
    impact = ctx.per_step(cost)
    busy_per_step = ctx.summary.gpu_busy_us * 1000.0 / ctx.step_count
    period = max(ctx.step_ns, busy_per_step)  # a step is at least the GPU work it holds
    share = cost / ctx.step_count / max(period, 1.0)
    if not pairs or share < IMPLICIT_MIN_STEP_SHARE:
        return []
    launch_ns = [int(trace.dur[facts.launcher[f]]) if facts.launcher[f] >= 0 else 0 for f, _, _, _ in pairs]
    groups = _groups(facts, pairs)
    gaps = [g for _, _, g, _ in pairs]
    record = ImplicitCopy(
        pairs=len(pairs), queued=sum(1 for p in pairs if p[3]), groups=tuple(groups[:MAX_GROUPS]),
        more_groups=max(0, len(groups) - MAX_GROUPS),
        device_us=us(sum(int(trace.dur[f]) for f, _, _, _ in pairs)), host_api_us=us(sum(launch_ns)),
        cost_us=us(cost), gap_us_min=us(min(gaps)), gap_us_max=us(max(gaps)),
        gemm_kernels=tuple(sorted({trace.event_name(g) for _, g, _, _ in pairs})), steps=ctx.step_count,
        step_share_percent=100.0 * share)
    return [Finding(ID, record, impact, _evidence(facts, pairs, costs, launch_ns))]


def _groups(facts: Facts, pairs: list[tuple[int, int, int, bool]]) -> list[FillGroup]:
    """The pairs by fill, op and GEMM kernel name, most pairs first."""
    trace = facts.trace
    grouped: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for k, (fill, gemm, _, _) in enumerate(pairs):
        grouped[(trace.event_name(fill), trace.event_name(int(facts.owner[fill])), trace.event_name(gemm))].append(k)
    groups = []
    for (fill_name, op, gemm_name), ks in grouped.items():
        steps = tuple(sorted({s for s in (facts.step_of(pairs[k][0]) for k in ks) if s is not None}))
        groups.append(FillGroup(fill_name, op, gemm_name, len(ks), steps))
    return sorted(groups, key=lambda g: -g.count)


def _evidence(facts: Facts, pairs: list[tuple[int, int, int, bool]], costs: list[float],
              launch_ns: list[int]) -> list[Evidence]:
    """The costliest pairs, in time order: the fill, its host API call, the GEMM after it."""
    trace = facts.trace
    ev = []
    for k in sorted(np.argsort(-np.asarray(costs), kind="stable")[:EVIDENCE_PAIRS].tolist()):
        fill, gemm, gap, queued = pairs[k]
        ev.append(evidence(facts, fill, Fill(trace.event_name(int(facts.owner[fill])), us(costs[k]))))
        if facts.launcher[fill] >= 0:
            ev.append(evidence(facts, int(facts.launcher[fill]), FillCall(us(launch_ns[k]))))
        ev.append(evidence(facts, gemm, GemmAfter(us(gap), queued)))
    return ev


def _pairs(ctx: Context) -> list[tuple[int, int, int, bool]]:
    """(fill, gemm, gap ns, queued) for each implicit fill right before its own op's GEMM kernel."""
    facts = ctx.facts
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    if work.size < 2:
        return []
    is_fill = pattern_mask(facts, FILL_NAME)[work]
    if not is_fill.any():
        return []
    # next device work on the same stream (pid, tid), by start time
    order = np.lexsort((trace.ts[work], trace.tid[work], trace.pid[work]))
    w = work[order]
    same_lane = (trace.pid[w][1:] == trace.pid[w][:-1]) & (trace.tid[w][1:] == trace.tid[w][:-1])
    nxt = np.full(w.size, -1, dtype=np.int64)
    nxt[:-1] = np.where(same_lane, w[1:], -1)
    pos = np.flatnonzero(is_fill[order] & (nxt >= 0))
    fill, gemm = w[pos], nxt[pos]
    owner = facts.owner[fill]
    # not the GEMM op's own preparation: another op's, or an op whose job is to copy or fill
    own = (owner >= 0) & (owner == facts.owner[gemm])
    own[own] = ~pattern_mask(facts, EXPLICIT_OPS)[owner[own]]
    fill, gemm = fill[own], gemm[own]
    fill_end = trace.ts[fill] + trace.dur[fill]
    gap = trace.ts[gemm] - fill_end
    is_gemm = (trace.cat[gemm] == trace.category_id("kernel")) & pattern_mask(facts, GEMM_NAME)[gemm]
    keep = is_gemm & ~(gap.astype(np.float64) / 1000.0 > IMPLICIT_COPY_MAX_GAP_US)
    fill, gemm, fill_end, gap = fill[keep], gemm[keep], fill_end[keep], gap[keep]
    launch = facts.launcher[gemm]
    launched = launch >= 0
    queued = np.zeros(gemm.size, dtype=bool)
    queued[launched] = trace.ts[launch[launched]] + trace.dur[launch[launched]] <= fill_end[launched]
    return list(zip(fill.tolist(), gemm.tolist(), gap.tolist(), queued.tolist(), strict=True))
