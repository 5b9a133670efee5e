"""Helpers shared by several rules (event masks, launch keys, step spans, formatting): not a rule. The queries
the summary and the table ask as well (events by name and pattern, ancestors, tree levels) are pista.query's."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from pista.efficiency import ARITHMETIC_GEMM_OPS
from pista.findings import Evidence
from pista.query import (
    AUTOGRAD_NODE,
    DATA_REGION,
    DATALOADER_MARKER,
    nearest_ancestor,
    nearest_in,
    pattern_mask,
)
from pista.trace.facts import Facts, per_facts
from pista.trace.model import Trace

# Runtime/driver calls that put a kernel (or copy/memset) on a stream, by name: is_launch covers every
# runtime call (cudaMalloc, cudaDeviceGetAttribute...), which are not launches.
LAUNCH_NAMES = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel",
    "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMemcpy", "cudaMemset", "cudaMemcpy2DAsync", "cudaGraphLaunch",
    # ROCm's HIP runtime, as roctracer names its calls in a torch trace (issue 35: MI300X/MI350 traces)
    "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
    "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpy", "hipMemset", "hipMemcpyWithStream", "hipGraphLaunch",
})


def us(ns: float) -> float:
    return float(ns) / 1000.0


def step_at(facts: Facts, ts: int) -> int | None:
    """The number of the ProfilerStep whose span holds ts (None outside steps or without steps)."""
    for step in facts.steps:
        if step.start <= ts < step.end:
            return step.number
    return None


def evidence(facts: Facts, i: int, detail: object = None) -> Evidence:
    """Evidence.of, with the step filled in from the time for events facts gives no step (overhead lane)."""
    ev = Evidence.of(facts, int(i), detail)
    if ev.step is None and facts.steps:
        ev = dataclasses.replace(ev, step=step_at(facts, int(facts.trace.ts[i])))
    return ev


def outermost_aten(facts: Facts, i: int) -> int:
    """The aten op the user called: the top of the chain of aten:: ops above event i, or -1."""
    trace = facts.trace
    cpu_op = trace.category_id("cpu_op")
    j, top = int(facts.parent[i]), -1
    while j >= 0 and int(trace.cat[j]) == cpu_op and trace.event_name(j).startswith("aten::"):
        top = j
        j = int(facts.parent[j])
    return top


def enclosing_op(facts: Facts, i: int) -> int:
    """The nearest cpu_op above event i in the op tree (i itself not counted), or -1."""
    trace = facts.trace
    cpu_op = trace.category_id("cpu_op")
    j = int(facts.parent[i])
    while j >= 0 and int(trace.cat[j]) != cpu_op:
        j = int(facts.parent[j])
    return j


def index_mask(facts: Facts, idx) -> np.ndarray:
    """A mask of the trace's events, true at idx."""
    mask = np.zeros(len(facts.trace), dtype=bool)
    mask[idx] = True
    return mask


def kernel_launches(facts: Facts) -> np.ndarray:
    """Mask of host runtime calls that launched device work (via the correlation link)."""
    mask = np.zeros(len(facts.trace), dtype=bool)
    linked = facts.launcher[facts.is_device_work & (facts.launcher >= 0)]
    mask[linked] = True
    return mask


def launched_by(facts: Facts) -> np.ndarray:
    """For each launch call: the device work it launched (-1 for other events)."""
    out = np.full(len(facts.trace), -1, dtype=np.int64)
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    out[facts.launcher[work]] = work
    return out


def ancestors_match(facts: Facts, idx: np.ndarray, name_ids: np.ndarray) -> np.ndarray:
    """For events idx: whether any ancestor in the op tree has one of the interned name ids."""
    found = np.zeros(idx.size, dtype=bool)
    up = facts.parent[idx]
    while (up >= 0).any():
        live = up >= 0
        found[live] |= np.isin(facts.trace.name[up[live]], name_ids)
        up = np.where(live, facts.parent[np.maximum(up, 0)], -1)
    return found


def device_time_under(facts: Facts, idx: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Per group id (group[k] that of event idx[k], idx sorted): the sum over its host events of the
    ns of device work launched by each or by any op below it (their CUDA totals). Each piece of work
    climbs from its op to the root: arrays the size of the work, not one int64 per event."""
    total = np.zeros(groups, dtype=np.int64)
    owned = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    up, ns = facts.owner[owned], facts.trace.dur[owned]
    while up.size and idx.size:
        pos = np.minimum(np.searchsorted(idx, up), idx.size - 1)
        hit = idx[pos] == up
        np.add.at(total, group[pos[hit]], ns[hit])
        up = facts.parent[up]
        ns = ns[up >= 0]
        up = up[up >= 0]
    return total


# Calls looked at a time by first_calls (memory, not output).
FIRST_CALLS_SLICE = 1 << 18


def first_calls(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """The events of idx that are not directly inside an event of their own name (an op that calls
    itself, aten::to inside aten::to, is one call), a slice at a time: bounded temporaries for the
    million ops of a big trace."""
    trace = facts.trace
    first = np.empty(idx.size, dtype=bool)
    for lo in range(0, idx.size, FIRST_CALLS_SLICE):
        part = idx[lo:lo + FIRST_CALLS_SLICE]
        parent = facts.parent[part]
        first[lo:lo + FIRST_CALLS_SLICE] = (parent < 0) | (trace.name[parent] != trace.name[part])
    return idx[first]


def mark_ancestors(facts: Facts, idx: np.ndarray, mask: np.ndarray) -> None:
    """Set mask for every ancestor of the events idx (in place)."""
    up = facts.parent[idx]
    up = up[up >= 0]
    while up.size:
        mask[up] = True
        up = facts.parent[up]
        up = up[up >= 0]


def short_name(name: str, limit: int = 80) -> str:
    """A kernel name without 'void ', its template arguments and parameter list, for sentences."""
    text = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    for mark in ("<", "("):
        cut = text.find(mark)
        if cut > 0:
            text = text[:cut]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def steps_text(steps: list[int]) -> str:
    """'step 0', 'steps 2, 3', 'steps 2-21 (20 steps)'."""
    if not steps:
        return ""
    if len(steps) == 1:
        return f"step {steps[0]}"
    if len(steps) <= 3:
        return "steps " + ", ".join(map(str, steps))
    return f"steps {steps[0]}-{steps[-1]} ({len(steps)} steps)"

# Runtime/driver calls that block the host until device work has finished.
# How much the profiler inflates host time on op-dense loops, whatever its options: gpu/host_sync_item's
# loop takes 1003 µs per step profiled, 1138 µs with record_shapes, 505 µs unprofiled (2.0x, 2.25x);
# gpt2_conv1d (with_stack, record_shapes) 74.9 ms profiled, ~29 ms unprofiled (2.6x; fused AdamW's
# 22.08 ms measured unprofiled, an expert's foreach 23% slower). REVIEW.md's "30-50%" undercounts it on
# these loops. Per-op idle that half the host time would close could be the profiler's own.
PROFILER_HOST_INFLATION = 2.0

COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph (\w+)")  # a compiled graph's call, by its hash
OPTIMIZER_STEP = re.compile(r"^Optimizer\.(step|zero_grad)#")
# An optimizer's step, with its class (Optimizer.step#AdamW.step), and the classes with a fused CUDA
# implementation (torch.optim: `fused=True`): unfused-optimizer's, and gpu-idle's reading of an optimizer region.
OPTIMIZER_CLASS = re.compile(r"^Optimizer\.step#(\w+)\.step$")
FUSED_OPTIMIZERS = frozenset({"Adam", "AdamW", "SGD"})
# Compiled code, as torch 2.x records it: the compiled frame, its generated wrapper, and the
# autograd function of a compiled backward (series_mlp_compile, seed_mm64_compile).
COMPILED_CODE = re.compile(r"^Torch-Compiled Region: |^## Call CompiledFxGraph|^CompiledFunction")
# The GEMM ops that do the arithmetic (matmul and linear are wrappers around them): the CPU GEMM rules' calls.
CACHE_LOOKUP = "TorchDynamo Cache Lookup"


def kernels(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"kernel"})


def memcpys(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"gpu_memcpy"})


def copy_bytes(trace: Trace, work: np.ndarray) -> np.ndarray:
    """Each copy's recorded `bytes` (0 where the trace has no number), as floats."""
    out = np.zeros(work.size, dtype=np.float64)
    for k, w in enumerate(work.tolist()):
        value = trace.args(w).get("bytes")
        out[k] = float(value) if isinstance(value, (int, float)) else 0.0
    return out


def busy_ns(facts: Facts, lo: int, hi: int) -> int:
    """Device time in [lo, hi) with some stream running work (the busiest device)."""
    return max((iv.clip(lo, hi).total for iv in facts.gpu_busy.values()), default=0)


def busy_ns_many(facts: Facts, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """busy_ns for many spans at once: per span, the busiest device's busy time in [lo, hi)
    (a cumulative sum and two searches per device, not a clip per span)."""
    out = np.zeros(np.shape(lo), dtype=np.int64)
    for iv in facts.gpu_busy.values():
        out = np.maximum(out, iv.covered(lo, hi))
    return out


def idle_ns_in(facts: Facts, idx: np.ndarray) -> np.ndarray:
    """Per event of idx: the ns of its span during which the busiest device ran nothing."""
    trace = facts.trace
    return trace.dur[idx] - busy_ns_many(facts, trace.ts[idx], trace.ts[idx] + trace.dur[idx])


def device_ns_in_window(facts: Facts) -> float:
    """The device work's time starting inside the window (1 where there is none: a share's divisor)."""
    trace = facts.trace
    lo, hi = facts.window
    return float(trace.dur[facts.is_device_work & (trace.ts >= lo) & (trace.ts < hi)].sum()) or 1.0


def profiler_stop_sync(facts: Facts) -> int:
    """The cudaDeviceSynchronize torch.profiler itself issues when it stops: the last host event at
    the root, after every step (seen at the end of every fixture). -1 if the trace has none."""
    trace = facts.trace
    roots = np.flatnonzero(facts.is_host & (facts.parent < 0))
    if roots.size == 0:
        return -1
    last = int(roots[np.argmax(trace.ts[roots])])
    if trace.event_name(last) != "cudaDeviceSynchronize":
        return -1
    if facts.steps and trace.ts[last] < facts.steps[-1].end:
        return -1
    return last


def new_shapes(facts: Facts) -> dict:
    """The record fields of the CUDA-graph advice's condition (launch-bound, overhead-bound): the ops
    that run on new shapes step after step, where they pass opargs.CHANGING_SHAPES_SHARE."""
    # read when called: a setting may change opargs' threshold
    from pista.opargs import CHANGING_SHAPES_SHARE, changing_shapes

    share, op, calls = changing_shapes(facts)
    if share < CHANGING_SHAPES_SHARE:
        return {"new_shapes_percent": 100.0 * share, "new_shape_op": "", "new_shape_calls_per_step": 0.0}
    return {"new_shapes_percent": 100.0 * share, "new_shape_op": op, "new_shape_calls_per_step": calls}


def step_ops(facts: Facts) -> np.ndarray:
    """The host's cpu_ops inside the steps (the window's without steps), as a mask."""
    ops = facts.is_host & facts.trace.category_mask({"cpu_op"})
    if facts.steps:
        ops &= facts.event_step >= 0
    return ops


@per_facts
def outer_ops(facts: Facts) -> tuple[np.ndarray, np.ndarray]:
    """The steps' cpu_ops under no other op (what the user's code called), by thread then time, and
    each one's lane key: the sequences tanh-gelu and manual-attention look for."""
    trace = facts.trace
    ops = step_ops(facts)
    outer = np.flatnonzero(ops)
    outer = outer[nearest_in(facts, ops, outer, inclusive=False) < 0]
    outer = outer[np.lexsort((trace.ts[outer], trace.lane_keys(outer)))]
    return outer, trace.lane_keys(outer)


@per_facts
def inference_steps(facts: Facts) -> list[int]:
    """The steps (indices into facts.steps) that run no autograd node and no optimizer step; without
    steps, [-1] (the window as one) where it runs none. What inference-grad-mode and
    inference-train-mode read: a training trace's steps all run a backward."""
    backward = facts.is_host & (pattern_mask(facts, AUTOGRAD_NODE) | pattern_mask(facts, OPTIMIZER_STEP))
    if not facts.steps:
        return [] if backward.any() else [-1]
    trained = set(np.unique(facts.event_step[backward]).tolist())
    return [k for k in range(len(facts.steps)) if k not in trained]


def backward_nodes(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """The autograd nodes (`autograd::engine::evaluate_function: XBackward0`) the backward ran for these
    forward ops: those whose Sequence number is one of theirs (torch gives a node its forward op's number).
    What a fix that removes the forward ops removes from the backward too."""
    # as new_shapes' import: opargs read when called
    from pista.opargs import SEQ_NONE, SEQ_ODD, sequence_numbers

    if ops.size == 0:
        return np.empty(0, np.int64)
    # the ops under them too: aten::linear's own number is its aten::t's TBackward0, AddmmBackward0 is its
    # aten::addmm's (savings/h100/loop_heads: 48 AddmmBackward0 a step, 9.8 ms of the autograd thread as profiled)
    cpu = np.flatnonzero(facts.is_host & facts.trace.category_mask({"cpu_op"}))
    ops = np.union1d(ops, cpu[nearest_in(facts, index_mask(facts, ops), cpu) >= 0])
    seqs = sequence_numbers(facts, ops)
    seqs = np.unique(seqs[(seqs != SEQ_NONE) & (seqs != SEQ_ODD)])
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD_NODE))
    if seqs.size == 0 or nodes.size == 0:
        return np.empty(0, np.int64)
    return nodes[np.isin(sequence_numbers(facts, nodes), seqs)].astype(np.int64)


def data_region_mask(facts: Facts, named_for: re.Pattern[str] = DATA_REGION) -> np.ndarray:
    """Host events that are data regions: the DataLoader's marker in any host category, and user annotations
    named for data (DATA_REGION, or the wider LOADER_REGION: on word boundaries, frameworks' names left out)."""
    trace = facts.trace
    named = trace.category_mask({"user_annotation"}) & pattern_mask(facts, named_for)
    return facts.is_host & (named | pattern_mask(facts, DATALOADER_MARKER))


@per_facts
def data_regions(facts: Facts) -> np.ndarray:
    """The outermost data regions in the steps (data_region_mask: the DataLoader's marker, regions named for
    data), in time order: data-loading's, and many-calls leaves the calls in them to it."""
    trace = facts.trace
    mask = data_region_mask(facts)
    if facts.steps:
        mask &= facts.event_step >= 0
    idx = np.flatnonzero(mask & (nearest_ancestor(facts, mask, inclusive=False) < 0))
    return idx[np.argsort(trace.ts[idx], kind="stable")].astype(np.int64)


def op_dims(facts: Facts, op: int) -> tuple[tuple[int, ...], ...]:
    """An op's recorded Input Dims, () without record_shapes."""
    dims = facts.trace.args(op).get("Input Dims")
    if not isinstance(dims, list):
        return ()
    return tuple(tuple(int(x) for x in d) if isinstance(d, list) else () for d in dims)


def gemm_calls(facts: Facts) -> np.ndarray:
    """The host's GEMM op calls inside the window (the CPU rules' work: cpu-fp32-gemm and cpu-threads)."""
    lo, hi = facts.window
    trace = facts.trace
    return np.flatnonzero(facts.is_host & pattern_mask(facts, ARITHMETIC_GEMM_OPS) & (trace.ts >= lo) & (trace.ts < hi))


def ops_by_time(facts: Facts, idx: np.ndarray, own_ns: np.ndarray) -> tuple[str, ...]:
    """The calls' op names, most own time first."""
    by_time: dict[str, float] = {}
    for i, d in zip(idx.tolist(), own_ns.tolist(), strict=True):
        by_time[facts.trace.event_name(i)] = by_time.get(facts.trace.event_name(i), 0.0) + d
    return tuple(sorted(by_time, key=lambda n: -by_time[n]))


def idle_cores(host: dict) -> tuple[int, int] | None:
    """(threads, cores) where pista_host says torch left cores idle, else None."""
    threads, cores = host.get("intra_op_threads"), host.get("cores")
    if isinstance(threads, int) and isinstance(cores, int) and 0 < threads < cores:
        return threads, cores
    return None


