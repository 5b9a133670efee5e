"""Where the host's time goes, per thread: forward, backward, optimizer, data, other, and waiting.

Each host event's self time goes to the nearest region above it (the optimizer's
`Optimizer.step#`/`zero_grad#`, the autograd engine's `evaluate_function` or a region named
backward, a region named for data or input loading, forward or an `nn.Module`), else `other`.
Waiting is time the host is blocked, not overhead: the self time of sync calls, and a thread's time in
a backward region while an autograd thread does the work (the caller sleeps in `backward()`).
"""

from __future__ import annotations

import re

import numpy as np

from pista.rules._common import SYNC_NAMES, _levels, name_mask, pattern_mask
from pista.trace.facts import Facts, merge_intervals
from pista.trace.model import lane_key

REGIONS = ("forward", "backward", "optimizer", "data", "other", "waiting")
_CODE = {r: i for i, r in enumerate(REGIONS)}
# Earlier entries win where regions nest (an optimizer step inside a region named "train"). Names of
# record_function regions (user annotations) only, but for torch's own markers: a cpu_op or a Python
# frame whose name holds "load" or "input" is not a data loader.
PATTERNS = (
    ("optimizer", re.compile(r"^Optimizer\.(step|zero_grad)#"), None),
    ("backward", re.compile(r"^autograd::engine::evaluate_function"), None),
    ("backward", re.compile(r"backward", re.I), "user_annotation"),
    ("data", re.compile(r"data|load|batch|input|collate|prefetch|dataset", re.I), "user_annotation"),
    ("forward", re.compile(r"forward", re.I), "user_annotation"),
    ("forward", re.compile(r"^nn\.Module:"), None),
)
DTOH = re.compile(r"^Memcpy DtoH")
AUTOGRAD = re.compile(r"^autograd::engine::evaluate_function")
# Blocking runtime calls beyond the syncs: a synchronous copy waits for the device.
BLOCKING = SYNC_NAMES | {"cudaMemcpy", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2"}
# Threads with less than this share of the host's self time are left out.
MIN_THREAD_SHARE = 0.01


def host_time(facts: Facts) -> dict[str, dict[str, float]]:
    """{thread lane: {region: µs per step}} inside the window, busiest thread first."""
    trace = facts.trace
    lo, hi = facts.window
    host = facts.is_host & (trace.ts >= lo) & (trace.ts < hi)
    if not host.any():
        return {}
    region = _regions(facts)
    region[facts.is_host & name_mask(facts, BLOCKING)] = _CODE["waiting"]
    # the launch of a device-to-host copy waits for it (gpu/host_sync_item: 37.6 µs per step of
    # cudaMemcpyAsync under .item(), beside its stream syncs)
    dtoh = facts.is_device_work & trace.category_mask({"gpu_memcpy"}) & pattern_mask(facts, DTOH) & (facts.launcher >= 0)
    region[facts.launcher[dtoh]] = _CODE["waiting"]
    idx = np.flatnonzero(host)
    lanes_of = lane_key(trace.pid, trace.tid)
    lanes, inverse = np.unique(lanes_of[idx], return_inverse=True)
    asleep = _waiting_for_autograd(facts, lanes_of)[idx]
    self_ns = facts.self_time[idx].astype(np.float64)
    sums = np.zeros((lanes.size, len(REGIONS)))
    np.add.at(sums, (inverse, region[idx].astype(np.int64)), self_ns - asleep)
    np.add.at(sums, (inverse, np.full(idx.size, _CODE["waiting"])), asleep)
    steps = len(facts.steps) or 1
    total = float(sums.sum()) or 1.0
    out = {}
    for k in np.argsort(-sums.sum(axis=1)).tolist():
        if sums[k].sum() < MIN_THREAD_SHARE * total:
            continue
        first = int(idx[np.argmax(inverse == k)])
        out[facts.lane_of(first)] = {r: float(sums[k, j]) / steps / 1000.0 for j, r in enumerate(REGIONS)}
    return out


def _regions(facts: Facts) -> np.ndarray:
    """Per event: the region of the first PATTERNS entry on its op-tree path (itself included), else
    other. One pass down the tree carrying a bit per entry, not a pass per entry."""
    trace = facts.trace
    bits = np.zeros(len(trace), dtype=np.uint8)  # room for 8 entries
    for k, (_, pattern, category) in enumerate(PATTERNS):
        marks = facts.is_host & pattern_mask(facts, pattern)
        if category is not None:
            marks &= trace.category_mask({category})
        bits[marks] |= np.uint8(1 << k)
    for level in _levels(facts):  # parents before their children
        bits[level] |= bits[facts.parent[level]]
    region = np.full(len(trace), _CODE["other"], dtype=np.int8)
    for k in reversed(range(len(PATTERNS))):  # the earliest entry wins
        region[(bits & (1 << k)) != 0] = _CODE[PATTERNS[k][0]]
    return region


def _waiting_for_autograd(facts: Facts, lanes_of: np.ndarray) -> np.ndarray:
    """Per event: ns of its self time on another thread while the autograd engine works (the caller
    asleep in backward(); big_gpt_eager_20steps: 37 ms per step of `train_step`'s self time)."""
    trace = facts.trace
    out = np.zeros(len(trace), dtype=np.float64)
    engine = facts.is_host & pattern_mask(facts, AUTOGRAD)
    if not engine.any():
        return out
    busy = merge_intervals(trace.ts[engine], trace.ts[engine] + trace.dur[engine])
    cum = np.concatenate(([0], np.cumsum(busy.end - busy.start)))

    def covered(x: np.ndarray) -> np.ndarray:
        """Engine-busy ns before time x."""
        k = np.searchsorted(busy.start, x, side="right")
        inside = np.maximum(0, np.minimum(x, busy.end[np.maximum(k - 1, 0)]) - busy.start[np.maximum(k - 1, 0)])
        return cum[np.maximum(k - 1, 0)] + np.where(k > 0, inside, 0)

    others = facts.is_host & ~np.isin(lanes_of, np.unique(lanes_of[engine]))
    idx = np.flatnonzero(others)
    overlap = (covered(trace.ts[idx] + trace.dur[idx]) - covered(trace.ts[idx])).astype(np.float64)
    total = np.zeros(len(trace), dtype=np.float64)
    total[idx] = overlap
    children = np.zeros(len(trace), dtype=np.float64)
    with_parent = idx[facts.parent[idx] >= 0]
    np.add.at(children, facts.parent[with_parent], total[with_parent])
    out[idx] = np.clip(total[idx] - children[idx], 0.0, facts.self_time[idx])
    return out
