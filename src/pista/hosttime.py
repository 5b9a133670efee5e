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
# Host events per slice when measuring their overlap with the autograd engine: bounds the temporaries.
SLICE = 1 << 18
# Threads with less than this share of the host's self time are left out.
MIN_THREAD_SHARE = 0.01


def host_time(facts: Facts) -> dict[str, dict[str, float]]:
    """{thread lane: {region: µs per step}} inside the window, busiest thread first."""
    trace = facts.trace
    lo, hi = facts.window
    # the host events only, here and below: full-length lanes and sums would be the summary's peak
    hosts = np.flatnonzero(facts.is_host)
    in_window = (trace.ts[hosts] >= lo) & (trace.ts[hosts] < hi)
    if not in_window.any():
        return {}
    region = _regions(facts)
    region[facts.is_host & name_mask(facts, BLOCKING)] = _CODE["waiting"]
    # the launch of a device-to-host copy waits for it (gpu/host_sync_item: 37.6 µs per step of
    # cudaMemcpyAsync under .item(), beside its stream syncs)
    dtoh = facts.is_device_work & trace.category_mask({"gpu_memcpy"}) & pattern_mask(facts, DTOH) & (facts.launcher >= 0)
    region[facts.launcher[dtoh]] = _CODE["waiting"]
    lane = lane_key(trace.pid[hosts], trace.tid[hosts])
    asleep = _waiting_for_autograd(facts, hosts, lane)[in_window]
    idx, lane = hosts[in_window], lane[in_window]
    del hosts, in_window
    lanes = np.unique(lane)
    inverse = np.searchsorted(lanes, lane).astype(np.int32)
    del lane
    width = len(REGIONS)
    # ns, integers in float64: exact, whatever the order of the adds
    sums = np.bincount(inverse * width + _CODE["waiting"], weights=asleep, minlength=lanes.size * width)
    self_ns = facts.self_time[idx].astype(np.float64)
    self_ns -= asleep
    del asleep
    sums += np.bincount(inverse * width + region[idx], weights=self_ns, minlength=lanes.size * width)
    sums = sums.reshape(lanes.size, width)
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


def _waiting_for_autograd(facts: Facts, hosts: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Per host event (`hosts`, their lanes `lane`): ns of its self time on another thread while the
    autograd engine works (the caller asleep in backward(); big_gpt_eager_20steps: 37 ms per step of
    `train_step`'s self time)."""
    trace = facts.trace
    out = np.zeros(hosts.size, dtype=np.float64)
    engine = pattern_mask(facts, AUTOGRAD)[hosts]
    if not engine.any():
        return out
    busy = merge_intervals(trace.ts[hosts[engine]], trace.ts[hosts[engine]] + trace.dur[hosts[engine]])

    others = np.flatnonzero(~np.isin(lane, np.unique(lane[engine])))  # the other threads' events
    if others.size == 0:
        return out
    # what the clip below gives one that overlaps nothing: 0, or its self time where that is negative
    # (python_function frames that overlap without nesting); such events add nothing to a parent's
    out[others] = np.minimum(facts.self_time[hosts[others]], 0)
    found = []  # the ones that overlap the engine's work, a slice at a time
    for lo in range(0, others.size, SLICE):
        events = hosts[others[lo:lo + SLICE]]
        overlap = busy.covered(trace.ts[events], trace.ts[events] + trace.dur[events])
        found.append((others[lo:lo + SLICE][overlap > 0], overlap[overlap > 0]))
    pos = np.concatenate([p for p, _ in found])
    overlap = np.concatenate([o for _, o in found]).astype(np.float64)
    events = hosts[pos]
    # what their children overlap, summed on the parents that are host events too
    parent = facts.parent[events]
    child = np.flatnonzero(parent >= 0)
    at = np.minimum(np.searchsorted(hosts, parent[child]), hosts.size - 1)
    is_host = hosts[at] == parent[child]
    children = np.bincount(at[is_host], weights=overlap[child[is_host]], minlength=hosts.size)
    out[pos] = np.clip(overlap - children[pos], 0.0, facts.self_time[events])
    return out
