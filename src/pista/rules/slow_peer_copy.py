"""The slow-peer-copy rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
slow-peer-copy`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/slow_peer_copy.ftl."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import pattern_mask
from pista.rules._common import copy_bytes, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "slow-peer-copy"
# Peer-to-peer copies (Memcpy PtoP) between one pair of GPUs at under this share of the fastest pair's rate in the
# same trace take a slower path: no NVLink between the two (PCIe, through a switch or the host). Review 6's
# gp_p2p_copy (GPUPuzzlers, one 8-GPU server): GPU0 -> GPU1 88.5 GB/s, -> GPU4 45.5 GB/s (fewer NVLink lanes: not
# flagged, 51%), -> GPU2 7.5 GB/s (8%); the 7.5 GB/s copies are 53 of the 54 ms window.
SLOW_SHARE = 0.25
# A pair's copies must average this many bytes to be measured by their bandwidth: smaller ones are bound by their
# latency (as pageable-memcpy's read-backs).
MIN_COPY_BYTES = 1 << 20
# ... and the slow pairs' copies must save at least this share of the step at the fast rate (REVIEW.md: ~1%).
MIN_STEP_SHARE = 0.01
EVIDENCE_EVENTS = 4
PEER_COPY = re.compile(r"^Memcpy PtoP")


class PeerPair(Record):
    """One pair of GPUs (copies from one to the other) and its measured rate."""

    src: int
    dst: int
    copies: int
    mib: float
    gb_s: float


class SlowPeerCopy(Record):
    slow: tuple[PeerPair, ...]  # under SLOW_SHARE of the fastest, slowest first
    fast: PeerPair  # the fastest pair in the trace
    slow_us: float  # the slow pairs' copies, over the window
    saved_us: float  # what they would save at the fast pair's rate, over the window
    steps: int


class SlowCopy(Record):
    """Note on one copy of a slow pair."""

    src: int
    dst: int
    gb_s: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    pairs = _pairs(facts)
    rate = {key: _rate(facts, work, nbytes) for key, (work, nbytes) in pairs.items() if nbytes.mean() >= MIN_COPY_BYTES}
    if len(rate) < 2:
        return []
    fast = max(rate, key=rate.__getitem__)
    slow = sorted((k for k in rate if rate[k] < SLOW_SHARE * rate[fast]), key=rate.__getitem__)
    if not slow:
        return []
    work = np.concatenate([pairs[k][0] for k in slow])
    nbytes = np.concatenate([pairs[k][1] for k in slow])
    dur = facts.trace.dur[work].astype(np.float64)
    faster = np.minimum(nbytes / rate[fast], dur)
    saved = float(dur.sum() - faster.sum())
    impact = ctx.per_step(saved)
    if impact.share < MIN_STEP_SHARE:
        return []
    record = SlowPeerCopy(slow=tuple(_pair(k, pairs[k], rate[k]) for k in slow), fast=_pair(fast, pairs[fast], rate[fast]),
                          slow_us=us(float(dur.sum())), saved_us=us(saved), steps=ctx.step_count)
    longest = np.argsort(-dur, kind="stable")[:EVIDENCE_EVENTS]
    evidence = [Evidence.of(facts, int(work[k]), SlowCopy(*_ends(facts, int(work[k])), _gb_s(nbytes[k], dur[k])))
                for k in longest]
    edit = Edit("peer copies at the fast link's rate", device_dur=(work.astype(np.int64), faster))
    return [Finding(ID, record, impact, evidence, edit=edit)]


def _pairs(facts: Facts) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """The peer copies in the window (in the steps, where there are steps), by (source GPU, destination GPU): their
    indices and their bytes (rules._common.copy_bytes: 0 where the trace has no number)."""
    trace = facts.trace
    lo, hi = facts.window
    mask = facts.is_device_work & pattern_mask(facts, PEER_COPY) & (trace.ts >= lo) & (trace.ts < hi)
    if facts.steps:
        mask &= facts.event_step >= 0
    out: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i in np.flatnonzero(mask).tolist():
        ends = _ends(facts, i)
        if ends[0] != ends[1] and min(ends) >= 0:
            out[ends].append(i)
    pairs = {k: np.asarray(v, dtype=np.int64) for k, v in out.items()}
    return {k: (work, np.maximum(copy_bytes(trace, work), 0.0)) for k, work in pairs.items()}


def _ends(facts: Facts, i: int) -> tuple[int, int]:
    """A peer copy's source and destination GPU (fromDevice, toDevice; -1 where not recorded)."""
    args = facts.trace.args(i)
    return _int(args.get("fromDevice")), _int(args.get("toDevice"))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _rate(facts: Facts, work: np.ndarray, nbytes: np.ndarray) -> float:
    """Bytes per ns (GB/s) over the copies' time together."""
    return _gb_s(float(nbytes.sum()), float(facts.trace.dur[work].sum()))


def _gb_s(nbytes: float, dur_ns: float) -> float:
    return float(nbytes) / float(dur_ns) if dur_ns > 0 else 0.0


def _pair(key: tuple[int, int], copies: tuple[np.ndarray, np.ndarray], rate: float) -> PeerPair:
    work, nbytes = copies
    return PeerPair(key[0], key[1], int(work.size), float(nbytes.sum()) / 2**20, rate)
