"""The outside-wait rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
outside-wait`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/outside_wait.ftl."""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Evidence, Finding, Impact, Record, Severity
from pista.query import SYNC_NAMES, name_mask, nearest_ancestor, pattern_mask
from pista.rules import _one_time as one_time
from pista.rules._common import busy_ns, copy_bytes, outermost_aten, profiler_stop_sync, step_at, us
from pista.trace.facts import Facts

ID = "outside-wait"

# A call blocking this long with the GPU idle is not a copy's or a launch's own cost (a blocking 4-byte copy
# takes 10-40 µs; the SGLang traces' waits are 463 and 493 ms).
MIN_CALL_NS = 1_000_000
# ... with the GPU running at most this share of the call: foreign/tl_sglang_decode 29 µs of 463 ms (0.006%),
# tl_sglang_prefilldecode 12 µs of 493 ms; a copy waiting behind queued work runs the GPU most of the call
# (savings/h100/copy_pageable_tensor's 3.3 ms call over a 3.2 ms copy).
MAX_BUSY_SHARE = 0.1
# ... and the calls together at least this share of the median step (the window without steps): the SGLang
# traces 97.7% and 50%; below it the wait is not what the window is about.
MIN_STEP_SHARE = 0.05
# A call whose own copy moves its bytes at this rate over the call or faster is staging them on the host (a
# pageable copy: pageable-memcpy's), not waiting: kineto's resnet50_num_workers_4 sample copies 18.4 MiB from
# pageable memory in a 40 ms cudaMemcpyAsync with the GPU idle (0.46 GB/s); the SGLang waits move 60 and
# 256 bytes in 463-493 ms.
STAGING_GB_S = 0.1
EVIDENCE_CALLS = 3  # the longest calls; presentation

BLOCKING = re.compile(r"Memcpy|Memset|Synchroni[sz]e")
PAGEABLE = re.compile(r"Pageable")


class BlockedCall(Record):
    """One call that blocked the host with the GPU idle."""

    name: str  # the runtime call (hipMemcpyWithStream)
    op: str | None  # the torch op it sits in (aten::copy_)
    dur_us: float
    busy_us: float  # GPU work running during it
    step: int | None


class OutsideWait(Record):
    calls: int
    blocked_us: float  # over the window
    steps: int  # steps in the window (1 without steps)
    step_share_percent: float  # of the median step (the window without steps)
    longest: tuple[BlockedCall, ...]


class WaitNote(Record):
    """Note on a blocked call."""

    busy_us: float
    op: str | None


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    found = []
    for i in np.flatnonzero(_candidates(ctx)).tolist():
        a, b = int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])
        busy = busy_ns(facts, a, b)
        if busy <= MAX_BUSY_SHARE * (b - a):
            found.append((i, busy))
    if not found:
        return []
    total = sum(int(trace.dur[i]) for i, _ in found)
    share = ctx.per_step(total).share
    if share < MIN_STEP_SHARE:
        return []
    found.sort(key=lambda x: -int(trace.dur[x[0]]))
    rows = [BlockedCall(trace.event_name(i), _op(facts, i), us(trace.dur[i]), us(busy),
                        step_at(facts, int(trace.ts[i]))) for i, busy in found[:EVIDENCE_CALLS]]
    record = OutsideWait(calls=len(found), blocked_us=us(total), steps=ctx.step_count,
                         step_share_percent=100.0 * share, longest=tuple(rows))
    evidence = [Evidence.of(facts, i, WaitNote(row.busy_us, row.op))
                for (i, _), row in zip(found[:EVIDENCE_CALLS], rows, strict=True)]
    return [Finding(ID, record, Impact.none(), evidence, severity=Severity.INFO)]


def _candidates(ctx: Context) -> np.ndarray:
    """Host runtime calls that block (copies, memsets, syncs) MIN_CALL_NS or longer in the window: not explicit
    syncs outside any op, the profiler's stop sync, nor start-up the one-time rules own."""
    facts = ctx.facts
    trace = facts.trace
    calls = facts.is_host & trace.category_mask({"cuda_runtime", "cuda_driver"}) & pattern_mask(facts, BLOCKING)
    calls &= trace.dur >= MIN_CALL_NS
    lo, hi = facts.window
    calls &= (trace.ts >= lo) & (trace.ts < hi)
    if facts.steps:
        calls &= facts.event_step >= 0
    if not calls.any():
        return calls
    in_op = nearest_ancestor(facts, trace.category_mask({"cpu_op"}), inclusive=False) >= 0
    calls &= ~(name_mask(facts, SYNC_NAMES) & ~in_op)
    stop = profiler_stop_sync(facts)
    if stop >= 0:
        calls[stop] = False
    idx = np.flatnonzero(calls)
    calls[idx[one_time.covered(one_time.claimed(ctx), trace.ts[idx])]] = False
    # the calls staging their own copy (its bytes over the call's time), or copying pageable memory
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    work = work[calls[facts.launcher[work]]]
    staging = pattern_mask(facts, PAGEABLE)[work] | (copy_bytes(trace, work) >= STAGING_GB_S * trace.dur[facts.launcher[work]])
    calls[facts.launcher[work[staging]]] = False
    return calls


def _op(facts: Facts, i: int) -> str | None:
    op = outermost_aten(facts, i)
    return facts.trace.event_name(op) if op >= 0 else None
