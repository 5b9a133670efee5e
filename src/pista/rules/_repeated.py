"""Calls repeated step after step: the op or kernel names the host calls so often, for so little GPU
work each, that the GPU idles while it dispatches them, and that idle: not a rule.

many-calls reports them; overhead-bound takes only the per-op idle left after them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from pista.query import COMPILE_EVENT, nearest_in, pattern_mask
from pista.rules._claims import specific_claims
from pista.rules._common import (
    COMPILED_CODE,
    ancestors_match,
    data_regions,
    device_time_under,
    first_calls,
    index_mask,
    mark_ancestors,
    outer_ops,
)
from pista.rules._idle import intersect, ledger, spans, subtract, union
from pista.rules._launches import launch_bound_idle
from pista.trace.facts import Facts, Intervals, indices, per_facts

# the thresholds below are many-calls' (`pista explain many-calls`, [tool.pista.rules.many-calls])
THRESHOLDS_OF = "many-calls"

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
# Ops whose time is the elements they make or move (random numbers, fills, copies): a call this long (ns) or longer
# on average, over ten times the per-call toll (10-20 µs), is the work itself, and one batched call makes the same
# numbers in about the same time (monisha_trace: 100 aten::randn of 2.87 ms each on the CPU were told "batch the
# calls", as the Start here; big_gpt_eager_20steps' casts take 32.8 µs a call).
OUTPUT_BOUND_OPS = re.compile(r"^aten::(?:randn|rand|randint|randperm|normal_?|uniform_|bernoulli_?|random_|multinomial"
                              r"|exponential_|(?:randn|rand|randint)_like|fill_|zero_|zeros|ones|full|empty"
                              r"|(?:zeros|ones|full|empty)_like|copy_|clone|contiguous)$")
OUTPUT_BOUND_CALL_NS = 200_000
# A loop's calls have the same ops between them this often (python_loop_cpu: 127 of 127 gaps; the
# aten::linear of gpu/bert_as_written's 12 blocks: query, key, value, output and two feed-forward
# layers apart, the likeliest gap 96 of 295).
LOOP_SAME_BETWEEN = 0.6
# A module's layers: repeated with the same ops between them, they are a chain of identical layers unless a slice is
# taken before each call (then a loop over slices).
LAYER_OPS = frozenset({"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::layer_norm",
                       "aten::batch_norm", "aten::group_norm", "aten::embedding", "aten::lstm", "aten::gru"})
# The ops that take a piece of a tensor: a loop over slices runs one of them before each call.
SLICING = frozenset({"aten::select", "aten::slice", "aten::narrow", "aten::index", "aten::unbind", "aten::split",
                     "aten::chunk", "aten::index_select", "aten::as_strided"})
# Where repeated calls come from, for the advice: the optimizer's step, dtype casts, compiled code.
OPTIMIZER = re.compile(r"^Optimizer\.step#")
# The casts and their gradients' (autocast's backward casts each weight's gradient back: big_gpt's
# 123 `evaluate_function: ToCopyBackward0` per step), autocast-casts' fact.
CASTS = frozenset({"aten::to", "aten::_to_copy", "autograd::engine::evaluate_function: ToCopyBackward0"})


@dataclass(eq=False)
class RepeatedCalls:
    record_calls: list[tuple[str, int, np.ndarray, np.ndarray, float, str]]  # kind, name id, members, spans, cost, source
    claim: Intervals


def many_calls_idle(facts: Facts) -> Intervals:
    """The GPU idle many-calls claims (empty where it does not fire): overhead-bound leaves it out."""
    found = repeated_calls(facts)
    return found.claim if found is not None else union(np.empty(0), np.empty(0))


def _windows(facts: Facts) -> Intervals:
    windows = [(s.start, s.end) for s in facts.steps] or [facts.window]
    return union(np.array([a for a, _ in windows]), np.array([b for _, b in windows]))


@per_facts
def repeated_calls(facts: Facts) -> RepeatedCalls | None:
    """Up to MAX_OPS op or kernel names called often enough, costing enough, mostly on the host, with
    enough per-op idle under them (None for none), and that idle."""
    n_steps = len(facts.steps) or 1
    step_ns = float(np.median([s.dur for s in facts.steps])) if facts.steps else float(facts.window[1] - facts.window[0])
    if step_ns <= 0:
        return None
    book = ledger(facts)
    if book is not None:
        free = subtract(subtract(book.per_op, launch_bound_idle(facts)), specific_claims(facts))
    else:
        free = _windows(facts)  # no GPU: the host time is the step
    thresholds = (MANY_CALLS_PER_STEP * n_steps, MANY_CALLS_MIN_STEP_SHARE * step_ns * n_steps,
                  MIN_SHARE * step_ns * n_steps)
    kept = _first_of_each(facts, _candidates(facts, free, *thresholds))
    if not kept:
        return None
    claim = intersect(free, spans(facts, np.concatenate([h for _, _, _, h, _, _ in kept])))
    return RepeatedCalls(kept, claim)


def _calls(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """The steps' op calls (an op that recurses into itself once: aten::to inside aten::to) and
    device work, out of compiling (recompilation's: its thousands of PythonDispatchMode calls are
    not a loop)."""
    trace = facts.trace
    in_window = facts.event_step >= 0 if facts.steps else np.ones(len(trace), dtype=bool)
    compiling = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    # climbing from the calls alone (arrays their size), not a nearest-ancestor answer per event:
    # many-calls' peak was the analysis' on a 5 GB trace
    ops = indices(facts.is_host & trace.category_mask({"cpu_op"}) & in_window)
    ops = first_calls(facts, ops[nearest_in(facts, compiling, ops) < 0])
    work = indices(facts.is_device_work & in_window)
    return ops, work[nearest_in(facts, compiling, work) < 0]


def _candidates(facts: Facts, free: Intervals, min_calls: float, min_cost: float,
                min_idle: float) -> list[tuple[float, float, str, int, np.ndarray, np.ndarray, str]]:
    """(idle, time, kind, name id, calls, their host side, source) of each op or kernel name called often
    enough, costing enough, mostly on the host, with enough per-op idle under it; most idle first."""
    trace = facts.trace
    candidates: list[tuple[float, float, str, int, np.ndarray, np.ndarray, str]] = []
    for kind, idx in zip(("op", "kernel"), _calls(facts), strict=True):
        if idx.size == 0:
            continue
        name = trace.name[idx]
        counts = np.bincount(name)
        totals, gpu_totals = _totals(facts, kind, idx, name, counts.size)
        keep = (counts >= min_calls) & (totals >= min_cost) & (gpu_totals < MANY_CALLS_MAX_DEVICE_SHARE * totals)
        for k in np.flatnonzero(keep).tolist():
            members = idx[name == k]
            if kind == "op" and _no_loop_op(facts, k, members, float(totals[k]), int(counts[k])):
                continue
            # a kernel's host side is its launch calls
            hosts = members if kind == "op" else facts.launcher[members][facts.launcher[members] >= 0]
            idle = intersect(free, spans(facts, hosts)).total
            if idle < min_idle:
                continue
            # the optimizer's foreach calls and autocast's casts are unfused-optimizer's and
            # autocast-casts' facts (big_gpt_eager_20steps: its 271 aten::to per step were told twice)
            source = _source(facts, kind, k, members)
            if source not in OWNED_ELSEWHERE:
                candidates.append((idle, float(totals[k]), kind, k, members, hosts, source))
    candidates.sort(key=lambda c: -c[0])
    return candidates


def _totals(facts: Facts, kind: str, idx: np.ndarray, name: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per name id, the calls' time (an op's wall time; a kernel's launch and run) and the device time under them."""
    trace = facts.trace
    if kind == "op":
        return _per_name(name, trace.dur, size, idx), device_time_under(facts, idx, name, size).astype(np.float64)
    return _per_name(name, launch_and_run(facts, idx), size), _per_name(name, trace.dur[idx], size)


def _no_loop_op(facts: Facts, k: int, members: np.ndarray, total: float, count: int) -> bool:
    """An op no loop of the user's calls: another op's internals (aten::empty in batch_norm), or one whose calls'
    time is their output's, not a per-call toll (batching saves nothing)."""
    name = facts.trace.names[k]
    return ((name not in CASTS and _nested(facts, members) >= MAX_NESTED)
            or bool(OUTPUT_BOUND_OPS.match(name) and total >= OUTPUT_BOUND_CALL_NS * count))


def launch_and_run(facts: Facts, work: np.ndarray) -> np.ndarray:
    """Per device work item, the ns of its launch call and of itself, the time they overlap counted once: a
    copy's launch call blocks while the copy runs (a pageable or synchronous cudaMemcpy), and summed, its
    wall time counted twice (issue 35: 181.7 ms of copies claimed where the GPU ran 82.7 ms)."""
    trace = facts.trace
    launcher = facts.launcher[work]
    has = launcher >= 0
    at = np.maximum(launcher, 0)
    overlap = np.minimum(trace.ts[work] + trace.dur[work], trace.ts[at] + trace.dur[at]) - np.maximum(trace.ts[work],
                                                                                                      trace.ts[at])
    return trace.dur[work] + np.where(has, trace.dur[at] - np.clip(overlap, 0, None), 0)


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
    if (nearest_in(facts, pattern_mask(facts, COMPILED_CODE), hosts) >= 0).mean() >= 0.5:
        return "compiled"
    if (nearest_in(facts, facts.is_host & pattern_mask(facts, OPTIMIZER), hosts) >= 0).mean() >= 0.5:
        return "optimizer"
    if kind == "op" and trace.names[name_id] in CASTS:
        return "cast"
    if (nearest_in(facts, index_mask(facts, data_regions(facts)), hosts) >= 0).mean() >= 0.5:
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
    if not between:
        return True
    common, count = between.most_common(1)[0]
    if count < LOOP_SAME_BETWEEN * sum(between.values()):
        return False
    layer = facts.trace.event_name(int(members[0])) in LAYER_OPS
    return not layer or _takes_a_slice(facts, common)


def _takes_a_slice(facts: Facts, between: tuple[int, ...]) -> bool:
    """Whether the ops between two calls of a layer op take a piece of a tensor (a loop over slices indexes before
    each call), or there are none (calls back to back): a chain of identical layers repeats its activation between
    them and indexes nothing (review 5: param_linear_kineto's 21 Linear+ReLU layers, 840 aten::linear in 40 iterations,
    read "a loop of calls ... one op on a stacked tensor")."""
    names = facts.trace.names
    return not between or any(names[int(n)] in SLICING for n in between if n >= 0)
