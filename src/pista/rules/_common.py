"""Helpers shared by several rules (event masks, ancestors, launch keys, formatting): not a rule."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import weakref

import numpy as np

from pista.efficiency import ARITHMETIC_GEMM_OPS
from pista.findings import Evidence
from pista.trace.facts import INDEX, Facts, indices, per_facts

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


def fmt_ns(ns: float) -> str:
    """A duration given in ns, written in µs or ms."""
    value = float(ns) / 1000.0
    return f"{value / 1000.0:.3f} ms" if abs(value) >= 1000.0 else f"{value:.3f} µs"


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

SYNC_NAMES = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
    # ROCm: a hipStreamSynchronize after a hipGraphLaunch read as "Python between ops 100%" without these
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize",
})
# Dynamo/Inductor compile work as torch 2.x records it (`dynamo`, `entire_frame_compile`,
# `_compile.compile_inner (dynamo_timed)`, `OutputGraph.call_user_compiler`, autotuning, the
# `..._data: compile_id=0/1` markers), seen in gpu/recompile; `CompileTime` is older torch's name.
# The anchored names share one `^` (tried at each position of a name, one failed `^` is cheaper than
# twenty); the marker's test is "a line with `_data: ` and, after it, `compile_id=`", tried only at
# line starts, up to the line's first `_data: ` and never back: `_data: .*compile_id=` retried `.*`
# after every `_data: ` (quadratic: a 725 KB name of them took minutes). All linear in the name.
COMPILE_EVENT = re.compile(
    r"^(?:dynamo$|entire_frame_compile$|_compile\.|compile_attempt_|backend_compile$|inductor_compile$|OutputGraph\."
    r"|create_aot_dispatcher_function$|compile_fx|fx_codegen_and_compile$|GraphLowering\.|PyCodeCache\.|async_compile\."
    r"|CachingAutotuner\.|bytecode_tracing$|build_guards$|CompileTime|TorchDynamo compile)"
    r"|\(dynamo_timed\)$|(?m:^(?>[^\n]*?_data: )[^\n]*compile_id=)"
)
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph (\w+)")  # a compiled graph's call, by its hash
# The autograd engine's node events (the backward's work, on its own thread).
AUTOGRAD_NODE = re.compile(r"^autograd::engine::evaluate_function: ")
OPTIMIZER_STEP = re.compile(r"^Optimizer\.(step|zero_grad)#")
# An optimizer's step, with its class (Optimizer.step#AdamW.step), and the classes with a fused CUDA
# implementation (torch.optim: `fused=True`): unfused-optimizer's, and gpu-idle's reading of an optimizer region.
OPTIMIZER_CLASS = re.compile(r"^Optimizer\.step#(\w+)\.step$")
FUSED_OPTIMIZERS = frozenset({"Adam", "AdamW", "SGD"})
# Regions that fetch or build data: data-loading's, and gpu-idle reads them as input. torch's marker for
# each batch a DataLoader yields, in whatever host category the profiler gives it (torch 1.8 writes it as
# an 'Operator', a cpu_op here: kineto_resnet50_w0_2021's 62-73 ms `__next__` of each ~170 ms step; later
# torch a user_annotation).
DATALOADER_MARKER = re.compile(r"^enumerate\(DataLoader\)#")
# A record_function region the user names for data: one of these words on word boundaries, where '_',
# digits and punctuation separate words and a letter does not ('data_loading', '## data_load ##'; not
# 'DistributedDataParallel.forward' nor 'metadata', which the substring match read as data)...
DATA_WORDS = re.compile(r"(?<![a-z])(?:data|datasets?|dataloaders?|collate|prefetch(?:er)?)(?![a-z])", re.I)
# ... and, for where the host's time goes and what a region's idle is, the wider words of loading input
# ('## load_batch ##', '## copy_batch_to_gpu ##', 'slow_input'; not 'BatchNorm affine=False', read as data before:
# 'data 461 ms' for tl_normalization, 'data 103 ms' for hta_nccl_data's DDP forward)...
LOADING_WORDS = re.compile(
    rf"{DATA_WORDS.pattern}|(?<![a-z])(?:loaders?|loading|load|batch(?:es)?|inputs?)(?![a-z])", re.I)
# ... but for frameworks' regions that hold such a word and fetch no input: TorchRec's all-to-all of sparse
# features ('## sparse_data_dist ##', '## wait_sparse_data_dist ##', '## all2all_tw_data:init ##', input_dist:
# hta_distinfo_missing, hta_negq_rank0), DDP and FSDP, batch norm.
NOT_DATA = re.compile(
    r"sparse_data_dist|all_?(?:2|to)_?all|input_?dist|DistributedDataParallel|FullyShardedDataParallel|FSDP"
    r"|batch_?norm", re.I)
DATA_REGION = re.compile(rf"^(?!.*(?:{NOT_DATA.pattern})).*(?:{DATA_WORDS.pattern})", re.I | re.S)
LOADER_REGION = re.compile(rf"^(?!.*(?:{NOT_DATA.pattern})).*(?:{LOADING_WORDS.pattern})", re.I | re.S)
# Compiled code, as torch 2.x records it: the compiled frame, its generated wrapper, and the
# autograd function of a compiled backward (series_mlp_compile, seed_mm64_compile).
COMPILED_CODE = re.compile(r"^Torch-Compiled Region: |^## Call CompiledFxGraph|^CompiledFunction")
# The GEMM ops that do the arithmetic (matmul and linear are wrappers around them): the CPU GEMM rules' calls.
CACHE_LOOKUP = "TorchDynamo Cache Lookup"

_ancestor_cache: weakref.WeakKeyDictionary[Facts, dict[bytes, tuple[np.ndarray, np.ndarray]]] = (
    weakref.WeakKeyDictionary())
# Answers of nearest_ancestor kept per trace, the most recently asked: rules ask the same few masks
# one after another. On big_gpt_eager_20steps, an analysis computes 22 answers with none kept, 17
# with 2, 15 with 4 (1-2 ms each). Kept as (events with an ancestor, their ancestors), and only
# where at most 1 event in ANCESTOR_KEPT_SHARE has one (an optimizer's, a compile region's): an
# answer most events have (under some cpu_op) is 4 bytes an event, and kept from host-sync to
# trailing-sync it sat under every rule between (11 MiB of a 1 GB trace's peak).
ANCESTOR_CACHE_ENTRIES = 2
ANCESTOR_KEPT_SHARE = 4
NO_EVENT = INDEX(-1)




def names(facts: Facts) -> np.ndarray:
    """Every event's name (object array, aligned with the trace)."""
    return facts.trace.name_array[facts.trace.name]


def name_mask(facts: Facts, wanted: frozenset[str] | set[str]) -> np.ndarray:
    trace = facts.trace
    return _named(facts, [i for i, n in enumerate(trace.names) if n in wanted])


def pattern_mask(facts: Facts, pattern: re.Pattern[str]) -> np.ndarray:
    """Events whose name matches: the regex runs over the interned names, not over events, once per
    trace (rules and summaries ask for the same few patterns)."""
    matching = _matching_names(facts)
    if pattern not in matching:
        matching[pattern] = [i for i, n in enumerate(facts.trace.names) if pattern.search(n)]
    return _named(facts, matching[pattern])


@per_facts
def _matching_names(facts: Facts) -> dict[re.Pattern[str], list[int]]:
    return {}


def _named(facts: Facts, ids: list[int]) -> np.ndarray:
    """Events whose interned name is one of `ids`: a table lookup per event (np.isin sorts)."""
    table = np.zeros(len(facts.trace.names), dtype=bool)
    table[ids] = True
    return table[facts.trace.name]


def kernels(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"kernel"})


def memcpys(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"gpu_memcpy"})


def nearest_ancestor(facts: Facts, mask: np.ndarray, inclusive: bool = True) -> np.ndarray:
    """Per event, the nearest event of `mask` on its op-tree path (itself first when inclusive), or -1.
    Read-only: the answer is shared with the next caller that asks the same.

    One pass per tree level, each vectorised over the events at that level."""
    n = mask.shape[0]
    if not mask.any():
        return np.broadcast_to(NO_EVENT, (n,))  # no memory, however long the trace
    key = hashlib.blake2b(mask.tobytes(), digest_size=16, person=bytes([inclusive])).digest()
    cache = _ancestor_cache.setdefault(facts, {})
    if key in cache:
        cache[key] = cache.pop(key)  # most recently used last
        return _unpacked(cache[key], n)
    nearest = np.arange(n, dtype=INDEX)  # inclusive answer
    nearest[~mask] = NO_EVENT
    parent = facts.parent
    for level in _levels(facts):
        sel = level[nearest[level] < 0]
        nearest[sel] = nearest[parent[sel]]
    if not inclusive:
        nearest = nearest[parent]  # a root reads the last event's answer: set below
        nearest[parent < 0] = NO_EVENT
    nearest.setflags(write=False)
    if np.count_nonzero(nearest >= 0) <= n // ANCESTOR_KEPT_SHARE:
        hit = indices(nearest >= 0)
        cache[key] = (hit, nearest[hit])
        while len(cache) > ANCESTOR_CACHE_ENTRIES:
            del cache[next(iter(cache))]
    return nearest


def _unpacked(kept: tuple[np.ndarray, np.ndarray], n: int) -> np.ndarray:
    hit, ancestor = kept
    nearest = np.full(n, NO_EVENT, dtype=INDEX)
    nearest[hit] = ancestor
    nearest.setflags(write=False)
    return nearest


def nearest_in(facts: Facts, mask: np.ndarray, idx: np.ndarray, inclusive: bool = True) -> np.ndarray:
    """nearest_ancestor(facts, mask, inclusive)[idx] for events idx (none -1), climbing from them
    alone: arrays the size of idx, where nearest_ancestor makes one per event (and caches it)."""
    out = np.full(idx.size, NO_EVENT, dtype=INDEX)
    if not mask.any():
        return out
    at = np.arange(idx.size, dtype=INDEX)
    up = np.asarray(idx, dtype=INDEX) if inclusive else facts.parent[idx]
    while at.size:  # one array at a time, each let go as its successor is made
        climbing = up >= 0
        at = at[climbing]
        up = up[climbing]
        hit = mask[up]
        out[at[hit]] = up[hit]
        hit = ~hit
        at = at[hit]
        up = facts.parent[up[hit]]
    return out


@per_facts
def _levels(facts: Facts) -> list[np.ndarray]:
    """The events with a parent, by tree level (1, 2, ... up to the deepest), for what passes down
    the tree (nearest_ancestor, host time's regions): each pass reads one level's events, not every
    event."""
    depth, parent = facts.depth, facts.parent
    if not depth.size:
        return []
    deepest = int(depth.max())
    idx = indices((parent >= 0) & (depth >= 1))
    idx = idx[np.argsort(depth[idx], kind="stable")]
    bounds = np.searchsorted(depth[idx], np.arange(1, deepest + 2))
    return [idx[bounds[k]:bounds[k + 1]] for k in range(deepest)]


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


def update_starts(facts: Facts, calls: np.ndarray) -> np.ndarray:
    """Per optimizer-step call: where the optimizer's own work starts, at the call's start or, where a closure
    runs the forward and backward inside it (Lightning's `optimizer.step(closure)`), when the last autograd node
    that ends inside it ends (the update proper follows). purpose and unfused-optimizer read it."""
    trace = facts.trace
    calls = np.asarray(calls, np.int64)
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD_NODE))
    start = trace.ts[calls].astype(np.int64)
    if nodes.size == 0 or calls.size == 0:
        return start
    ends = np.sort(trace.ts[nodes] + trace.dur[nodes])
    k = np.searchsorted(ends, trace.ts[calls] + trace.dur[calls], side="right") - 1
    last = np.where(k >= 0, ends[np.maximum(k, 0)], np.iinfo(np.int64).min)
    return np.where(last > start, last, start).astype(np.int64)
