"""The allocator-churn rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
allocator-churn`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/allocator_churn.ftl."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record, steps_of
from pista.query import name_mask
from pista.rules._common import us
from pista.rules._cudnn import inside, slow_calls
from pista.rules._grad_mode import grad_mode_fires
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

ID = "allocator-churn"
# ... and HIP's (TraceLens' tl_mi300_ddp_resnet18_train: 1,360 hipFree take 3.35 s of a 3.39 s window, read as
# dispatch overhead while these lists knew only CUDA's names)
ALLOC_CALLS = frozenset({"cudaMalloc", "cudaMallocHost", "cudaHostAlloc", "cuMemAlloc", "cuMemAlloc_v2",
                         "cuMemCreate", "cuMemMap", "cuMemAddressReserve", "cuMemSetAccess",
                         "hipMalloc", "hipHostMalloc", "hipMallocHost", "hipExtMallocWithFlags"})
FREE_CALLS = frozenset({"cudaFree", "cudaFreeHost", "cuMemFree", "cuMemFree_v2", "cuMemRelease", "cuMemUnmap",
                        "cuMemAddressFree", "hipFree", "hipHostFree", "hipFreeHost"})
# Allocation calls must recur: in at least this many steps and this share of them. seed_mm64_cold
# (4 cudaMalloc + 1 cudaFree, all in its first step: the cuBLAS workspace) and gpu/gemm_new_shapes
# (one cudaMalloc for one new size) are one-time growth; gpu/allocator_churn has 4 in every step.
MIN_STEPS = 2
MIN_STEP_SHARE = 0.5
# A window without steps shows churn, not a cache growing to its size, where frees recur this often: the
# allocator frees only when it gives its cache back. tl_mi300_ddp_resnet18_train: 1,360 hipFree; kineto's
# resnet50_autograd_api, 34 cudaFree over its first iterations (cuDNN's workspaces for new shapes), hta_alexnet 15.
MIN_WINDOW_FREES = 100
# Below this share of the step the cost is noise (REVIEW.md).
MIN_IMPACT_SHARE = 0.01
EVIDENCE_EVENTS = 6


class AllocCall(Record):
    """One runtime call name over the window."""

    name: str
    per_step: float
    host_us: float  # per step
    under: tuple[str, ...]  # the ops or regions it ran under, most calls first: aten::empty, step


class AllocatorChurn(Record):
    steps: int
    steps_with_calls: int
    calls_per_step: float
    host_us: float  # per step, all the calls
    idle_us: float  # per step: GPU idle from the calls until work resumes (the impact)
    calls: tuple[AllocCall, ...]  # most host time first
    frees_outside_ops: bool  # cudaFree called by no aten op: torch.cuda.empty_cache() in the loop
    grad_mode: bool  # inference in grad mode (inference-grad-mode): each step's graph kept alive grows memory
    step_share_percent: float
    has_steps: bool = True  # False: a window without steps, read as one
    # most of the frees' host time inside aten ops: the allocator giving memory back while ops run (retrying
    # failed allocations after freeing its cache, or caching turned off), not an empty_cache() between steps
    frees_in_ops: bool = False


class AllocNote(Record):
    """Note on one allocation or free call."""

    under: str
    host_us: float
    gpu_busy_us: float


@per_facts
def _found(facts: Facts) -> tuple[np.ndarray, Intervals] | None:
    """The recurring calls and the GPU idle they leave, where that is MIN_IMPACT_SHARE of the step or more."""
    if not facts.has_gpu:
        return None
    calls = np.flatnonzero(facts.is_host & name_mask(facts, ALLOC_CALLS | FREE_CALLS) & _in_window(facts))
    calls = calls[~_in_cudnn_setup(facts, calls)]
    if calls.size == 0 or not _recurs(facts, calls):
        return None
    idle = _idle_spans(facts, calls)
    return (calls, idle) if steps_of(facts).per_step(idle.total).share >= MIN_IMPACT_SHARE else None


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = _found(facts)
    if found is None:
        return []
    calls, idle = found
    trace = facts.trace
    steps_with = {int(s) for s in facts.event_step[calls].tolist()} if facts.steps else {0}
    idle_ns = float(idle.total)
    impact = ctx.per_step(idle_ns)
    steps = ctx.step_count
    frees = [c for c in calls.tolist() if trace.event_name(c) in FREE_CALLS]
    in_ops = sum(int(trace.dur[c]) for c in frees if _under_op(facts, c) >= 0)
    record = AllocatorChurn(
        steps=steps, steps_with_calls=len(steps_with), calls_per_step=calls.size / steps,
        host_us=us(trace.dur[calls].sum()) / steps, idle_us=us(idle_ns) / steps, calls=_by_name(facts, calls, steps),
        frees_outside_ops=any(_under_op(facts, c) < 0 for c in frees), grad_mode=grad_mode_fires(facts),
        step_share_percent=100.0 * impact.share, has_steps=bool(facts.steps),
        frees_in_ops=bool(frees) and in_ops > 0.5 * int(trace.dur[frees].sum()))
    return [Finding(ID, record, impact, _evidence(facts, calls))]


def _in_window(facts: Facts) -> np.ndarray:
    """Mask: inside the steps, or inside the window where the trace has none."""
    if facts.steps:
        return facts.event_step >= 0
    lo, hi = facts.window
    return (facts.trace.ts >= lo) & (facts.trace.ts < hi)


def _recurs(facts: Facts, calls: np.ndarray) -> bool:
    """The calls recur: in MIN_STEPS steps and MIN_STEP_SHARE of them, or, without steps, MIN_WINDOW_FREES frees."""
    if not facts.steps:
        return int(name_mask(facts, FREE_CALLS)[calls].sum()) >= MIN_WINDOW_FREES
    steps_with = {int(s) for s in facts.event_step[calls].tolist()}
    return len(steps_with) >= MIN_STEPS and len(steps_with) >= MIN_STEP_SHARE * len(facts.steps)


def _in_cudnn_setup(facts: Facts, calls: np.ndarray) -> np.ndarray:
    """Per call: inside a cuDNN call that sets up a new shape (its workspaces: cudnn-setup's time)."""
    return inside(facts, slow_calls(facts)[0], calls) >= 0


def _idle_spans(facts: Facts, calls: np.ndarray) -> Intervals:
    """The union of [call start, next device work start] (within the call's step, or the window), less the time
    the busiest device works in it."""
    trace = facts.trace
    starts = np.sort(np.concatenate([iv.start for iv in facts.gpu_busy.values()])) if facts.gpu_busy else \
        np.empty(0, np.int64)
    stop = np.array([int(facts.steps[int(s)].end) if facts.steps else int(facts.window[1])
                     for s in facts.event_step[calls].tolist()], np.int64)
    end = (trace.ts[calls] + trace.dur[calls]).astype(np.int64)
    pos = np.searchsorted(starts, end)
    nxt = np.where(pos < starts.size, starts[np.minimum(pos, max(starts.size - 1, 0))], stop) if starts.size else stop
    spans = merge_intervals(trace.ts[calls].astype(np.int64), np.maximum(end, np.minimum(nxt, stop)))
    busy = max(facts.gpu_busy.values(), key=lambda iv: iv.total) if facts.gpu_busy else None
    return spans if busy is None else spans.subtract(busy)


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle the calls leave (empty where the rule does not fire): overhead-bound leaves it out, not reading
    the allocator's calls as dispatch (tl_mi300_ddp_resnet18_train: 2.63 s 'per-op overhead')."""
    found = _found(facts)
    return found[1] if found is not None else merge_intervals(np.empty(0, np.int64), np.empty(0, np.int64))


def _under_op(facts: Facts, i: int) -> int:
    """The nearest aten op above event i, or -1."""
    trace = facts.trace
    cpu_op = trace.category_id("cpu_op")
    j = int(facts.parent[i])
    while j >= 0 and not (int(trace.cat[j]) == cpu_op and trace.event_name(j).startswith("aten::")):
        j = int(facts.parent[j])
    return j


def _under(facts: Facts, i: int) -> str:
    op = _under_op(facts, i)
    if op >= 0:
        return facts.trace.event_name(op)
    p = int(facts.parent[i])
    return facts.trace.event_name(p) if p >= 0 else ""


def _by_name(facts: Facts, calls: np.ndarray, steps: int) -> tuple[AllocCall, ...]:
    trace = facts.trace
    groups: dict[str, list[int]] = defaultdict(list)
    for c in calls.tolist():
        groups[trace.event_name(c)].append(c)
    out = []
    for name, items in groups.items():
        under = Counter(_under(facts, c) for c in items)
        out.append(AllocCall(name, len(items) / steps, us(trace.dur[items].sum()) / steps,
                             tuple(u for u, _ in under.most_common())))
    return tuple(sorted(out, key=lambda a: -a.host_us))


def _evidence(facts: Facts, calls: np.ndarray) -> list[Evidence]:
    trace = facts.trace
    picks = sorted(calls.tolist(), key=lambda c: -int(trace.dur[c]))[:EVIDENCE_EVENTS]
    out = []
    for c in sorted(picks, key=lambda c: int(trace.ts[c])):
        lo, hi = int(trace.ts[c]), int(trace.ts[c] + trace.dur[c])
        busy = max((iv.clip(lo, hi).total for iv in facts.gpu_busy.values()), default=0)
        out.append(Evidence.of(facts, c, AllocNote(_under(facts, c), us(trace.dur[c]), us(busy))))
    return out
