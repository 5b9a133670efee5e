"""What:
Chains of memory-bound elementwise kernels over tensors of the same size: consecutive kernels on
one stream (purpose "elementwise", nothing else between them) whose launching ops take a first
tensor of the same shape (`Input Dims`), each moving its bytes near the card's bandwidth (bytes =
the full-size tensor inputs plus the output, at the dtype of `Input type`). Kernels already made
by a compiler (Triton `triton_*`) are left out.

Why:
An elementwise kernel on a large tensor does almost no arithmetic: its time is one read and one
write of the tensor at the memory bandwidth. N such ops in a row stream the data N times where one
fused kernel (torch.compile) streams it once.

Example:
gpu/elementwise_chain on an H200: six eager ops (mul, add, relu, mul, sigmoid, sub) on a 64 Mi
fp32 tensor, 126-187 µs each at 4.1-4.3 TB/s (the card's measured 4.27), 825 µs per step.
gpu/elementwise_compiled runs the same chain under torch.compile as one
`triton_poi_fused_add_mul_relu_sigmoid_sub_0` kernel of 127 µs.

Impact:
Per step: (N-1)/N of each chain's time, the passes fusion saves, an upper bound (the fused kernel
still reads every distinct input once). gpu/elementwise_chain 687 µs (77.9% of the step, which
lasts its GPU work); gpu/resnet50_bf16's residual add + ReLU pairs (forward) and add_ +
threshold_backward pairs (backward) 1.78 ms (5.5%). New in issue 15.

Fix:
`torch.compile` the function (or the module) that holds the chain; by hand, fold scalar ops
into one (`torch.addcmul`, in-place ops do not help: they still make a pass each) or write one
kernel (Triton).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np

from pista.efficiency import MEMO_SIZE, PRACTICAL_SHARE_HBM, card_of
from pista.findings import Context, Evidence, Finding, Record
from pista.opargs import op_args
from pista.purpose import CODE, classify
from pista.rules._attention import score_kernels
from pista.rules._common import COMPILED_REGION, device_ns_in_window, nearest_ancestor, pattern_mask, us
from pista.rules._gelu import chain_ops
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
    trace = facts.trace
    # with a known card the ceiling is the card's: only kernels that could chain need their bytes
    candidates = _candidates(facts, paired_only=card_of(trace) is not None)
    if not candidates:
        return []
    ceiling, source, card = _ceiling(facts, candidates)
    floor = MIN_BANDWIDTH_SHARE * ceiling * 1e3  # bytes per ns
    fast = {k: c for k, c in candidates.items() if c.bytes / max(int(trace.dur[k]), 1) >= floor}
    # a written-out attention's passes over its scores are manual-attention's (the fused kernel is the fix)
    scores = set(score_kernels(facts).tolist())
    chains = [ch for ch in _chains(facts, fast) if len(ch) >= MIN_CHAIN and not any(c.index in scores for c in ch)]
    if not chains:
        return []
    steps = ctx.step_count
    chain_ns = float(sum(int(trace.dur[c.index]) for ch in chains for c in ch))
    saving_ns = float(sum(sum(int(trace.dur[c.index]) for c in ch) * (len(ch) - 1) / len(ch) for ch in chains))
    impact = ctx.per_step(saving_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return []
    device_ns = device_ns_in_window(facts)
    record = UnfusedElementwise(
        steps=steps, chains=_summaries(facts, chains, steps), kernels_per_step=sum(len(ch) for ch in chains) / steps,
        chain_us=us(chain_ns) / steps, saving_us=us(saving_ns) / steps, ceiling_tbps=ceiling, ceiling_source=source,
        card=card, gpu_share_percent=100.0 * chain_ns / device_ns, step_share_percent=100.0 * impact.share,
        tanh_gelu_percent=100.0 * _gelu_ns(facts, chains) / chain_ns)
    # fused, each chain makes one pass: its longest kernel stays, the others go (their ops' dispatch is left to
    # the symptoms: torch.compile removes it too, a hand-written fused op may not)
    gone = [c.index for ch in chains for c in sorted(ch, key=lambda c: -int(trace.dur[c.index]))[1:]]
    return [Finding(ID, record, impact, _evidence(facts, chains), edit=Edit("fused chains", remove=np.asarray(gone, np.int64)))]


def _gelu_ns(facts: Facts, chains: list[list[_Kernel]]) -> float:
    """The chains' kernel time launched by the ops of a tanh-GELU written out, forward, or by their
    autograd nodes' backward (gpu/gpt2_conv1d: transformers' gelu_new in fp32)."""
    trace = facts.trace
    gelu = np.zeros(len(trace), dtype=bool)
    gelu[chain_ops(facts)] = True
    in_backward = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, GELU_BACKWARD)) >= 0
    return float(sum(int(trace.dur[c.index]) for ch in chains for c in ch
                     if c.op >= 0 and (gelu[c.op] or in_backward[c.op])))


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


def _stream_work(facts: Facts) -> Iterator[np.ndarray]:
    """Per GPU stream, its device work in start order: the device work of facts.lanes' "gpu" lanes,
    sorted alone (the lanes sort every event: 22 MiB kept on a 1 GB trace, for this rule only)."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    work = work[np.lexsort((trace.ts[work], trace.tid[work], trace.pid[work]))]
    pid, tid = trace.pid[work], trace.tid[work]
    bounds = np.flatnonzero((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])) + 1
    overhead = np.flatnonzero(facts.is_overhead)  # a lane with any is the overhead lane
    not_gpu = set(zip(trace.pid[overhead].tolist(), trace.tid[overhead].tolist(), strict=True))
    for chunk in np.split(work, bounds) if work.size else []:
        lane = (int(trace.pid[chunk[0]]), int(trace.tid[chunk[0]]))
        if lane[0] != -1 and lane not in not_gpu:
            yield chunk


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
