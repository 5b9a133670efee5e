"""The pageable-memcpy rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
pageable-memcpy`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/pageable_memcpy.ftl."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import COMPILE_EVENT, LOADER_REGION, SYNC_NAMES, name_mask, nearest_ancestor, pattern_mask
from pista.rules._common import memcpys, outermost_aten, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "pageable-memcpy"
# GB/s of a pinned copy where the trace has none to compare: gpu/pageable_memcpy's 64 MiB pinned H2D copy on
# the H200 took 1.21 ms (55 GB/s, PCIe Gen5 x16).
PINNED_GB_S = 55.0
# The share of a pageable copy call's host time a pinned, non_blocking one keeps: it only queues the copy
# (gpu/pageable_memcpy's pinned 64 MiB cudaMemcpyAsync: 12 µs, against 9.5 ms for the pageable one).
PINNED_CALL_SHARE = 0.01
# The pageable copies must save at least this share of the median step: gpu/pageable_memcpy's
# 64 MiB copy 15%, gpu/pageable_behind_kernels' 256 KiB copy 3.7%, gpu/gpu_idle_dataloader's 2 MiB
# batch 1.7%; below 1% a copy is noise (REVIEW.md).
MIN_STEP_SHARE = 0.01
# Pinned copies at least this big give the bandwidth to compare with; smaller ones (.item()'s 4 bytes)
# measure latency (gpu/pageable_memcpy's pinned 64 MiB: 55.3 GB/s).
PINNED_MIN_BYTES = 1 << 20
# Read-backs (DtoH) smaller than this are bound by their latency (a few µs however they are staged), not by the
# bandwidth pinning raises, and the host waits for their values pinned or not: their cost is the round trip and its
# sync, host-sync's (review 6: gp_d2h_sync_final's 4,097 one-element `.cpu()` copies of 4 bytes were told "copy into
# a preallocated pinned tensor"). An upload of any size stays: non_blocking from pinned memory ends its wait
# (kineto_resnet50_w0_early's small label uploads hold the host behind the queued work).
LATENCY_BOUND_BYTES = 64 << 10
EVIDENCE_EVENTS = 6

PAGEABLE = re.compile(r"Pageable")
PINNED = re.compile(r"Pinned")
DIRECTION = re.compile(r"^Memcpy (\w+)")
STEP_REGION = re.compile(r"^ProfilerStep#")
# A region that loads input: the record_function names of hand-written loaders (gpu/gpu_idle_dataloader's
# `data_loading`) and the DataLoader iterator's own (`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`),
# on word boundaries, frameworks' names left out (a copy in DDP's forward is not the batch's): _common.LOADER_REGION.
# torch's DataLoader iterator: where it feeds the steps, a host-to-device copy after it is the batch's
# (gpu/resnet_loader: `x.cuda()` right after `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`)
DATALOADER = re.compile(r"^enumerate\(DataLoader\)#")


class CopyGroup(Record):
    """The pageable copies one op issued in one region, in one direction, over the window."""

    direction: str  # "HtoD" or "DtoH"
    op: str  # the outermost op that issued them (aten::to), or the runtime call without an op
    region: str | None  # the record_function region around the op ('data_loading')
    loader: bool  # that region loads input (its name says data/load/batch...), or a DataLoader feeds the steps
    copies: int
    mib: float
    device_us: float  # the copies on the GPU
    gb_s: float  # their bandwidth
    blocked_us: float  # host blocked in their runtime calls and the op's syncs
    # of that, what the GPU spent computing nothing (the impact, over the window); for a read-back (DtoH) at
    # most its staging, the copies' time beyond pinned ones'
    saved_us: float
    pinned_gb_s: float | None  # pinned copies of the same direction in this trace, to compare


class PageableMemcpy(Record):
    steps: int
    groups: tuple[CopyGroup, ...]  # costliest first
    blocked_us: float  # over the window
    saved_us: float  # over the window
    step_share_percent: float


class PageableCopy(Record):
    """Note on a copy on the GPU lane."""

    mib: float
    gb_s: float
    pinned_gb_s: float | None


class BlockedCopyCall(Record):
    """Note on the host call that blocked for the copy."""

    blocked_us: float
    saved_us: float
    read_back: bool = False  # a DtoH copy: saved_us is its staging, the rest a wait for queued work


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    copies = memcpys(facts)
    pageable = copies & pattern_mask(facts, PAGEABLE) & (facts.launcher >= 0)
    pageable[[i for i in np.flatnonzero(pageable).tolist() if _latency_bound_read_back(facts.trace, i)]] = False
    if facts.steps:
        pageable &= facts.event_step >= 0
    if not pageable.any():
        return []
    # copies made while compiling are recompilation's
    compiling = nearest_ancestor(facts, facts.is_host & pattern_mask(facts, COMPILE_EVENT)) >= 0
    pageable[np.flatnonzero(pageable)[compiling[facts.launcher[pageable]]]] = False

    # one hit per op call: its pageable copies, and the runtime calls it blocked in
    calls: dict[int, list[int]] = defaultdict(list)
    for w in np.flatnonzero(pageable).tolist():
        launch = int(facts.launcher[w])
        op = outermost_aten(facts, launch)
        calls[op if op >= 0 else launch].append(w)
    syncs = _syncs_by_op(facts, set(calls))
    pinned = _pinned_bandwidth(facts, copies)
    blocked: dict[int, int] = {}
    saved: dict[int, int] = {}
    starts = _busy_starts(facts)
    waits: list[int] = []
    for op, work in calls.items():
        parts = sorted({int(facts.launcher[w]) for w in work} | set(syncs.get(op, [])))
        blocked[op], saved[op] = _cost(facts, starts, op, parts)
        if _reads_back(facts.trace, work):
            # the host needs the values: it still waits for the work queued before the copy; the fix saves
            # the staging, the copy's time beyond a pinned one's
            saved[op] = min(saved[op], _staging_ns(facts.trace, work, pinned))
        else:
            waits += parts
    total = sum(saved.values())
    impact = ctx.per_step(total)
    if impact.share < MIN_STEP_SHARE:
        return []

    groups = _groups(facts, calls, blocked, saved, pinned)
    record = PageableMemcpy(steps=ctx.step_count, groups=groups, blocked_us=us(sum(blocked.values())),
                            saved_us=us(total), step_share_percent=100.0 * impact.share)
    return [Finding(ID, record, impact, _evidence(facts, calls, blocked, saved, pinned),
                    edit=_pinned_edit(facts, calls, waits, pinned))]


def _latency_bound_read_back(trace, i: int) -> bool:
    """A DtoH copy of a known size under LATENCY_BOUND_BYTES."""
    return _direction(trace, i) == "DtoH" and 0 < _bytes(trace, i) < LATENCY_BOUND_BYTES


def _reads_back(trace, work: list[int]) -> bool:
    """Whether an op call's pageable copies bring values to the host (DtoH): the host reads them, so a pinned
    copy still waits for the work queued before it."""
    return any(_direction(trace, w) == "DtoH" for w in work)


def _pinned_ns(trace, w: int, pinned: dict[str, float]) -> float:
    """ns a copy takes at the pinned bandwidth (the trace's own pinned copies, else PINNED_GB_S), at most its own."""
    nbytes = _bytes(trace, w)
    rate = pinned.get(_direction(trace, w), PINNED_GB_S)
    return min(nbytes / rate, float(trace.dur[w])) if nbytes > 0 else float(trace.dur[w])


def _staging_ns(trace, work: list[int], pinned: dict[str, float]) -> int:
    """ns the copies take beyond pinned ones of the same bytes: what pinning saves a read-back."""
    return int(sum(float(trace.dur[w]) - _pinned_ns(trace, w, pinned) for w in work))


def _pinned_edit(facts: Facts, calls: dict[int, list[int]], waits: list[int], pinned: dict[str, float]) -> Edit:
    """What a pinned copy with non_blocking=True does: the host stops waiting for it (its calls and its op's
    syncs; `waits`, an upload's: a read-back's host still waits for the values, and for the work queued before
    them, foreign/hta_negq_rank0's 8.6 KB read-backs 146 ms behind an all-to-all), its copy calls stop staging
    the data through the driver's bounce buffer (a pageable H2D call returns when the last chunk is staged,
    before its copy ends: savings/h100/copy_pageable_tensor's cudaMemcpyAsync held the host 3.3 ms for a 3.2 ms
    copy), and the copy runs at the pinned bandwidth (the trace's own pinned copies, else PINNED_GB_S)."""
    trace = facts.trace
    work = np.asarray(sorted(w for ws in calls.values() for w in ws), np.int64)
    dur = np.array([_pinned_ns(trace, int(w), pinned) for w in work], dtype=np.float64)
    launchers = np.unique(facts.launcher[work]).astype(np.int64)
    return Edit("pinned copies", unblock=np.asarray(waits, np.int64), device_dur=(work, dur),
                host_scale=((launchers, PINNED_CALL_SHARE),))



def _syncs_by_op(facts: Facts, ops: set[int]) -> dict[int, list[int]]:
    """The sync calls inside each of these op calls (the stream sync a pageable copy implies)."""
    out: dict[int, list[int]] = defaultdict(list)
    for i in np.flatnonzero(facts.is_host & name_mask(facts, SYNC_NAMES)).tolist():
        op = outermost_aten(facts, i)
        if op in ops:
            out[op].append(i)
    return out


def _cost(facts: Facts, starts: np.ndarray, op: int, parts: list[int]) -> tuple[int, int]:
    """ns the host was blocked in the calls, and of that what the GPU spent computing nothing:
    at most the kernel-free time from the first call's start to the next device work after the last."""
    trace = facts.trace
    start = int(trace.ts[parts].min())
    end = int((trace.ts[parts] + trace.dur[parts]).max())
    step = int(facts.event_step[op]) if facts.steps else -1
    stop = facts.steps[step].end if step >= 0 else facts.window[1]
    pos = np.searchsorted(starts, end)
    nxt = max(end, min(int(starts[pos]) if pos < starts.size else stop, stop))
    computing = max((iv.clip(start, nxt).total for iv in facts.kernel_busy.values()), default=0)
    blocked = int(trace.dur[parts].sum())
    return blocked, min(blocked, max(0, nxt - start - computing))


def _groups(facts: Facts, calls: dict[int, list[int]], blocked: dict[int, int], saved: dict[int, int],
            pinned: dict[str, float]) -> tuple[CopyGroup, ...]:
    trace = facts.trace
    regions = nearest_ancestor(facts, facts.is_host & trace.category_mask({"user_annotation"})
                               & ~pattern_mask(facts, STEP_REGION), inclusive=False)
    acc: dict[tuple[str, str, str | None], dict[str, float]] = {}
    for op, work in calls.items():
        region = trace.event_name(int(regions[op])) if regions[op] >= 0 else None
        for direction in sorted({_direction(trace, w) for w in work}):
            mine = [w for w in work if _direction(trace, w) == direction]
            share = len(mine) / len(work)  # an op with copies both ways splits its cost by count
            a = acc.setdefault((direction, trace.event_name(op), region),
                               {"copies": 0, "bytes": 0, "dev": 0, "blocked": 0, "saved": 0})
            a["copies"] += len(mine)
            a["bytes"] += sum(_bytes(trace, w) for w in mine)
            a["dev"] += int(trace.dur[mine].sum())
            a["blocked"] += blocked[op] * share
            a["saved"] += saved[op] * share
    fed = bool(pattern_mask(facts, DATALOADER).any())
    out = [CopyGroup(direction=d, op=op, region=region,
                     loader=bool(region and LOADER_REGION.search(region)) or (fed and d == "HtoD"),
                     copies=int(a["copies"]), mib=a["bytes"] / 2**20, device_us=us(a["dev"]),
                     gb_s=a["bytes"] / a["dev"] if a["dev"] else 0.0, blocked_us=us(a["blocked"]),
                     saved_us=us(a["saved"]), pinned_gb_s=pinned.get(d))
           for (d, op, region), a in acc.items()]
    return tuple(sorted(out, key=lambda g: -g.saved_us))


def _evidence(facts: Facts, calls: dict[int, list[int]], blocked: dict[int, int], saved: dict[int, int],
              pinned: dict[str, float]) -> list[Evidence]:
    """The costliest op calls' copies, each with the host call that blocked for it."""
    trace = facts.trace
    out: list[Evidence] = []
    for op in sorted(calls, key=lambda o: -saved[o]):
        for w in calls[op]:
            if len(out) + 2 > EVIDENCE_EVENTS:
                return out
            rate = _bytes(trace, w) / trace.dur[w] if trace.dur[w] else 0.0
            out.append(Evidence.of(facts, w, PageableCopy(_bytes(trace, w) / 2**20, float(rate),
                                                          pinned.get(_direction(trace, w)))))
            launch = int(facts.launcher[w])
            out.append(Evidence.of(facts, launch, BlockedCopyCall(us(blocked[op]), us(saved[op]),
                                                                  _direction(trace, w) == "DtoH")))
    return out


def _bytes(trace, i: int) -> int:
    value = trace.args(i).get("bytes")
    return int(value) if isinstance(value, (int, float)) else 0


def _direction(trace, i: int) -> str:
    match = DIRECTION.match(trace.event_name(i))
    return match.group(1) if match else "?"


def _pinned_bandwidth(facts: Facts, copies: np.ndarray) -> dict[str, float]:
    """GB/s of the pinned copies per direction, to compare against (bytes/ns == GB/s)."""
    trace = facts.trace
    out: dict[str, list[tuple[int, int]]] = {}
    for i in np.flatnonzero(copies & pattern_mask(facts, PINNED)).tolist():
        nbytes = _bytes(trace, i)
        if nbytes >= PINNED_MIN_BYTES and trace.dur[i] > 0:
            out.setdefault(_direction(trace, i), []).append((nbytes, int(trace.dur[i])))
    return {d: sum(b for b, _ in v) / sum(t for _, t in v) for d, v in out.items()}


def _busy_starts(facts: Facts) -> np.ndarray:
    starts = [iv.start for iv in facts.gpu_busy.values()]
    return np.sort(np.concatenate(starts)) if starts else np.empty(0, np.int64)
