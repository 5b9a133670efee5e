"""The python-loop rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
python-loop`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/python_loop.ftl."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pista.findings import Context, Finding, Record
from pista.opargs import op_args
from pista.query import DTOH_COPY, nearest_in, pattern_mask
from pista.rules._common import (
    OPTIMIZER_STEP,
    backward_nodes,
    data_region_mask,
    evidence,
    index_mask,
    outer_ops,
    us,
)
from pista.timeline import Edit
from pista.trace.facts import Facts, merge_intervals
from pista.trace.model import Trace

ID = "python-loop"
# At least this many passes in a row: savings/h100/loop_per_sample_loss has 32 (a batch), loop_ensemble 16
# (models); a 4-layer GPT's blocks repeat 4 times and are not a loop (they start with no index anyway).
MIN_PASSES = 8
# Per model, with shapes recorded, every pass starting from one input and the results gathered or summed:
# this many passes are enough (loop_ensemble_cnn: 5 members; deep ensembles of 3-10 are common).
MIN_MODEL_PASSES = 3
# Blocks of up to this many top-level ops are looked for (loop_per_sample_loss: 6, loop_ensemble: 5,
# loop_ensemble_cnn: 12; a ResNet-18 member is ~60).
MAX_BLOCK = 160
# A pass starts with one of these (x[i], x[i:i+1], narrow, or iterating over a tensor): a loop per sample.
INDEXING = frozenset({"aten::select", "aten::slice", "aten::narrow"})
# Iterating over a tensor (`for row in x`, `zip(x, y)`) unbinds it once, right before the first pass.
ITERATING = frozenset({"aten::unbind"})
# A loop right after one of these runs on the pieces of one tensor: where its results are gathered, one call on
# the whole tensor (the pieces a leading dimension) does it, not a vmap over models (review 6: gp_fusion_mwe's
# torch.split into 16 features, LayerNorm and tanh on each, stacked: told "vmap the models" for a model-less loop).
SPLITTING = frozenset({"aten::split", "aten::split_with_sizes", "aten::chunk", "aten::tensor_split"})
# The passes' results gathered by one of these right after the loop: a loop per model.
GATHER = frozenset({"aten::stack", "aten::cat"})
# ...or each pass ends adding its result to a running sum (Python's sum(), `loss = loss + ...`).
SUM = frozenset({"aten::add", "aten::add_"})
# A member model computes: a pass of fewer than MIN_PASSES counts only where it runs one of these (a
# hand-written optimizer's per-layer mul_/add_ in savings/h100/optim_manual_sgd, GPT-2's q/k/v view and
# transpose before a cat in gpu/kv_flash, are not models).
MODEL_OPS = frozenset({"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
                       "aten::matmul", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::einsum",
                       "aten::lstm", "aten::gru", "aten::scaled_dot_product_attention"})
# A pass of a loop per model runs at least this many ops (resnet_loader's collate: one aten::lift_fresh per
# sample, then aten::stack, is a loader's work, not a model's).
MIN_MODEL_OPS = 2
# What a tiny kernel costs whatever its size (ns): a batched kernel saves this per pass it absorbs
# (savings/h100/loop_per_sample_loss: the median kernel of the loop runs 1.4 µs; H100 launches 1-2.5 µs).
KERNEL_FLOOR_NS = 1_500
# Under this share of the step a loop is not worth a finding (REVIEW.md: ~1%).
MIN_STEP_SHARE = 0.01
EVIDENCE_PASSES = 2


class PythonLoop(Record):
    kind: str  # "sample", "model" or "slices" (the pieces of one split tensor)
    block: tuple[str, ...]  # the ops of one pass, in order
    passes: int  # in a row, in the first loop found
    loops: int  # loops found in the window (one per step, usually)
    steps: int
    host_us: float  # the loops' host time per step, first pass to last
    source: str  # the Python frame the loop runs in, where the trace has stacks ("" if none)
    reads_back: bool = False  # a pass copies a value to the host (a DtoH copy under its ops: `.cpu()`, `.item()`)


class Pass(Record):
    """Note on one pass of the loop."""

    index: int
    ops: int


@dataclass(frozen=True)
class _Loop:
    kind: str
    start: int  # position of the first pass in the lane's outer ops
    period: int  # the first pass's ops
    passes: int
    stop: int = -1  # where the last pass ends, for passes of different lengths (-1: start + period * passes)
    starts: tuple[int, ...] = ()  # where each pass starts, likewise

    @property
    def end(self) -> int:
        return self.stop if self.stop >= 0 else self.start + self.period * self.passes

    def pass_start(self, k: int) -> int:
        return self.starts[k] if self.starts else self.start + k * self.period


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    outer, lane = outer_ops(facts)
    if outer.size < MIN_PASSES * 2:
        return []
    loops = [(bounds, loop) for bounds, loop in _loops(facts, outer, lane)]
    if not loops:
        return []
    trace = facts.trace
    spans, first, rest = [], [], []
    for (lo, _), loop in loops:
        ops = outer[lo + loop.start: lo + loop.end]
        first.append(ops[:loop.period])
        rest.append(ops[loop.period:])
        spans.append((int(trace.ts[ops[loop.period]]), int((trace.ts[ops] + trace.dur[ops]).max())))
    host = float(sum(b - a for a, b in spans))
    impact = ctx.per_step(host)
    if impact.share < MIN_STEP_SHARE:
        return []
    (lo, _), top = max(loops, key=lambda x: x[1].end - x[1].start)
    block = outer[lo + top.start: lo + top.start + top.period]
    record = PythonLoop(kind=top.kind, block=tuple(trace.event_name(i) for i in block), passes=top.passes,
                        loops=len(loops), steps=ctx.step_count, host_us=us(host) / ctx.step_count,
                        source=_source(facts, int(block[0])), reads_back=_reads_back(facts, block))
    ev = [evidence(facts, int(outer[lo + top.pass_start(k)]), Pass(k + 1, top.period))
          for k in range(EVIDENCE_PASSES)]
    return [Finding(ID, record, impact, ev, edit=_edit(facts, first, rest, spans))]


def _reads_back(facts: Facts, block: np.ndarray) -> bool:
    """Whether one of the pass's ops launched a device-to-host copy (the pass reads a value to the host)."""
    copies = np.flatnonzero(facts.is_device_work & pattern_mask(facts, DTOH_COPY) & (facts.launcher >= 0))
    if copies.size == 0:
        return False
    under = nearest_in(facts, index_mask(facts, block), facts.launcher[copies].astype(np.int64))
    return bool((under >= 0).any())


def _loops(facts: Facts, outer: np.ndarray, lane: np.ndarray):
    """Per step and host thread, the loops its top-level ops hold: (the slice of `outer` searched, the loop)."""
    steps = facts.event_step[outer]
    owned = _owned_elsewhere(facts, outer)
    key = lane.astype(np.int64) * (1 << 20) + steps.astype(np.int64)
    cut = np.flatnonzero(np.diff(key)) + 1
    bounds = zip(np.concatenate(([0], cut)).tolist(), np.concatenate((cut, [outer.size])).tolist(), strict=True)
    for lo, hi in bounds:
        if hi - lo < MIN_PASSES * 2 or (facts.steps and steps[lo] < 0):
            continue
        names = facts.trace.name[outer[lo:hi]].astype(np.int64)
        names[owned[lo:hi]] = -1 - np.arange(lo, hi)[owned[lo:hi]]  # never equal: no loop runs through them
        found = _find(facts, names, outer[lo:hi])
        taken = np.zeros(hi - lo, dtype=bool)
        for loop in found:
            taken[loop.start:loop.end] = True
        found += [loop for loop in _iterated(facts, names, outer[lo:hi]) if not taken[loop.start:loop.end].any()]
        for loop in found:
            yield (lo, hi), loop


def _owned_elsewhere(facts: Facts, outer: np.ndarray) -> np.ndarray:
    """Per outer op: whether it runs in a data region (a DataLoader fetching sample by sample:
    data-loading's) or in the optimizer's step (a loop over parameters: unfused-optimizer's)."""
    regions = data_region_mask(facts) | facts.is_host & facts.trace.category_mask({"user_annotation"}) & pattern_mask(
        facts, OPTIMIZER_STEP)
    return nearest_in(facts, regions, outer, inclusive=False) >= 0


def _find(facts: Facts, names: np.ndarray, ops: np.ndarray) -> list[_Loop]:
    """The loops in one sequence of op names: for each block length, runs where every name equals the one a
    block later; the longest run wins where they overlap, shorter blocks first."""
    found: list[_Loop] = []
    taken = np.zeros(names.size, dtype=bool)
    for period in range(1, min(MAX_BLOCK, names.size // MIN_MODEL_PASSES) + 1):
        same = np.concatenate((names[period:] == names[:-period], [False]))
        edges = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))))
        for start, end in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
            passes = (end - start) // period + 1
            if passes < MIN_MODEL_PASSES or taken[start:start + period * passes].any():
                continue
            kind = _kind(facts, names, ops, start, period, passes)
            if kind:
                found.append(_Loop(kind=kind, start=start, period=period, passes=passes))
                taken[start:start + period * passes] = True
    return found


def _kind(facts: Facts, names: np.ndarray, ops: np.ndarray, start: int, period: int, passes: int) -> str:
    """'sample' where a pass starts by indexing, 'model' where the passes' results are stacked (or, with
    shapes, summed), 'slices' for such passes over the pieces of a tensor split just before, else '' (a model's
    layers)."""
    trace = facts.trace
    sliced = _name_at(trace, names, start) in INDEXING
    if sliced or _name_at(trace, names, start - 1) in ITERATING:
        same_slice = sliced and _same_index(facts, ops[start:start + period * passes:period])
        return "sample" if passes >= MIN_PASSES and not same_slice else ""
    if period < MIN_MODEL_OPS:
        return ""  # a model is more than one op (a collate's torch.tensor per sample, then stacked, is a loader's)
    if not _models(facts, names, ops, start, period, passes):
        return ""
    return "slices" if _name_at(trace, names, start - 1) in SPLITTING else "model"


def _name_at(trace: Trace, names: np.ndarray, k: int) -> str:
    """The name of the k-th op of the sequence; "" outside it or where the op has none (-1)."""
    return trace.names[int(names[k])] if 0 <= k < names.size and names[k] >= 0 else ""


def _models(facts: Facts, names: np.ndarray, ops: np.ndarray, start: int, period: int, passes: int) -> bool:
    """Whether the passes run models on one input: their results gathered (stacked) after the loop, or, with
    model ops in a pass and shapes recorded, every pass taking the same input and the results gathered or summed."""
    trace = facts.trace
    after = start + period * passes
    gathered = _name_at(trace, names, after) in GATHER
    if gathered and passes >= MIN_PASSES:
        return True
    block = names[start:start + period].tolist()
    if passes < MIN_MODEL_PASSES or not any(trace.names[int(n)] in MODEL_OPS for n in block if n >= 0):
        return False
    firsts = ops[start:after:period]
    return _one_input(facts, firsts) and (gathered or _summed(facts, firsts, ops[start + period - 1:after:period]))


def _iterated(facts: Facts, names: np.ndarray, ops: np.ndarray) -> list[_Loop]:
    """Loops over a tensor's rows whose passes differ (`for img in batch:` with a random flip in some passes,
    savings/h100/loop_per_sample_augment): after an `aten::unbind` along dim 0 of a [N, ...] tensor, the ops
    that take one row (its shape, [...]) mark the passes, each pass the same ops up to that one (the prefix).
    Needs recorded shapes."""
    trace = facts.trace
    found: list[_Loop] = []
    unbinds = [k for k, n in enumerate(names.tolist()) if n >= 0 and trace.names[n] in ITERATING]
    if not unbinds:
        return found
    args = op_args(facts, ops.tolist())
    first_dims = [_first_dims(a) for a in args]
    for u in unbinds:
        rows = _rows(args[u], first_dims[u])
        if rows is None:
            continue
        row, count = rows
        users = [k for k in range(u + 1, names.size) if first_dims[k] == row][:count]
        loop = _by_prefix(names, u + 1, users)
        if loop is not None:
            found.append(loop)
    return found


def _first_dims(a: Any) -> Any:
    """An op's first input's recorded shape (None where none is recorded)."""
    return a.dims[0] if a is not None and a.dims else None


def _rows(unbind: Any, whole: Any) -> tuple[list[Any], int] | None:
    """The shape of one row and the rows' count of an unbind along dim 0 of a [N, ...] tensor; None for
    another unbind, or where the shapes were not recorded."""
    dim = getattr(unbind, "concrete", None)
    if not whole or len(whole) < 2 or not isinstance(dim, list) or len(dim) < 2 or str(dim[1]) not in ("0", ""):
        return None
    return whole[1:], int(whole[0])


def _by_prefix(names: np.ndarray, start: int, users: list[int]) -> _Loop | None:
    """The passes that start the same prefix of ops before each use of the row; None under MIN_PASSES."""
    if len(users) < MIN_PASSES:
        return None
    prefix = users[0] - start
    starts = [start]
    for k in users[1:]:
        b = k - prefix
        if b <= starts[-1] or not np.array_equal(names[b:k], names[start:users[0]]):
            break
        starts.append(b)
    if len(starts) < MIN_PASSES:
        return None
    stop = starts[-1] + (starts[1] - starts[0])
    return _Loop(kind="sample", start=start, period=starts[1] - starts[0], passes=len(starts),
                 stop=min(stop, names.size), starts=tuple(starts))


def _same_index(facts: Facts, firsts: np.ndarray) -> bool:
    """Whether every pass starts indexing at the same place (the index of select, the start of slice and
    narrow, in the recorded Concrete Inputs): a layer's own slice (TimeSformer's encoder layers each take
    x[:, 0:]), or TorchRec's per-feature narrow(x, 0, 0, length) (HTA's hta_mtia_inference), not x[i] with i
    counting samples (loop_per_sample_loss: select(logits, 0, i))."""
    args = op_args(facts, firsts.tolist())
    starts = []
    for a in args:
        concrete = getattr(a, "concrete", None) if a is not None else None
        if not isinstance(concrete, list) or len(concrete) < 3:
            return False  # not recorded: the indexing alone says per sample
        starts.append(concrete[2])
    return len(set(map(str, starts))) == 1


def _one_input(facts: Facts, firsts: np.ndarray) -> bool:
    """Whether every pass's first op takes the same recorded input shapes (the same batch, model after
    model), not the previous pass's output of another shape."""
    dims = [a.dims if a is not None else None for a in op_args(facts, firsts.tolist())]
    return bool(dims[0]) and all(d == dims[0] for d in dims)


def _summed(facts: Facts, firsts: np.ndarray, lasts: np.ndarray) -> bool:
    """Whether each pass ends adding a result whose shape is not its input's: a running sum of the members'
    outputs or losses, not a residual block (which adds what has its input's shape)."""
    trace = facts.trace
    if any(trace.event_name(int(i)) not in SUM for i in lasts.tolist()):
        return False
    first = op_args(facts, [int(firsts[0])])[0]
    last = op_args(facts, [int(lasts[-1])])[0]
    if first is None or last is None or not first.dims or not last.dims:
        return False
    return first.dims[0] != last.dims[0]


def _edit(facts: Facts, first: list[np.ndarray], rest: list[np.ndarray], spans: list[tuple[int, int]]) -> Edit:
    """One pass kept, batched: the other passes' host time goes (ops and the Python between them, and their
    backward nodes); the kept pass's kernels do all passes' work, less a tiny kernel's fixed cost per pass."""
    trace = facts.trace
    gone = np.concatenate(rest).astype(np.int64)
    remove = np.concatenate((gone, backward_nodes(facts, gone)))
    kept, durs = [], []
    for ops, others in zip(first, rest, strict=True):
        work = _work_of(facts, ops)
        passes = others.size // max(ops.size, 1)
        if work.size and passes:
            extra = _work_of(facts, others)
            grow = max(0.0, float(trace.dur[extra].sum()) - passes * work.size * KERNEL_FLOOR_NS)
            share = trace.dur[work] / max(float(trace.dur[work].sum()), 1.0)
            kept.append(work)
            durs.append(trace.dur[work] + grow * share)
    device = (np.concatenate(kept), np.concatenate(durs)) if kept else None
    loop = merge_intervals(np.array([a for a, _ in spans], np.int64), np.array([b for _, b in spans], np.int64))
    return Edit("one batched pass", remove=remove, device_dur=device, host_scale_spans=((loop, 0.0),))


def _work_of(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """The device work launched under these host ops."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    at = trace.ts[facts.launcher[work]]
    lo, hi = trace.ts[ops], trace.ts[ops] + trace.dur[ops]
    order = np.argsort(lo)
    k = np.searchsorted(lo[order], at, side="right") - 1
    ok = k >= 0
    inside = np.zeros(work.size, dtype=bool)
    inside[ok] = at[ok] < hi[order][k[ok]]
    same = np.zeros(work.size, dtype=bool)
    same[ok] = trace.lane_keys(facts.launcher[work[ok]]) == trace.lane_keys(ops[order][k[ok]])
    return work[inside & same]


def _source(facts: Facts, op: int) -> str:
    """The nearest Python frame above the loop's first op that names a file and line (the user's code),
    where the trace has stacks."""
    trace = facts.trace
    frame = trace.category_id("python_function")
    j = int(facts.parent[op])
    while j >= 0:
        name = trace.event_name(j)
        if int(trace.cat[j]) == frame and ".py(" in name and "torch/" not in name:
            return name
        j = int(facts.parent[j])
    return ""
