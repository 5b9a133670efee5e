"""The unfused-elementwise rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
unfused-elementwise`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/unfused_elementwise.ftl."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

import msgspec
import numpy as np

from pista.efficiency import MEMO_SIZE, PRACTICAL_SHARE_HBM, card_of
from pista.findings import Context, Evidence, Finding, Record
from pista.opargs import op_args
from pista.purpose import CODE, classify
from pista.query import nearest_ancestor, pattern_mask
from pista.rules import _written_out
from pista.rules._attention import score_kernels
from pista.rules._common import COMPILED_REGION, device_ns_in_window, us
from pista.rules._gelu import chain_ops
from pista.rules._written_out import stream_work as _stream_work
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "unfused-elementwise"
COMPILED_KERNEL = re.compile(r"^triton_")
# At least this many kernels in a chain: two in a row already stream the tensor twice.
MIN_CHAIN = 2
# Each kernel of a chain moves its bytes at this share of the card's bandwidth ceiling or more:
# gpu/elementwise_chain's kernels run at 0.98-1.01 of the H200's measured 4.27 TB/s; a kernel far
# below it is latency- or launch-bound (launch_bound's 256-element ops), which fusion does not
# speed up by passes.
MIN_BANDWIDTH_SHARE = 0.6
# Below this share of the step the saving is noise (REVIEW.md).
MIN_IMPACT_SHARE = 0.01
EVIDENCE_CHAINS = 2
# Written-out code (pista.rules._written_out) is reported where its runs take this share of the GPU time:
# tl_h100_qwen05 38%, tl_mi300_qwen05 28%, savings elementwise_rmsnorm 43% (measured: torch.compile saved 40%
# of its step on an H100); the most among the savings suite's healthy pairs and the H200 fixtures is 6.3%
# (gpu/gpt2_conv1d, around its GELU), then layout_mb_cl_bf16's 3.7%.
MIN_RUNS_GPU_SHARE = 0.10
EVIDENCE_RUN_KERNELS = 16
# The backward of GELU's tanh formula: its pow and tanh nodes (a tanh or cube elsewhere in a model is rare).
GELU_BACKWARD = re.compile(r"^autograd::engine::evaluate_function: (Tanh|Pow)Backward0")
# ... named in the advice where it is at least this share of the chains' time (gpu/gpt2_conv1d: 52%)
GELU_SHARE = 20.0
# Element sizes of the dtypes `Input type` names.
ITEM_BYTES = {"float": 4, "double": 8, "c10::BFloat16": 2, "c10::Half": 2, "int": 4, "long int": 8, "bool": 1,
              "signed char": 1, "unsigned char": 1, "short int": 2, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}


class Chain(Record):
    """One chain occurrence's ops and costs, summed over the window for chains of the same ops."""

    ops: tuple[str, ...]  # launching ops, in order: aten::mul, aten::add, aten::clamp_min, ...
    shape: tuple[int, ...]
    dtype: str
    count: int  # occurrences in the window
    us: float  # per step, all kernels of the chain
    tbps: float  # bytes moved / time over the chain's kernels
    saving_us: float  # per step: (N-1)/N of us


class UnfusedElementwise(Record):
    steps: int
    chains: tuple[Chain, ...]  # most saving first
    kernels_per_step: float
    chain_us: float  # per step
    saving_us: float  # per step
    ceiling_tbps: float
    ceiling_source: str  # "measured" | "datasheet" | "trace"
    card: str
    gpu_share_percent: float  # chain time of the device time
    step_share_percent: float
    tanh_gelu_percent: float  # of the chains' time, the kernels of GELU's tanh formula written out (tanh-gelu)


class ChainKernel(Record):
    """Note on one kernel of a chain."""

    op: str
    position: int  # 1-based, in its chain
    length: int
    tbps: float


class Run(Record):
    """Runs of elementwise code written out op by op in one place, summed over the window."""

    idiom: str  # rmsnorm | layernorm | rotary | gate | other (pista.rules._written_out.idiom)
    ops: tuple[str, ...]  # the launching ops of its most frequent form, in order
    module: str  # innermost nn.Module class ("" without stacks)
    frame: str  # innermost user frame, "file.py(line): function" ("" without stacks)
    count: int  # occurrences in the window
    us: float  # per step, all its kernels
    fused_us: float  # per step, each occurrence as one fused pass


class WrittenOut(Record):
    """The finding where elementwise code written out op by op takes MIN_RUNS_GPU_SHARE of the GPU time."""

    steps: int
    runs: tuple[Run, ...]  # most saving first
    kernels_per_step: float
    runs_us: float  # per step
    fused_us: float  # per step
    chains: tuple[Chain, ...]  # same-shape chains outside the runs, most saving first
    saving_us: float  # per step: the runs' and the chains'
    eager_us: float  # per step: every eager elementwise, reduction and cast kernel
    eager_percent: float  # of the device time
    gpu_share_percent: float  # the runs' kernels, of the device time
    step_share_percent: float
    ceiling_tbps: float
    ceiling_source: str  # "measured" | "datasheet" | "trace"
    card: str


class RunKernel(Record):
    """Note on one kernel of a run written out op by op."""

    op: str
    position: int  # 1-based, in its run
    length: int
    idiom: str


class _Kernel(Record):
    index: int
    op: int
    numel: int
    shape: tuple[int, ...]
    dtype: str
    bytes: int


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    chains, ceiling = _fast_chains(facts)
    runs = _written_runs(facts, chains)
    if runs:
        return _written_finding(ctx, runs, chains, ceiling or _run_ceiling(facts, runs))
    if not chains or ceiling is None:
        return []
    tbps, source, card = ceiling
    trace = facts.trace
    steps = ctx.step_count
    chain_ns, saving_ns = _chain_ns(facts, chains)
    impact = ctx.per_step(saving_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return []
    device_ns = device_ns_in_window(facts)
    record = UnfusedElementwise(
        steps=steps, chains=_summaries(facts, chains, steps), kernels_per_step=sum(len(ch) for ch in chains) / steps,
        chain_us=us(chain_ns) / steps, saving_us=us(saving_ns) / steps, ceiling_tbps=tbps, ceiling_source=source,
        card=card, gpu_share_percent=100.0 * chain_ns / device_ns, step_share_percent=100.0 * impact.share,
        tanh_gelu_percent=100.0 * _gelu_ns(facts, chains) / chain_ns)
    # fused, each chain makes one pass: its longest kernel stays, the others go (their ops' dispatch is left to
    # the symptoms: torch.compile removes it too, a hand-written fused op may not)
    gone = [c.index for ch in chains for c in sorted(ch, key=lambda c: -int(trace.dur[c.index]))[1:]]
    return [Finding(ID, record, impact, _evidence(facts, chains), edit=Edit("fused chains", remove=np.asarray(gone, np.int64)))]


def _chain_ns(facts: Facts, chains: list[list[_Kernel]]) -> tuple[float, float]:
    """The chains' kernel time, and what fusing saves: a chain of n kernels fused makes one pass of the n."""
    trace = facts.trace
    per_chain = [(sum(int(trace.dur[c.index]) for c in ch), len(ch)) for ch in chains]
    return float(sum(ns for ns, _ in per_chain)), float(sum(ns * (n - 1) / n for ns, n in per_chain))


def _fast_chains(facts: Facts) -> tuple[list[list[_Kernel]], tuple[float, str, str] | None]:
    """The same-shape chains of kernels near the bandwidth, and the bandwidth ceiling (None without
    candidates)."""
    trace = facts.trace
    # with a known card the ceiling is the card's: only kernels that could chain need their bytes
    candidates = _candidates(facts, paired_only=card_of(trace) is not None)
    if not candidates:
        return [], None
    ceiling = _ceiling(facts, candidates)
    floor = MIN_BANDWIDTH_SHARE * ceiling[0] * 1e3  # bytes per ns
    fast = {k: c for k, c in candidates.items() if c.bytes / max(int(trace.dur[k]), 1) >= floor}
    # a written-out attention's passes over its scores are manual-attention's (the fused kernel is the fix)
    scores = set(score_kernels(facts).tolist())
    chains = [ch for ch in _chains(facts, fast) if len(ch) >= MIN_CHAIN and not any(c.index in scores for c in ch)]
    return chains, ceiling


def _gelu_ns(facts: Facts, chains: list[list[_Kernel]]) -> float:
    """The chains' kernel time launched by the ops of a tanh-GELU written out, forward, or by their
    autograd nodes' backward (gpu/gpt2_conv1d: transformers' gelu_new in fp32)."""
    trace = facts.trace
    gelu = _gelu_ops(facts)
    return float(sum(int(trace.dur[c.index]) for ch in chains for c in ch if c.op >= 0 and gelu[c.op]))


def _gelu_ops(facts: Facts) -> np.ndarray:
    """Mask: the ops of a tanh-GELU written out, and the ops under its autograd nodes (tanh-gelu's)."""
    gelu = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, GELU_BACKWARD)) >= 0
    gelu[chain_ops(facts)] = True
    return gelu


def _candidates(facts: Facts, paired_only: bool) -> dict[int, _Kernel]:
    """Elementwise kernels launched by an eager op with a recorded first tensor: their bytes. With
    `paired_only`, only those next to another such kernel on their stream in the same step (the
    others cannot chain; reading their ops' args is most of this rule's time)."""
    codes = classify(facts)
    idx = np.flatnonzero((codes == CODE["elementwise"]) & ~pattern_mask(facts, COMPILED_KERNEL)
                         & (facts.owner >= 0))
    if facts.steps:
        idx = idx[facts.event_step[idx] >= 0]
    if idx.size == 0:
        return {}
    compiled = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, COMPILED_REGION))
    idx = idx[compiled[facts.owner[idx]] < 0]
    if paired_only:
        idx = idx[_paired(facts, idx)]
    ops = facts.owner[idx]
    out = {}
    for k, op, a in zip(idx.tolist(), ops.tolist(), op_args(facts, ops.tolist()), strict=True):
        size = None if a is None else _size_of(a.dims_text, a.types_text)
        if size is not None:
            out[k] = _Kernel(k, op, *size)
    return out


def _paired(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """Mask over idx: the kernels whose previous or next device work on their stream is also in idx,
    in the same step (what _chains asks of neighbours, short of their sizes)."""
    chosen = np.zeros(len(facts.trace), dtype=bool)
    chosen[idx] = True
    paired = np.zeros(len(facts.trace), dtype=bool)
    for work in _stream_work(facts):
        before, after = work[:-1], work[1:]
        pair = chosen[before] & chosen[after] & (facts.event_step[before] == facts.event_step[after])
        paired[before[pair]] = True
        paired[after[pair]] = True
    return paired[idx]


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


@functools.lru_cache(maxsize=MEMO_SIZE)
def _size_of(dims_text: bytes, types_text: bytes) -> tuple[int, tuple[int, ...], str, int] | None:
    """(numel, shape, dtype, bytes) of an op from its `Input Dims` and `Input type` JSON texts,
    once per distinct pair; None without a first tensor of a known dtype."""
    dims, types = msgspec.json.decode(dims_text), msgspec.json.decode(types_text)
    if not isinstance(dims, list) or not isinstance(types, list) or not dims:
        return None
    shape = _shape(dims[0])
    dtype = types[0] if types and isinstance(types[0], str) else ""
    if shape is None or dtype not in ITEM_BYTES:
        return None
    numel = math.prod(shape)
    full = sum(1 for d in dims if _shape(d) is not None and math.prod(_shape(d) or ()) == numel)
    return numel, shape, dtype, numel * ITEM_BYTES[dtype] * (full + 1)


def _ceiling(facts: Facts, candidates: dict[int, _Kernel]) -> tuple[float, str, str]:
    """The bandwidth (TB/s) a streaming kernel reaches on this card: measured, else the datasheet
    times the share the H200 reached of its own, else the best one in this trace."""
    card = card_of(facts.trace)
    if card is not None and "hbm" in card.measured:
        return float(card.measured["hbm"]), "measured", card.name
    if card is not None:
        return card.hbm_tbps * PRACTICAL_SHARE_HBM, "datasheet", card.name
    trace = facts.trace
    best = max(c.bytes / max(int(trace.dur[k]), 1) for k, c in candidates.items()) / 1e3
    return best, "trace", ""


def _chains(facts: Facts, fast: dict[int, _Kernel]) -> list[list[_Kernel]]:
    """Runs of consecutive device work on one stream, all in `fast`, same numel, same step."""
    out: list[list[_Kernel]] = []
    if not fast:
        return out
    # per fast kernel, an id for its (numel, step): neighbours with the same id chain
    ids: dict[tuple[int, int], int] = {}
    steps = facts.event_step
    kernels = np.fromiter(fast, dtype=np.int64, count=len(fast))
    same = np.fromiter((ids.setdefault((c.numel, int(steps[k])), len(ids)) for k, c in fast.items()),
                       dtype=np.int64, count=len(fast))
    order = np.argsort(kernels)
    kernels, same = kernels[order], same[order]
    for work in _stream_work(facts):
        at = np.minimum(np.searchsorted(kernels, work), kernels.size - 1)
        key = np.where(kernels[at] == work, same[at], -1)  # -1: not a fast kernel
        link = (key[1:] >= 0) & (key[1:] == key[:-1])  # work i and i + 1 chain
        firsts = np.flatnonzero(link & ~np.concatenate(([False], link[:-1])))
        lasts = np.flatnonzero(link & ~np.concatenate((link[1:], [False])))
        for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
            out.append([fast[k] for k in work[first:last + 2].tolist()])
    return out


def _op_name(facts: Facts, c: _Kernel) -> str:
    return facts.trace.event_name(c.op)


def _summaries(facts: Facts, chains: list[list[_Kernel]], steps: int) -> tuple[Chain, ...]:
    trace = facts.trace
    groups: dict[tuple, list[list[_Kernel]]] = {}
    for ch in chains:
        key = (tuple(_op_name(facts, c) for c in ch), ch[0].shape, ch[0].dtype)
        groups.setdefault(key, []).append(ch)
    out = []
    for (ops, shape, dtype), items in groups.items():
        ns = sum(int(trace.dur[c.index]) for ch in items for c in ch)
        moved = sum(c.bytes for ch in items for c in ch)
        saving = sum(sum(int(trace.dur[c.index]) for c in ch) * (len(ch) - 1) / len(ch) for ch in items)
        out.append(Chain(ops, shape, dtype, len(items), us(ns) / steps, moved / max(ns, 1) / 1e3, us(saving) / steps))
    return tuple(sorted(out, key=lambda c: -c.saving_us))


def _evidence(facts: Facts, chains: list[list[_Kernel]]) -> list[Evidence]:
    trace = facts.trace
    picks = sorted(chains, key=lambda ch: -sum(int(trace.dur[c.index]) for c in ch))[:EVIDENCE_CHAINS]
    out = []
    for ch in sorted(picks, key=lambda ch: int(trace.ts[ch[0].index])):
        for n, c in enumerate(ch, 1):
            rate = c.bytes / max(int(trace.dur[c.index]), 1) / 1e3
            out.append(Evidence.of(facts, c.index, ChainKernel(_op_name(facts, c), n, len(ch), rate)))
    return out


# -- elementwise code written out op by op (pista.rules._written_out) --------------------------------------


def _written_runs(facts: Facts, chains: list[list[_Kernel]]) -> list[np.ndarray]:
    """The runs of written-out code, where together they take MIN_RUNS_GPU_SHARE of the GPU time; a run
    whose kernels are all one same-shape chain's stays the chain's (gpu/elementwise_chain)."""
    trace = facts.trace
    gelu = _gelu_ops(facts)
    work = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    # GELU's formula is tanh-gelu's, the attention's score passes manual-attention's: their fixes are one op
    excluded = np.concatenate((score_kernels(facts), work[gelu[facts.owner[work]]])).astype(np.int64)
    found = _written_out.runs(facts, _written_out.eligible(facts, excluded))
    in_chains = {c.index for ch in chains for c in ch}
    found = [r for r in found if not in_chains.issuperset(r.tolist())]
    if not found or sum(int(trace.dur[r].sum()) for r in found) < MIN_RUNS_GPU_SHARE * device_ns_in_window(facts):
        return []
    return found


def _run_ceiling(facts: Facts, runs: list[np.ndarray]) -> tuple[float, str, str]:
    """The ceiling where no same-shape chain candidate gave one: the card's, else the runs' best kernel."""
    card = card_of(facts.trace)
    if card is not None:
        return (float(card.measured["hbm"]), "measured", card.name) if "hbm" in card.measured else \
            (card.hbm_tbps * PRACTICAL_SHARE_HBM, "datasheet", card.name)
    trace = facts.trace
    kernels = np.concatenate(runs)
    moved = _op_bytes(facts, facts.owner[kernels])
    best = max((b / max(int(trace.dur[k]), 1) for k, b in zip(kernels.tolist(), moved, strict=True)), default=0.0)
    return (best / 1e3 if best > 0 else 1.0), "trace", ""


def _op_bytes(facts: Facts, ops: np.ndarray) -> list[int]:
    """Per op, the bytes of its largest tensor input (0 without recorded shapes)."""
    return [0 if a is None else _largest_bytes(a.dims_text, a.types_text) for a in op_args(facts, ops.tolist())]


@functools.lru_cache(maxsize=MEMO_SIZE)
def _largest_bytes(dims_text: bytes, types_text: bytes) -> int:
    dims, types = msgspec.json.decode(dims_text), msgspec.json.decode(types_text)
    if not isinstance(dims, list) or not isinstance(types, list):
        return 0
    sizes = [math.prod(shape) * ITEM_BYTES[dtype] for d, dtype in zip(dims, types, strict=False)
             if (shape := _shape(d)) is not None and isinstance(dtype, str) and dtype in ITEM_BYTES]
    return max(sizes, default=0)


def _fused_ns(facts: Facts, run: np.ndarray, bytes_per_ns: float) -> float:
    """One fused pass over the run's tensors: one read and one write of its largest tensor at the
    bandwidth ceiling, and no shorter than its longest kernel (a pass it makes already); at most the run."""
    dur = facts.trace.dur[run]
    largest = max(_op_bytes(facts, facts.owner[run]), default=0)
    return float(min(int(dur.sum()), max(int(dur.max()), 2.0 * largest / bytes_per_ns)))


def _written_finding(ctx: Context, runs: list[np.ndarray], chains: list[list[_Kernel]],
                     ceiling: tuple[float, str, str]) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    steps = ctx.step_count
    fused = [_fused_ns(facts, r, ceiling[0] * 1e3) for r in runs]
    in_runs = set(np.concatenate(runs).tolist())
    chains = [ch for ch in chains if not any(c.index in in_runs for c in ch)]
    runs_ns = float(sum(int(trace.dur[r].sum()) for r in runs))
    chain_saving = float(sum(sum(int(trace.dur[c.index]) for c in ch) * (len(ch) - 1) / len(ch) for ch in chains))
    saving_ns = runs_ns - sum(fused) + chain_saving
    impact = ctx.per_step(saving_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return []
    device_ns = device_ns_in_window(facts)
    eager_ns = _eager_ns(facts)
    record = WrittenOut(
        steps=steps, runs=_run_summaries(facts, runs, fused, steps),
        kernels_per_step=sum(r.size for r in runs) / steps, runs_us=us(runs_ns) / steps, fused_us=us(sum(fused)) / steps,
        chains=_summaries(facts, chains, steps), saving_us=us(saving_ns) / steps, eager_us=us(eager_ns) / steps,
        eager_percent=100.0 * eager_ns / device_ns, gpu_share_percent=100.0 * runs_ns / device_ns,
        step_share_percent=100.0 * impact.share, ceiling_tbps=ceiling[0], ceiling_source=ceiling[1], card=ceiling[2])
    # fused, each run is one pass: its kernels shrink together to that pass's time (not to nothing); each
    # chain keeps its longest kernel
    kernels = np.concatenate(runs)
    shrunk = np.concatenate([np.rint(trace.dur[r] * (f / max(int(trace.dur[r].sum()), 1)))
                             for r, f in zip(runs, fused, strict=True)])
    gone = [c.index for ch in chains for c in sorted(ch, key=lambda c: -int(trace.dur[c.index]))[1:]]
    edit = Edit("fused elementwise code", remove=np.asarray(gone, np.int64),
                device_dur=(kernels.astype(np.int64), shrunk.astype(trace.dur.dtype)))
    return [Finding(ID, record, impact, _run_evidence(facts, runs), edit=edit)]


def _eager_ns(facts: Facts) -> float:
    """Every elementwise, reduction and cast kernel in the window not made by a compiler."""
    trace = facts.trace
    lo, hi = facts.window
    codes = classify(facts)
    work = facts.is_device_work & (trace.ts >= lo) & (trace.ts < hi) & np.isin(codes, [CODE[p] for p in _written_out.PURPOSES])
    work &= ~pattern_mask(facts, _written_out.FUSED_KERNEL)
    return float(trace.dur[work].sum())


def _run_summaries(facts: Facts, runs: list[np.ndarray], fused: list[float], steps: int) -> tuple[Run, ...]:
    """The runs grouped by what they compute and where: most saving first."""
    trace = facts.trace
    groups: dict[tuple[str, str, str], list[tuple[tuple[str, ...], float, float]]] = {}
    for r, f in zip(runs, fused, strict=True):
        ops = _written_out.op_names(facts, r)
        key = (_written_out.idiom(ops), *_written_out.location(facts, r))
        groups.setdefault(key, []).append((ops, float(trace.dur[r].sum()), f))
    out = []
    for (idiom, module, frame), items in groups.items():
        ops = Counter(o for o, _, _ in items).most_common(1)[0][0]
        out.append(Run(idiom, ops, module, frame, len(items), us(sum(n for _, n, _ in items)) / steps,
                       us(sum(f for _, _, f in items)) / steps))
    return tuple(sorted(out, key=lambda r: r.fused_us - r.us))


def _run_evidence(facts: Facts, runs: list[np.ndarray]) -> list[Evidence]:
    """The kernels of the longest run."""
    trace = facts.trace
    run = max(runs, key=lambda r: int(trace.dur[r].sum()))
    kind = _written_out.idiom(_written_out.op_names(facts, run))
    shown = run[:EVIDENCE_RUN_KERNELS]
    return [Evidence.of(facts, int(k), RunKernel(trace.event_name(int(facts.owner[k])), n, int(run.size), kind))
            for n, k in enumerate(shown.tolist(), 1)]
