"""The padding rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
padding`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/padding.ftl."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from pista.findings import Context, Finding, Record, Severity
from pista.opargs import op_args
from pista.query import name_mask, nearest_in, pattern_mask
from pista.rules._common import COMPILED_CODE, OPTIMIZER_STEP, evidence, us
from pista.timeline import Edit
from pista.trace.facts import Facts, per_facts

ID = "padding"
# The padding must add at least this share of the padded length (l/L at most 0.9): a pad of a few tokens
# to a multiple of 8 is alignment, not waste.
MIN_PADDED_SHARE = 0.1
# Sequences shorter than this are not texts worth a finding (a pad of an image row, a small feature axis).
MIN_LENGTH = 64
MIN_STEP_SHARE = 0.02  # REVIEW.md: under a few percent is noise
# Rows padded one by one (F.pad per sample, then torch.stack) count as a batch from this many rows a step.
MIN_SAMPLES = 4
# Where the lengths are not in the trace, the saving is said for batches whose longest row is this share
# of the padded length (savings/h100/pad_loader_infer: 16-100 tokens padded to 256, a batch's longest
# ~0.39 of it; a stated condition, not a measurement).
ASSUMED_RATIO = 0.5
# Under torch.compile(dynamic=False) each new length is a new graph (savings/h100/recompile_shapes pads to
# 512 to stop recompiling): the fix there pads to a multiple of this many tokens, a few graphs in all.
COMPILED_PAD_MULTIPLE = 64
EVIDENCE_EVENTS = 3

PAD_OP = "aten::constant_pad_nd"
TOKEN_TYPES = ("long int", "int", "bool", "long", "unsigned char")
ATTENTION_OP = re.compile(r"attention|_masked_softmax|multi_head", re.I)
SCORE_MASK_OPS = frozenset({"aten::add", "aten::add_", "aten::masked_fill", "aten::masked_fill_", "aten::where"})
SDPA_MASK = {"aten::scaled_dot_product_attention": 3, "aten::_scaled_dot_product_efficient_attention": 3,
             "aten::_scaled_dot_product_cudnn_attention": 3, "aten::_scaled_dot_product_flash_attention_for_cpu": 6}


class Padding(Record):
    seen: bool  # the pad op is in the trace (else the batches arrive padded and attention masks them)
    compiled: bool  # the steps run compiled code: the fix pads to a multiple of COMPILED_PAD_MULTIPLE
    length: int  # L, the padded length
    longest: float  # l, the batch's longest row (mean over steps); 0 where not seen
    ratio: float  # l / L (ASSUMED_RATIO where not seen)
    batch: int
    steps: int
    kernels_us: float  # per step: the GPU time of the kernels that run on the sequence axis
    saved_gpu_us: float  # per step: what they lose at ratio


class PadCall(Record):
    """Note on the op that pads a batch."""

    rows: int
    longest: int
    padded_to: int


class MaskedAttention(Record):
    """Note on an attention call that takes a padding mask."""

    mask: tuple[int, ...]


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu or not facts.steps:
        return []
    pads = _pads(facts)
    if pads:
        return _seen(ctx, pads)
    return _likely(ctx)


def _pads(facts: Facts) -> dict[int, tuple[int, int, int, int]]:
    """Per step, how it pads its batch along the sequence axis: (op, batch, longest, padded length): its first
    pad of a whole batch, else its pads of one sample each to one length (F.pad per row, then a stack)."""
    idx = np.flatnonzero(name_mask(facts, frozenset({PAD_OP})) & (facts.event_step >= 0))
    whole: dict[int, tuple[int, int, int, int]] = {}
    rows: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (step, padded) -> (op, length) per sample
    for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True):
        found = None if a is None else _sequence_pad(a.dims, a.types, a.concrete)
        if found is None:
            continue
        step, (batch, longest, padded) = int(facts.event_step[i]), found
        if batch:
            whole.setdefault(step, (i, batch, longest, padded))
        else:
            rows.setdefault((step, padded), []).append((i, longest))
    for (step, padded), samples in sorted(rows.items(), key=lambda kv: -len(kv[1])):
        if step not in whole and len(samples) >= MIN_SAMPLES:
            longest = max(n for _, n in samples)
            if longest <= (1.0 - MIN_PADDED_SHARE) * padded:
                whole[step] = (samples[0][0], len(samples), longest, padded)
    return whole


def _sequence_pad(dims, types, concrete) -> tuple[int, int, int] | None:
    """(batch, longest, padded) where a pad widens a [B, l] token/mask tensor or a [B, l, d] one on axis 1;
    (0, l, padded) for one sample's [l] tokens."""
    read = _pad_call(dims, types, concrete)
    if read is None:
        return None
    shape, pad = read
    pad = pad + [0] * (2 * len(shape) - len(pad))
    widened = [pad[2 * k] + pad[2 * k + 1] for k in range(len(shape))]  # last axis first
    axis = max(len(shape) - 2, 0)  # the sequence axis (1 of a batch, 0 of a sample), this far from the last
    if any(w for k, w in enumerate(widened) if k != axis) or widened[axis] <= 0:
        return None
    batch, longest = (0, int(shape[0])) if len(shape) == 1 else (int(shape[0]), int(shape[1]))
    padded = longest + widened[axis]
    if padded < MIN_LENGTH or (batch and longest > (1.0 - MIN_PADDED_SHARE) * padded):
        return None
    return batch, longest, padded


def _pad_call(dims, types, concrete) -> tuple[list[int], list[int]] | None:
    """A pad's input shape and its pad widths, where the input is a [l], [B, l] token or mask tensor or any
    [B, l, d] one; None otherwise."""
    if not (isinstance(dims, list) and dims and isinstance(dims[0], list) and isinstance(concrete, list)
            and len(concrete) > 1 and isinstance(types, list) and types):
        return None
    shape, pad = dims[0], _ints(concrete[1])
    if pad is None or len(shape) not in (1, 2, 3) or not all(isinstance(d, int) for d in shape):
        return None
    if len(shape) < 3 and types[0] not in TOKEN_TYPES:
        return None
    return shape, pad


def _ints(text) -> list[int] | None:
    """'[0, 386]' (a ScalarList's concrete text) as [0, 386]."""
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return [int(x) for x in text.strip("[]").split(",") if x.strip()]
    except ValueError:
        return None


def _seen(ctx: Context, pads: dict[int, tuple[int, int, int, int]]) -> list[Finding]:
    facts = ctx.facts
    compiled = bool(pattern_mask(facts, COMPILED_CODE)[facts.event_step >= 0].any())
    ratios = {k: _target(longest, compiled) / padded for k, (_, _, longest, padded) in pads.items()}
    if min(ratios.values()) > 1.0 - MIN_PADDED_SHARE:
        return []
    batch = max(b for _, b, _, _ in pads.values())
    length = max(p for _, _, _, p in pads.values())
    work, scale = _sequence_work(facts, {k: (b, p) for k, (_, b, _, p) in pads.items()}, ratios)
    found = _finding(ctx, work, scale, Padding(seen=True, compiled=compiled, length=length, ratio=float(np.mean(list(ratios.values()))),
                                               longest=float(np.mean([lo for _, _, lo, _ in pads.values()])),
                                               batch=batch, steps=ctx.step_count, kernels_us=0.0, saved_gpu_us=0.0))
    if found is None:
        return []
    record, impact, edit = found
    ev = [evidence(facts, i, PadCall(b, lo, p)) for i, b, lo, p in list(pads.values())[:EVIDENCE_EVENTS]]
    return [Finding(ID, record, impact, ev, edit=edit)]


def _target(longest: int, compiled: bool) -> int:
    """The length a batch is padded to once fixed: its longest row; under torch.compile the next multiple of
    COMPILED_PAD_MULTIPLE (a few graphs, not one per length)."""
    if not compiled:
        return longest
    return -(-longest // COMPILED_PAD_MULTIPLE) * COMPILED_PAD_MULTIPLE


def _likely(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    masked = _masked_attention(facts)
    lengths = {L for _, _, L, _ in masked.values()}
    if len(masked) < 2 or len(masked) < len(facts.steps) or len(lengths) != 1:
        return []  # a length that moves from step to step is a batch padded to its longest row
    length = lengths.pop()
    if length < MIN_LENGTH:
        return []
    batch = max(b for _, b, _, _ in masked.values())
    ratios = dict.fromkeys(masked, ASSUMED_RATIO)
    work, scale = _sequence_work(facts, {k: (b, L) for k, (_, b, L, _) in masked.items()}, ratios)
    found = _finding(ctx, work, scale, Padding(seen=False, compiled=False, length=length, longest=0.0, ratio=ASSUMED_RATIO,
                                               batch=batch, steps=ctx.step_count, kernels_us=0.0, saved_gpu_us=0.0))
    if found is None:
        return []
    record, impact, edit = found
    ev = [evidence(facts, i, MaskedAttention(mask)) for i, _, _, mask in list(masked.values())[:EVIDENCE_EVENTS]]
    return [Finding(ID, record, impact, ev, severity=Severity.INFO, edit=edit)]


def _finding(ctx: Context, work: np.ndarray, scale: np.ndarray, record: Padding):
    """The record filled in, the impact (the kernels' time lost) and the edit; None under MIN_STEP_SHARE."""
    if work.size == 0:
        return None
    dur = ctx.facts.trace.dur[work].astype(np.float64)
    saved = float((dur * (1.0 - scale)).sum())
    impact = ctx.per_step(saved * ctx.busy_share)
    if impact.share < MIN_STEP_SHARE:
        return None
    steps = ctx.step_count
    filled = msgspec.structs.replace(record, kernels_us=us(dur.sum()) / steps, saved_gpu_us=us(saved) / steps)
    return filled, impact, Edit("batches padded to their longest row", device_dur=(work, dur * scale))


def _masked_attention(facts: Facts) -> dict[int, tuple[int, int, int, tuple[int, ...]]]:
    """Per step, its first attention call with a key padding mask: (op, batch, length, the mask's shape). SDPA
    takes the mask as an argument; attention written out adds it to, or fills, the scores [B, H, L, L]
    (Hugging Face's eager attention: scores + an additive [B, 1, 1, L])."""
    idx = np.flatnonzero(name_mask(facts, frozenset(SDPA_MASK) | SCORE_MASK_OPS) & (facts.event_step >= 0))
    out: dict[int, tuple[int, int, int, tuple[int, ...]]] = {}
    for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True):
        step = int(facts.event_step[i])
        if a is None or step in out or not isinstance(a.dims, list):
            continue
        pair = _query_and_mask(facts.trace.event_name(i), a.dims)
        if pair is not None and _key_padding(*pair):
            q, mask = pair
            if mask[2] == 1 or (step, int(q[0]), int(mask[-1])) in _expanded_key_masks(facts):
                out[step] = (i, int(q[0]), int(mask[-1]), tuple(int(d) for d in mask))
    return out


@per_facts
def _expanded_key_masks(facts: Facts) -> set[tuple[int, int, int]]:
    """(step, B, L) where a [B, 1, 1, L] key mask is expanded to [B, 1, L, L]: a full mask built from a padding
    mask. A causal mask alone is [B, 1, L, L] too (transformers' GPT-2 in eager mode, gpu/attn_hf_eager), built
    from an [L, L] triangle, with no [B, 1, 1, L] in it."""
    idx = np.flatnonzero(name_mask(facts, frozenset({"aten::expand"})) & (facts.event_step >= 0))
    out = set()
    for i, a in zip(idx.tolist(), op_args(facts, idx.tolist()), strict=True):
        dims = a.dims if a is not None else None
        if isinstance(dims, list) and dims and isinstance(dims[0], list) and len(dims[0]) == 4 \
                and dims[0][1] == dims[0][2] == 1 and all(isinstance(d, int) for d in dims[0]):
            out.add((int(facts.event_step[i]), int(dims[0][0]), int(dims[0][3])))
    return out


def _query_and_mask(name: str, dims: list) -> tuple[list, list] | None:
    """SDPA's query and mask; for an op on the scores, the scores (their first two dims and L, as a query's
    would be) and the other 4-D tensor."""
    if name in SDPA_MASK:
        return _sdpa_query_and_mask(dims, SDPA_MASK[name])
    tensors = [d for d in dims if isinstance(d, list)]
    scores = next((d for d in tensors if len(d) == 4 and d[-1] == d[-2]), None)
    mask = next((d for d in tensors if len(d) == 4 and d is not scores and d != scores), None)
    return None if scores is None or mask is None else (scores[:3] + [0], mask)


def _sdpa_query_and_mask(dims: list, pos: int) -> tuple[list, list] | None:
    """SDPA's query (its first input) and its mask (input `pos`), where both were recorded."""
    if len(dims) > pos and isinstance(dims[0], list) and isinstance(dims[pos], list):
        return dims[0], dims[pos]
    return None


def _key_padding(q: list, mask: list) -> bool:
    """Whether an SDPA mask masks keys per example: [B, 1 or H, 1, L] or [B, 1, L, L], B > 1 (a causal
    mask is [L, L] or [1, 1, L, L]; a model without padding passes none)."""
    if len(q) != 4 or len(mask) != 4 or not all(isinstance(d, int) for d in (*q, *mask)):
        return False
    batch, heads, length = q[0], q[1], q[2]
    return (batch > 1 and mask[0] == batch and mask[1] in (1, heads) and mask[3] == length
            and mask[2] in (1, length))


def _sequence_work(facts: Facts, shapes: dict[int, tuple[int, int]], ratios: dict[int, float]):
    """The device work of the padded steps that runs on the sequence axis, and each one's new share of its
    time: ratio for an op on [B, L, ...], B*L rows or [B, H, L, ...]; ratio^2 for attention."""
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    launch = facts.launcher[work]
    step = facts.event_step[launch]
    keep = np.isin(step, list(shapes)) & ~_in_optimizer(facts, launch)
    work, launch, step = work[keep], launch[keep], step[keep]
    ops = nearest_in(facts, facts.trace.category_mask({"cpu_op"}), launch, inclusive=False)
    has_op = ops >= 0
    work, step, ops = work[has_op], step[has_op], ops[has_op]
    power = _powers(facts, ops, step, shapes)
    on_axis = power > 0
    ratio = np.array([ratios[int(k)] for k in step[on_axis].tolist()], dtype=np.float64)
    return work[on_axis].astype(np.int64), ratio ** power[on_axis]


def _in_optimizer(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """Whether these events run inside Optimizer.step/zero_grad: parameters, not the sequence axis."""
    return nearest_in(facts, pattern_mask(facts, OPTIMIZER_STEP), idx) >= 0


def _powers(facts: Facts, ops: np.ndarray, step: np.ndarray, shapes: dict[int, tuple[int, int]]) -> np.ndarray:
    """Per launching op: 2 for attention, 1 for an op on the sequence axis, 0 otherwise (memoised by the
    op's recorded dims: a model's calls repeat a few shapes)."""
    memo: dict[tuple[bytes, int, int, bool], int] = {}
    out = np.zeros(ops.size, dtype=np.int64)
    names = facts.trace
    for p, (op, a) in enumerate(zip(ops.tolist(), op_args(facts, ops.tolist()), strict=True)):
        if a is None:
            continue
        batch, length = shapes[int(step[p])]
        attention = bool(ATTENTION_OP.search(names.event_name(op)))
        key = (a.dims_text, batch, length, attention)
        if key not in memo:
            memo[key] = _power(a.dims, batch, length, attention)
        out[p] = memo[key]
    return out


def _power(dims, batch: int, length: int, attention: bool) -> int:
    tensors = _int_tensors(dims)
    on_axis = any(_on_axis(d, batch, length) for d in tensors)
    quadratic = any(len(d) >= 2 and d[-1] == length and d[-2] == length for d in tensors)
    if not on_axis and not quadratic:
        return 0
    return 2 if attention or quadratic else 1


def _int_tensors(dims: Any) -> list[list[int]]:
    """The recorded Input Dims that are a tensor's shape, all ints."""
    if not isinstance(dims, list):
        return []
    return [d for d in dims if isinstance(d, list) and d and all(isinstance(x, int) for x in d)]


def _on_axis(d: list[int], batch: int, length: int) -> bool:
    """Whether a tensor runs along the sequence: batch and length side by side (either order: nn.
    MultiheadAttention works on [L, B, E]), B*L rows, or per head ([B, H, L, x], [B*H, L, x])."""
    pairs = zip(d, d[1:], strict=False)
    return (batch * length in d or any(p in ((batch, length), (length, batch)) for p in pairs)
            or (len(d) == 4 and d[0] == batch and d[2] == length)
            or (len(d) == 3 and d[1] == length and d[0] % batch == 0))
