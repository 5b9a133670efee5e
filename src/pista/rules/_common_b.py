"""Helpers shared by the sync, copy, compile and kernel-shape rules (trailing-sync, host-sync,
compile-overhead, recompilation, ...): not a rule."""

from __future__ import annotations

import re
import weakref

import numpy as np

from pista.trace.facts import Facts

# Runtime/driver calls that block the host until device work has finished.
SYNC_NAMES = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
})
# Dynamo/Inductor compile work as torch 2.x records it (`dynamo`, `entire_frame_compile`,
# `_compile.compile_inner (dynamo_timed)`, `OutputGraph.call_user_compiler`, autotuning, the
# `..._data: compile_id=0/1` markers), seen in gpu/recompile; `CompileTime` is older torch's name.
COMPILE_EVENT = re.compile(
    r"\(dynamo_timed\)$|^dynamo$|^entire_frame_compile$|^_compile\.|^compile_attempt_|^backend_compile$"
    r"|^inductor_compile$|^OutputGraph\.|^create_aot_dispatcher_function$|^compile_fx|^fx_codegen_and_compile$"
    r"|^GraphLowering\.|^PyCodeCache\.|^async_compile\.|^CachingAutotuner\.|^bytecode_tracing$"
    r"|^build_guards$|^CompileTime|^TorchDynamo compile|_data: .*compile_id="
)
COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
CACHE_LOOKUP = "TorchDynamo Cache Lookup"

_ancestor_cache: weakref.WeakKeyDictionary[Facts, dict[bytes, np.ndarray]] = weakref.WeakKeyDictionary()


def fmt_ns(ns: float) -> str:
    """A duration given in ns, written in µs or ms."""
    value = float(ns) / 1000.0
    return f"{value / 1000.0:.3f} ms" if abs(value) >= 1000.0 else f"{value:.3f} µs"


def names(facts: Facts) -> np.ndarray:
    """Every event's name (object array, aligned with the trace)."""
    return facts.trace.name_array[facts.trace.name]


def name_mask(facts: Facts, wanted: frozenset[str] | set[str]) -> np.ndarray:
    trace = facts.trace
    ids = [i for i, n in enumerate(trace.names) if n in wanted]
    return np.isin(trace.name, np.asarray(ids, dtype=trace.name.dtype))


def pattern_mask(facts: Facts, pattern: re.Pattern[str]) -> np.ndarray:
    """Events whose name matches: the regex runs over the interned names, not over events."""
    trace = facts.trace
    ids = [i for i, n in enumerate(trace.names) if pattern.search(n)]
    return np.isin(trace.name, np.asarray(ids, dtype=trace.name.dtype))


def kernels(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"kernel"})


def memcpys(facts: Facts) -> np.ndarray:
    return facts.is_device_work & facts.trace.category_mask({"gpu_memcpy"})


def nearest_ancestor(facts: Facts, mask: np.ndarray, inclusive: bool = True) -> np.ndarray:
    """Per event, the nearest event of `mask` on its op-tree path (itself first when inclusive), or -1.

    One pass per tree level, each vectorised over the events at that level."""
    key = mask.tobytes() + bytes([inclusive])
    cache = _ancestor_cache.setdefault(facts, {})
    if key in cache:
        return cache[key]
    n = mask.shape[0]
    nearest = np.where(mask, np.arange(n), -1)  # inclusive answer
    parent, depth = facts.parent, facts.depth
    if n:
        for level in range(1, int(depth.max()) + 1):
            sel = np.flatnonzero((depth == level) & (parent >= 0) & (nearest < 0))
            nearest[sel] = nearest[parent[sel]]
    if not inclusive:
        strict = np.full(n, -1, dtype=np.int64)
        has_parent = parent >= 0
        strict[has_parent] = nearest[parent[has_parent]]
        nearest = strict
    cache[key] = nearest
    return nearest


def busy_ns(facts: Facts, lo: int, hi: int) -> int:
    """Device time in [lo, hi) with some stream running work (the busiest device)."""
    return max((iv.clip(lo, hi).total for iv in facts.gpu_busy.values()), default=0)


def step_number_at(facts: Facts, ts: int) -> int | None:
    for step in facts.steps:
        if step.start <= ts < step.end:
            return step.number
    return None


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


def launched_work(facts: Facts, launches: np.ndarray) -> np.ndarray:
    """Device work whose launching runtime call is in the `launches` mask."""
    linked = facts.is_device_work & (facts.launcher >= 0)
    out = np.zeros_like(linked)
    idx = np.flatnonzero(linked)
    out[idx] = launches[facts.launcher[idx]]
    return out
