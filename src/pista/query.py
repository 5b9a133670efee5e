"""Queries of the derived facts that the summary (host time, what device work is for), the table and the rules
all ask: events by name and by pattern, the nearest ancestor on the op tree and the tree's levels, where an
optimizer step's own work starts, whether the host's ops were recorded at all, and the names of the event
families they classify by (syncs, compile work, autograd nodes, data regions). Below the rules: they import
these, never the other way (pista.rules._common holds what the rules alone share)."""

from __future__ import annotations

import hashlib
import re
import weakref

import numpy as np

from pista.trace.facts import INDEX, Facts, indices, per_facts

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
# A device-to-host copy, by its name (torch's `Memcpy DtoH (Device -> Pageable)`, `... -> Pinned)`): a read-back
# whose values the host waits for.
DTOH_COPY = re.compile(r"^Memcpy DtoH")
# The autograd engine's node events (the backward's work, on its own thread).
AUTOGRAD_NODE = re.compile(r"^autograd::engine::evaluate_function: ")
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
    for level in levels(facts):
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
def levels(facts: Facts) -> list[np.ndarray]:
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


def cpu_activity_missing(facts: Facts) -> bool:
    """Whether the trace holds device work and the runtime calls that launched it but no op or annotation on the
    host: recorded with ProfilerActivity.CUDA alone (review 4: a4000_sevit_cold and _warm, TraceLens'
    tl_mi210_gpu_only). The host's time between runtime calls is then unknown: Python, ops, a data loader or
    waiting."""
    return facts.has_gpu and bool(facts.is_launch.any()) and not bool((facts.is_host & ~facts.is_launch).any())
