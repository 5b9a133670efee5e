"""What:
Ops (or kernels) called very many times per step, each call cheap and mostly host work, that
together keep the GPU waiting: the count is the problem. All such ops of a trace are one finding,
each with its calls per step, where they come from (a Python loop, the optimizer, dtype casts,
compiled code) and the GPU idle while the host is inside them.

Why:
Every call pays the same fixed toll: Python and the dispatcher for an op (10-20 µs), a launch for
a kernel (5-10 µs on the host, a few µs of GPU ramp). A hundred tiny calls cost a hundred tolls;
one batched or fused call pays once. The toll only costs time where the GPU waits for it: behind
long kernels it is hidden.

Example:
big_gpt_eager_20steps (a 12-layer GPT, bf16 autocast, eager) on an H200: aten::to is called 271
times per step (32.8 µs each, autocast's casts of the fp32 weights), and the GPU is idle 7.3 ms
per step while the host is inside them, 13.9% of the 52.7 ms median step (warning). On gpu/launch_bound (200 tiny elementwise ops per
step) the ops are aten::mul and aten::add, 100 calls each per step; their idle is launch-bound's
(the tiny kernels explain it), so this rule stays silent there.

Impact:
Per step: the GPU idle while the host is inside the calls of the listed ops (for kernels: inside
their launch calls), not counting idle another finding claims (syncs, data loading, compiling, the
profiler, launch-bound's tiny-kernel ops): what batching or fusing them could save at most (upper
bound; the batched op still costs one call). Host time hidden behind GPU work saves nothing and is
not counted. Without a GPU the calls' own host time counts. Before, each op was its own warning
with its wall time as the cost, hidden or not, and restated overhead-bound.

Fix:
Batch the work (one op on a stacked tensor instead of a loop of ops on slices), use the
`torch._foreach_*` / fused optimizer variants (`fused=True`), keep the weights in the compute dtype
so autocast does not cast them every step, fuse with torch.compile, or replay the whole step as a
CUDA graph so the per-call host cost disappears (already-compiled code: the CUDA graph).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules import data_loading, gpu_idle, launch_bound
from pista.rules._common import (
    COMPILE_EVENT,
    ancestors_match,
    device_time_under,
    evidence,
    first_calls,
    index_mask,
    mark_ancestors,
    nearest_in,
    outer_ops,
    pattern_mask,
    us,
)
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, indices, per_facts

ID = "many-calls"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The share of the host's time in this rule's idle that one batched call (or a graph of the loop) keeps:
# gpu/python_loop_cpu's 128 per-sample matmuls against one batched matmul kept about a tenth of the host.
BATCHED_HOST_SHARE = 0.1
PER_NAME_SLICE = 1 << 18  # calls summed at a time (memory, not output)

# Calls per step. launch_bound calls aten::add/aten::mul 100 times a step, big_gpt_eager_20steps
# aten::to 271 times; the busiest name in series_mlp_eager is aten::empty_strided at 52 a step,
# in the other fixtures fewer than 40: 64 sits between a model's normal op count and a loop.
MANY_CALLS_PER_STEP = 64
# ...and all its calls together must cost this share of the median step in wall time: launch_bound's
# aten::add is 37%, big_gpt's aten::to 16%; big_gpt's aten::view (349 calls, 1.6%) is metadata only.
MANY_CALLS_MIN_STEP_SHARE = 0.05
# ...and its calls must be host-heavy: GPU time per call under this share of the call's own cost
# (wall time for an op, launch + kernel for a kernel). launch_bound's aten::add runs a 1 µs kernel
# per 16 µs call (0.06), big_gpt's aten::to 0.16; big_gpt's aten::mm (99 a step, the model's own
# layers, not a loop) keeps the GPU busy for most of each call and is left out.
MANY_CALLS_MAX_DEVICE_SHARE = 0.5
# ...and the GPU idle while the host is inside them must be at least this share of the step
# (REVIEW.md: under ~1% is noise).
MIN_SHARE = 0.01
# ...and the user must call it: an op whose calls are mostly (this share) inside another op is that
# op's internals (gpu/resnet50_bf16: aten::empty 637 and aten::zeros 106 a step, all inside
# batch_norm and convolution_backward; capture_transformer's aten::empty_strided inside _to_copy).
# Casts are kept: autocast runs them inside aten::linear (big_gpt's aten::to, 99.6% nested), and
# keeping the weights in the compute dtype removes them.
MAX_NESTED = 0.5
MAX_OPS = 4  # ops listed in the finding; more would be noise
# A loop's calls have the same ops between them this often (python_loop_cpu: 127 of 127 gaps; the
# aten::linear of gpu/bert_as_written's 12 blocks: query, key, value, output and two feed-forward
# layers apart, the likeliest gap 96 of 295).
LOOP_SAME_BETWEEN = 0.6
EVIDENCE_PER_OP = 2  # calls shown per op, from the first step; presentation
# Where repeated calls come from, for the advice: the optimizer's step, dtype casts, compiled code.
OPTIMIZER = re.compile(r"^Optimizer\.step#")
# The casts and their gradients' (autocast's backward casts each weight's gradient back: big_gpt's
# 123 `evaluate_function: ToCopyBackward0` per step), autocast-casts' fact.
CASTS = frozenset({"aten::to", "aten::_to_copy", "autograd::engine::evaluate_function: ToCopyBackward0"})


class RepeatedCall(Record):
    kind: str  # op | kernel
    name: str
    source: str  # loop | optimizer | cast | compiled
    calls: int
    calls_per_step: float
    avg_us: float  # mean wall time of a call (an op) or launch + kernel (a kernel)
    cost_us_per_step: float  # all its calls' own cost per step, hidden or not
    idle_us_per_step: float  # GPU idle while the host is inside them (its share of the impact)


class ManyCalls(Record):
    steps: int
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    has_gpu: bool
    idle_us_per_step: float  # the impact: the listed calls together
    calls: tuple[RepeatedCall, ...]  # largest idle first


class OneOfMany(Record):
    """Note on one call of a repeated op."""

    calls_per_step: float
    steps: bool  # the trace has steps (else: in the window)


@dataclass(eq=False)
class _Found:
    record_calls: list[tuple[str, int, np.ndarray, np.ndarray, float, str]]  # kind, name id, members, spans, cost, source
    claim: Intervals


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle this rule claims (empty where it does not fire): overhead-bound leaves it out."""
    found = _detect(facts)
    return found.claim if found is not None else gpu_idle.union(np.empty(0), np.empty(0))


def _windows(facts: Facts) -> Intervals:
    spans = [(s.start, s.end) for s in facts.steps] or [facts.window]
    return gpu_idle.union(np.array([a for a, _ in spans]), np.array([b for _, b in spans]))


@per_facts
def _detect(facts: Facts) -> _Found | None:
    n_steps = len(facts.steps) or 1
    step_ns = float(np.median([s.dur for s in facts.steps])) if facts.steps else float(facts.window[1] - facts.window[0])
    if step_ns <= 0:
        return None
    book = gpu_idle.ledger(facts)
    if book is not None:
        free = gpu_idle.subtract(gpu_idle.subtract(book.per_op, launch_bound.claimed_idle(facts)),
                                 launch_bound.specific_claims(facts))
    else:
        free = _windows(facts)  # no GPU: the host time is the step
    thresholds = (MANY_CALLS_PER_STEP * n_steps, MANY_CALLS_MIN_STEP_SHARE * step_ns * n_steps,
                  MIN_SHARE * step_ns * n_steps)
    kept = _first_of_each(facts, _candidates(facts, free, *thresholds))
    if not kept:
        return None
    claim = gpu_idle.intersect(free, gpu_idle.spans(facts, np.concatenate([h for _, _, _, h, _, _ in kept])))
    return _Found(kept, claim)


def _calls(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """The steps' op calls (an op that recurses into itself once: aten::to inside aten::to) and
    device work, out of compiling (recompilation's: its thousands of PythonDispatchMode calls are
    not a loop)."""
    trace = facts.trace
    in_window = facts.event_step >= 0 if facts.steps else np.ones(len(trace), dtype=bool)
    compiling = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    # climbing from the calls alone (arrays their size), not a nearest-ancestor answer per event:
    # this rule's peak was the analysis' on a 5 GB trace
    ops = indices(facts.is_host & trace.category_mask({"cpu_op"}) & in_window)
    ops = first_calls(facts, ops[nearest_in(facts, compiling, ops) < 0])
    work = indices(facts.is_device_work & in_window)
    return ops, work[nearest_in(facts, compiling, work) < 0]


def _candidates(facts: Facts, free: Intervals, min_calls: float, min_cost: float,
                min_idle: float) -> list[tuple[float, float, str, int, np.ndarray, np.ndarray, str]]:
    """(idle, time, kind, name id, calls, their host side, source) of each op or kernel name called often
    enough, costing enough, mostly on the host, with enough per-op idle under it; most idle first."""
    trace = facts.trace
    candidates = []
    for kind, idx in zip(("op", "kernel"), _calls(facts), strict=True):
        if idx.size == 0:
            continue
        name = trace.name[idx]
        counts = np.bincount(name)
        if kind == "op":
            totals = _per_name(name, trace.dur, counts.size, idx)
            gpu_totals = device_time_under(facts, idx, name, counts.size).astype(np.float64)
        else:
            launcher = facts.launcher[idx]
            totals = _per_name(name, trace.dur[idx] + np.where(launcher >= 0, trace.dur[launcher], 0), counts.size)
            gpu_totals = _per_name(name, trace.dur[idx], counts.size)
        keep = (counts >= min_calls) & (totals >= min_cost) & (gpu_totals < MANY_CALLS_MAX_DEVICE_SHARE * totals)
        for k in np.flatnonzero(keep).tolist():
            members = idx[name == k]
            if kind == "op" and trace.names[k] not in CASTS and _nested(facts, members) >= MAX_NESTED:
                continue  # another op's internals (aten::empty in batch_norm): nothing the user calls in a loop
            # a kernel's host side is its launch calls
            hosts = members if kind == "op" else facts.launcher[members][facts.launcher[members] >= 0]
            idle = gpu_idle.intersect(free, gpu_idle.spans(facts, hosts)).total
            if idle < min_idle:
                continue
            # the optimizer's foreach calls and autocast's casts are unfused-optimizer's and
            # autocast-casts' facts (big_gpt_eager_20steps: its 271 aten::to per step were told twice)
            source = _source(facts, kind, k, members)
            if source not in OWNED_ELSEWHERE:
                candidates.append((idle, float(totals[k]), kind, k, members, hosts, source))
    candidates.sort(key=lambda c: -c[0])
    return candidates


def _first_of_each(facts: Facts, candidates: list[tuple[float, float, str, int, np.ndarray, np.ndarray, str]]
                   ) -> list[tuple[str, int, np.ndarray, np.ndarray, float, str]]:
    """Up to MAX_OPS candidates, leaving out a kernel of a reported op, or an op mostly called from
    inside one: they say the same thing again."""
    trace = facts.trace
    kept: list[tuple[str, int, np.ndarray, np.ndarray, float, str]] = []
    reported: list[int] = []
    covered = np.zeros(len(trace), dtype=bool)  # reported ops' calls and everything above them
    for _, total, kind, name_id, members, hosts, source in candidates:
        if len(kept) >= MAX_OPS:
            break
        if reported:
            ids = np.asarray(reported, dtype=trace.name.dtype)
            if kind == "op":
                nested = ancestors_match(facts, members, ids) | covered[members]
            else:
                owner = facts.owner[members]
                nested = np.zeros(members.size, dtype=bool)
                has = owner >= 0
                nested[has] = covered[owner[has]] | ancestors_match(facts, owner[has], ids)
            if nested.mean() >= 0.5:
                continue
        reported.append(name_id)
        if kind == "op":
            covered[members] = True
            mark_ancestors(facts, members, covered)
        kept.append((kind, name_id, members, hosts, total, source))
    return kept


# the optimizer's and the casts' rules tell those; a model's own layers are its structure, whose
# per-op cost overhead-bound and launch-bound tell (gpu/bert_as_written: 74 aten::linear a step); calls in
# a DataLoader fetching sample by sample are data-loading's (or, with a GPU, gpu-idle's)
OWNED_ELSEWHERE = ("cast", "optimizer", "layers", "data")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = _detect(facts)
    if found is None:
        return []
    impact = ctx.per_step(found.claim.total)
    if impact.share < MIN_SHARE:
        return []
    trace = facts.trace
    n = ctx.step_count
    rows, shown = [], []
    for kind, name_id, members, hosts, total, source in found.record_calls:
        own = gpu_idle.intersect(found.claim, gpu_idle.spans(facts, hosts)).total
        rows.append(RepeatedCall(
            kind=kind, name=trace.names[name_id], source=source,
            calls=int(members.size), calls_per_step=members.size / n, avg_us=us(total / members.size),
            cost_us_per_step=us(total) / n, idle_us_per_step=us(own) / n))
        ordered = members[np.argsort(trace.ts[members], kind="stable")]
        first = ordered[facts.event_step[ordered] == facts.event_step[ordered[0]]][:EVIDENCE_PER_OP]
        shown.append((own, [evidence(facts, int(i), OneOfMany(members.size / n, bool(facts.steps))) for i in first]))
    order = np.argsort([-r.idle_us_per_step for r in rows], kind="stable")
    record = ManyCalls(steps=n, has_steps=bool(facts.steps), step_us=us(ctx.step_ns), has_gpu=facts.has_gpu, idle_us_per_step=impact.us,
                       calls=tuple(rows[k] for k in order))
    return [Finding(ID, record, impact, [e for k in order for e in shown[k][1]],
                    edit=Edit("calls batched", host_scale_spans=((found.claim, BATCHED_HOST_SHARE),)))]


def _per_name(name: np.ndarray, ns: np.ndarray, size: int, idx: np.ndarray | None = None) -> np.ndarray:
    """Per name id, the sum of the calls' ns (of ns[idx] where idx is given, a slice of the calls at a
    time: no int64 copy per call), as floats: summed in int64 (exact, as bincount's float sums of ns
    are), with no float copy of one value per call."""
    out = np.zeros(size, dtype=np.int64)
    if idx is None:
        np.add.at(out, name, ns)
    else:
        for lo in range(0, idx.size, PER_NAME_SLICE):
            np.add.at(out, name[lo:lo + PER_NAME_SLICE], ns[idx[lo:lo + PER_NAME_SLICE]])
    return out.astype(np.float64)


def _nested(facts: Facts, members: np.ndarray) -> float:
    """The share of the calls whose parent is another op."""
    parent = facts.parent[members]
    return float(((parent >= 0) & facts.trace.category_mask({"cpu_op"}, np.maximum(parent, 0))).mean())


def _source(facts: Facts, kind: str, name_id: int, members: np.ndarray) -> str:
    """Where the calls come from: compiled code, the optimizer's step, dtype casts, else a loop."""
    trace = facts.trace
    hosts = members if kind == "op" else facts.launcher[members][facts.launcher[members] >= 0]
    if hosts.size == 0:
        return "loop"
    if (nearest_in(facts, pattern_mask(facts, launch_bound.COMPILED_CODE), hosts) >= 0).mean() >= 0.5:
        return "compiled"
    if (nearest_in(facts, facts.is_host & pattern_mask(facts, OPTIMIZER), hosts) >= 0).mean() >= 0.5:
        return "optimizer"
    if kind == "op" and trace.names[name_id] in CASTS:
        return "cast"
    if (nearest_in(facts, index_mask(facts, data_loading.data_regions(facts)), hosts) >= 0).mean() >= 0.5:
        return "data"  # the DataLoader fetching sample by sample: data-loading's (a CPU trace) or gpu-idle's
    if kind == "op" and not _tight_loop(facts, members):
        return "layers"
    return "loop"


def _tight_loop(facts: Facts, members: np.ndarray) -> bool:
    """Whether the op's calls repeat with the same ops between them (a Python loop over slices:
    python_loop_cpu's aten::matmul, an aten::select before each), not spread through a forward between
    ever different ops (a model's layers: gpu/bert_as_written's aten::linear). Calls under other ops
    count as a loop, as before."""
    outer, lane = outer_ops(facts)
    pos = np.flatnonzero(index_mask(facts, members)[outer])
    if pos.size < 2:
        return True
    same = lane[pos[1:]] == lane[pos[:-1]]
    names = facts.trace.name[outer]
    between = Counter(tuple(names[a + 1:b].tolist()) for a, b in zip(pos[:-1][same].tolist(), pos[1:][same].tolist(),
                                                                       strict=True))
    return not between or between.most_common(1)[0][1] >= LOOP_SAME_BETWEEN * sum(between.values())
