"""What:
Memory allocation runtime calls inside the steps, step after step: `cudaMalloc`/`cudaFree` (and
the pinned-memory `cudaHostAlloc`/`cudaMallocHost`/`cudaFreeHost`, the driver's `cuMem*` of
expandable segments). PyTorch's caching allocator makes them only when it misses: when
`torch.cuda.empty_cache()` runs in the loop and hands the cache back, when shapes keep changing or
memory is fragmented, or when an allocation fails and it frees its cache to retry.

Why:
`cudaFree` synchronizes the device (the host waits for the GPU to drain, then the GPU waits for
the host), and `cudaMalloc` of a large block costs tens of µs to milliseconds of host time in
which nothing is launched. A warm cache serves the same tensors in about a µs.

Example:
gpu/allocator_churn on an H200: 4x (randn 4096x2048 bf16, matmul, relu_) then
`torch.cuda.empty_cache()` each step. Every step calls cudaMalloc twice (under `aten::empty` in
`aten::randn` and under `aten::mm`, 42-77 µs each) and cudaFree twice at the end of the step (35-133
µs, the first one waiting for the GPU to drain): 6 + 6 calls in 3 steps, 830 µs of host time, and
the GPU idles through most of it.

Impact:
Per step: the time the GPU sits idle from the start of each call until the next device work
starts (within the step), the calls' intervals merged: the host time the calls cost that no GPU
work hides, plus the idle they leave behind. An upper bound (the op after a call still takes its
own dispatch time). gpu/allocator_churn 296 µs per step (49.9%, critical). Calls in a single step
(seed_mm64_cold's first cuBLAS workspace, gpu/gemm_new_shapes' one new size) are one-time
growth, not churn: cold-start's. Calls inside a cuDNN call that sets up a new shape (its
workspaces; gpu/multiscale_benchmark's algorithm search) are cudnn-setup's.

Fix:
Remove `torch.cuda.empty_cache()` from the loop (call it, if at all, between phases); keep shapes
static or bucketed so cached blocks fit again; try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`
against fragmentation; see `torch.cuda.memory_stats()` (`num_alloc_retries`, `num_device_alloc`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.rules._common import name_mask, us
from pista.rules._cudnn import inside, slow_calls
from pista.rules._grad_mode import grad_mode_fires
from pista.trace.facts import Facts

ID = "allocator-churn"
ALLOC_CALLS = frozenset({"cudaMalloc", "cudaMallocHost", "cudaHostAlloc", "cuMemAlloc", "cuMemAlloc_v2",
                         "cuMemCreate", "cuMemMap", "cuMemAddressReserve", "cuMemSetAccess"})
FREE_CALLS = frozenset({"cudaFree", "cudaFreeHost", "cuMemFree", "cuMemFree_v2", "cuMemRelease", "cuMemUnmap",
                        "cuMemAddressFree"})
# Allocation calls must recur: in at least this many steps and this share of them. seed_mm64_cold
# (4 cudaMalloc + 1 cudaFree, all in its first step: the cuBLAS workspace) and gpu/gemm_new_shapes
# (one cudaMalloc for one new size) are one-time growth; gpu/allocator_churn has 4 in every step.
MIN_STEPS = 2
MIN_STEP_SHARE = 0.5
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


class AllocNote(Record):
    """Note on one allocation or free call."""

    under: str
    host_us: float
    gpu_busy_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu or not facts.steps:
        return []
    trace = facts.trace
    calls = np.flatnonzero(facts.is_host & name_mask(facts, ALLOC_CALLS | FREE_CALLS) & (facts.event_step >= 0))
    calls = calls[~_in_cudnn_setup(facts, calls)]
    if calls.size == 0:
        return []
    steps_with = {int(s) for s in facts.event_step[calls].tolist()}
    if len(steps_with) < MIN_STEPS or len(steps_with) < MIN_STEP_SHARE * len(facts.steps):
        return []
    idle_ns = _idle_after(facts, calls)
    impact = ctx.per_step(idle_ns)
    if impact.share < MIN_IMPACT_SHARE:
        return []
    steps = ctx.step_count
    frees = [c for c in calls.tolist() if trace.event_name(c) in FREE_CALLS]
    record = AllocatorChurn(
        steps=steps, steps_with_calls=len(steps_with), calls_per_step=calls.size / steps,
        host_us=us(trace.dur[calls].sum()) / steps, idle_us=us(idle_ns) / steps, calls=_by_name(facts, calls, steps),
        frees_outside_ops=any(_under_op(facts, c) < 0 for c in frees), grad_mode=grad_mode_fires(facts),
        step_share_percent=100.0 * impact.share)
    return [Finding(ID, record, impact, _evidence(facts, calls))]


def _in_cudnn_setup(facts: Facts, calls: np.ndarray) -> np.ndarray:
    """Per call: inside a cuDNN call that sets up a new shape (its workspaces: cudnn-setup's time)."""
    return inside(facts, slow_calls(facts)[0], calls) >= 0


def _idle_after(facts: Facts, calls: np.ndarray) -> float:
    """GPU idle ns inside the union of [call start, next device work start] (within the call's step)."""
    trace = facts.trace
    starts = np.sort(np.concatenate([iv.start for iv in facts.gpu_busy.values()])) if facts.gpu_busy else \
        np.empty(0, np.int64)
    spans = []
    for c in calls.tolist():
        step = facts.steps[int(facts.event_step[c])]
        end = int(trace.ts[c] + trace.dur[c])
        pos = np.searchsorted(starts, end)
        nxt = int(starts[pos]) if pos < starts.size else step.end
        spans.append((int(trace.ts[c]), max(end, min(nxt, step.end))))
    spans.sort()
    merged: list[list[int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    idle = 0
    for s, e in merged:
        busy = max((iv.clip(s, e).total for iv in facts.gpu_busy.values()), default=0)
        idle += (e - s) - busy
    return float(idle)


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
