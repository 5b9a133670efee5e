"""The unfused-epilogue rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
unfused-epilogue`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/unfused_epilogue.ftl."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from typing import Any

import msgspec
import numpy as np

from pista.efficiency import GEMM_OPS, MEMO_SIZE, gemm_mnk
from pista.findings import Context, Evidence, Finding, Record
from pista.opargs import OpArgs, op_args
from pista.query import name_mask, nearest_in
from pista.rules._common import device_ns_in_window, us
from pista.timeline import Edit
from pista.trace.facts import INDEX, Facts, indices

ID = "unfused-epilogue"
BIAS_OPS = frozenset({"aten::add", "aten::add_"})
ACTIVATION_OPS = frozenset({"aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_", "aten::silu", "aten::silu_",
                            "aten::sigmoid", "aten::sigmoid_", "aten::tanh", "aten::tanh_"})
# GEMM ops that already add a bias (self/input) in their epilogue.
BIASED_GEMMS = frozenset({"aten::addmm", "aten::baddbmm", "aten::addbmm", "aten::_addmm_activation"})
# Below this share of the step the saving is noise (REVIEW.md): the GELU after each Linear of
# series_mlp_eager and gpu/adamw_foreach is 2.4-2.6 µs, ~0.3% of their steps.
MIN_IMPACT_SHARE = 0.01
EVIDENCE_PAIRS = 3


class EpiloguePair(Record):
    """One GEMM op followed by one elementwise op, all their calls with the same shapes."""

    gemm: str  # aten::matmul
    op: str  # aten::add
    kind: str  # "bias" | "activation"
    parent: str  # the region or op both ran in: matmul_add
    out_shape: tuple[int, ...]
    other_shape: tuple[int, ...] | None  # the bias's shape
    calls_per_step: float
    elementwise_us: float  # per step
    gemm_us: float  # per step


class UnfusedEpilogue(Record):
    steps: int
    pairs: tuple[EpiloguePair, ...]  # most elementwise time first
    elementwise_us: float  # per step
    gpu_share_percent: float  # of the device time
    step_share_percent: float


class GemmCall(Record):
    """Note on the GEMM op of a pair."""

    kernel_us: float


class EpilogueCall(Record):
    """Note on the elementwise op after it."""

    kind: str
    gemm: str
    kernel_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    ops = facts.is_host & trace.category_mask({"cpu_op"})
    gemms, nxt = _gemm_then_epilogue(facts, ops)
    hits = _hits(facts, gemms, nxt) if gemms.size else []
    if not hits:
        return []
    steps = ctx.step_count
    total_ns = float(sum(int(trace.dur[k]) for *_, ks in hits for k in ks))
    impact = ctx.per_step(total_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return []
    record = UnfusedEpilogue(steps=steps, pairs=_pairs(facts, hits, steps), elementwise_us=us(total_ns) / steps,
                             gpu_share_percent=100.0 * total_ns / device_ns_in_window(facts),
                             step_share_percent=100.0 * impact.share)
    # in the GEMM's epilogue the elementwise op goes, its dispatch and its kernels with it
    gone = np.array([e for _, e, *_ in hits], dtype=np.int64)
    return [Finding(ID, record, impact, _evidence(facts, hits), edit=Edit("epilogue fused", remove=gone))]


def _gemm_then_epilogue(facts: Facts, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The outermost GEMM op calls in the steps (aten::matmul, not the aten::mm inside it) whose next op on the
    same thread under the same parent is a bias add or an activation, and those next ops."""
    is_gemm = ops & name_mask(facts, GEMM_OPS)
    gemms = np.flatnonzero(is_gemm)
    gemms = gemms[nearest_in(facts, is_gemm, gemms, inclusive=False) < 0]
    if facts.steps:
        gemms = gemms[facts.event_step[gemms] >= 0]
    if gemms.size == 0:
        return gemms, gemms
    nxt = _next_sibling(facts, ops, gemms)
    keep = (nxt >= 0)
    keep[keep] = name_mask(facts, BIAS_OPS | ACTIVATION_OPS)[nxt[keep]]
    return gemms[keep], nxt[keep]


def _hits(facts: Facts, gemms: np.ndarray, nxt: np.ndarray) -> list[tuple]:
    """(GEMM op, epilogue op, the fusion that fits, the GEMM's longest kernel, the epilogue's device work) for the
    pairs an epilogue can take: both ran device work, the epilogue's on the GEMM's stream."""
    trace = facts.trace
    work = _work_under(facts, np.concatenate([gemms, nxt]))
    both = np.concatenate([gemms, nxt]).tolist()
    args = dict(zip(both, op_args(facts, both), strict=True))
    hits = []
    for g, e in zip(gemms.tolist(), nxt.tolist(), strict=True):
        match = _epilogue(trace.event_name(g), args.get(g), trace.event_name(e), args.get(e))
        g_work, e_work = work.get(g, []), work.get(e, [])
        if match is None or not g_work or not e_work:
            continue
        gemm_kernel = max(g_work, key=lambda k: int(trace.dur[k]))
        if all(_stream(trace, k) == _stream(trace, gemm_kernel) for k in e_work):
            hits.append((g, e, match, gemm_kernel, e_work))
    return hits


def _next_sibling(facts: Facts, ops: np.ndarray, of: np.ndarray) -> np.ndarray:
    """For the ops `of`: the next op of `ops` with the same parent on the same thread, by start time
    (-1: none). Only the ops under the same parents as `of` are sorted, by parent (one thread's, as
    the tree is per thread; roots by their thread) and time: two keys, where four (pid, tid, parent,
    ts) held ~50 MiB of a 1 GB trace's copies."""
    trace, parent = facts.trace, facts.parent
    wanted = np.zeros(len(trace) + 1, dtype=bool)  # by parent, shifted so a root's -1 is slot 0
    wanted[parent[of] + 1] = True
    idx = indices(ops)
    idx = idx[wanted[parent[idx] + 1]]
    del wanted
    if idx.size < 2:
        return np.full(len(of), -1, dtype=np.int64)
    group = parent[idx].astype(np.int64)
    roots = group < 0
    if roots.any():  # the ops at the top of the tree, one group per thread
        group[roots] = -1 - np.unique(trace.lane_keys(idx[roots]), return_inverse=True)[1].reshape(-1)
    order = np.lexsort((trace.ts[idx], group))
    group = group[order]
    same = group[1:] == group[:-1]
    del group
    following = np.full(idx.size, -1, dtype=INDEX)  # by position in idx (event order)
    following[order[:-1][same]] = idx[order[1:][same]]
    at = np.minimum(np.searchsorted(idx, of), idx.size - 1)
    return np.where(idx[at] == of, following[at], -1)


def _work_under(facts: Facts, ops: np.ndarray) -> dict[int, list[int]]:
    """Op -> the device work launched by it or by ops below it (in event order)."""
    mask = np.zeros(len(facts.trace), dtype=bool)
    mask[ops] = True
    work = np.flatnonzero(facts.is_device_work)
    source = np.where(facts.owner[work] >= 0, facts.owner[work], facts.launcher[work])
    work, source = work[source >= 0], source[source >= 0]
    above = nearest_in(facts, mask, source)
    work, above = work[above >= 0], above[above >= 0]
    if above.size == 0:
        return {}
    order = np.argsort(above, kind="stable")
    tops, starts = np.unique(above[order], return_index=True)
    parts = np.split(work[order], starts[1:])
    return dict(zip(tops.tolist(), (part.tolist() for part in parts), strict=True))


def _stream(trace, k: int) -> tuple[int, int]:
    return int(trace.pid[k]), int(trace.tid[k])


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def _epilogue(gemm: str, g: OpArgs | None, op: str, e: OpArgs | None) -> tuple[str, tuple[int, ...],
                                                                               tuple[int, ...] | None] | None:
    """(kind, output shape, bias shape) when op works on the GEMM's output, else None."""
    return None if g is None or e is None else _epilogue_of(gemm, g.dims_text, op, e.dims_text)


@functools.lru_cache(maxsize=MEMO_SIZE)
def _epilogue_of(gemm: str, gemm_dims: bytes, op: str, op_dims: bytes) -> tuple[str, tuple[int, ...],
                                                                               tuple[int, ...] | None] | None:
    """_epilogue on the ops' `Input Dims` texts: a trace repeats the same few pairs every step."""
    g_dims, e_dims = msgspec.json.decode(gemm_dims), msgspec.json.decode(op_dims)
    if not isinstance(e_dims, list) or not e_dims:
        return None
    mnk = gemm_mnk(gemm, g_dims)
    first = _shape(e_dims[0])
    if mnk is None or not first:
        return None
    batch, m, n, _ = mnk
    if math.prod(first) != batch * m * n or first[-1] != n:
        return None
    if op in ACTIVATION_OPS:
        return "activation", first, None
    if _has_bias(gemm, g_dims):
        return None  # the GEMM adds its own bias: this add is a residual, not a bias
    other = _shape(e_dims[1]) if len(e_dims) > 1 else None
    if not other or other[-1] != n or math.prod(other) != n:
        return None  # a scalar, or a full tensor (a residual: another activation, not a bias)
    return "bias", first, other


def _has_bias(gemm: str, dims: Any) -> bool:
    if gemm in BIASED_GEMMS:
        return True
    return gemm == "aten::linear" and isinstance(dims, list) and len(dims) > 2 and bool(_shape(dims[2]))


def _pairs(facts: Facts, hits: list, steps: int) -> tuple[EpiloguePair, ...]:
    trace = facts.trace
    groups: dict[tuple, list] = defaultdict(list)
    for g, e, (kind, out_shape, other), gk, ek in hits:
        p = int(facts.parent[g])
        parent = trace.event_name(p) if p >= 0 else ""
        groups[(trace.event_name(g), trace.event_name(e), kind, parent, out_shape, other)].append((gk, ek))
    out = []
    for (gemm, op, kind, parent, out_shape, other), items in groups.items():
        out.append(EpiloguePair(
            gemm=gemm, op=op, kind=kind, parent=parent, out_shape=out_shape, other_shape=other,
            calls_per_step=len(items) / steps,
            elementwise_us=us(sum(int(trace.dur[k]) for _, ek in items for k in ek)) / steps,
            gemm_us=us(sum(int(trace.dur[gk]) for gk, _ in items)) / steps))
    return tuple(sorted(out, key=lambda p: -p.elementwise_us))


def _evidence(facts: Facts, hits: list) -> list[Evidence]:
    trace = facts.trace
    out = []
    picks = sorted(hits, key=lambda h: -sum(int(trace.dur[k]) for k in h[4]))[:EVIDENCE_PAIRS]
    for g, e, (kind, _, _), gk, ek in sorted(picks, key=lambda h: int(trace.ts[h[0]])):
        out.append(Evidence.of(facts, g, GemmCall(us(trace.dur[gk]))))
        out.append(Evidence.of(facts, e, EpilogueCall(kind, trace.event_name(g), us(sum(int(trace.dur[k]) for k in ek)))))
    return out
