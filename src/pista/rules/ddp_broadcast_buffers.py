"""The ddp-broadcast-buffers rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
ddp-broadcast-buffers`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/ddp_broadcast_buffers.ftl."""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Evidence, Finding, Record, steps_of
from pista.query import name_mask, pattern_mask
from pista.rules._common import busy_ns, outer_ops, us
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

ID = "ddp-broadcast-buffers"
DDP_FORWARD = frozenset({"DistributedDataParallel.forward"})
# The ops of DDP's buffer sync, and the copies back into the buffers that follow the unflatten.
SYNC_OPS = frozenset({"aten::flatten_dense_tensors", "aten::unflatten_dense_tensors", "c10d::broadcast_",
                      "record_param_comms"})
COPY_OPS = frozenset({"aten::copy_"})
BROADCAST = frozenset({"c10d::broadcast_"})
# Ops that update buffers in the forward (BatchNorm's running statistics), and SyncBatchNorm's, which computes them
# alike on every rank.
BATCH_NORM = re.compile(r"^aten::(?:batch_norm|native_batch_norm|cudnn_batch_norm|miopen_batch_norm|_batch_norm_impl_index)$")
SYNC_BATCH_NORM = re.compile(r"^aten::batch_norm_(?:gather_stats|gather_stats_with_counts|elemt|stats)$|SyncBatchNorm")
# At least this share of the median step (hta_nccl_data: 17%); below it the sync is noise (REVIEW.md: ~1%).
MIN_STEP_SHARE = 0.02
EVIDENCE_CALLS = 2


class DdpBroadcastBuffers(Record):
    steps: int
    calls: int  # DistributedDataParallel.forward calls that synced buffers
    sync_us: float  # per step: from the sync's first op to its last copy
    idle_us: float  # per step: of it, with the GPU idle
    copies_per_call: float  # buffers copied back per forward
    broadcasts_per_call: float
    batch_norm: bool  # BatchNorm runs in the steps: its running statistics change every forward
    sync_batch_norm: bool  # SyncBatchNorm's ops run: the ranks compute the statistics alike


class SyncNote(Record):
    """Note on one forward's buffer sync."""

    sync_us: float
    idle_us: float
    copies: int


@per_facts
def _found(facts: Facts) -> list[tuple[int, int, np.ndarray]]:
    """Per forward that syncs its buffers: the sync's start, end and outermost ops; [] where they are under
    MIN_STEP_SHARE of the step with the GPU idle."""
    if not facts.has_gpu or not facts.steps:
        return []
    trace = facts.trace
    forwards = np.flatnonzero(facts.is_host & name_mask(facts, DDP_FORWARD) & (facts.event_step >= 0))
    syncs = [s for s in (_sync(facts, int(f)) for f in forwards.tolist()) if s is not None]
    spans = [(int(trace.ts[ops[0]]), int(trace.ts[ops[-1]] + trace.dur[ops[-1]]), ops) for ops in syncs]
    idle = sum((b - a) - busy_ns(facts, a, b) for a, b, _ in spans)
    return spans if spans and steps_of(facts).per_step(float(idle)).share >= MIN_STEP_SHARE else []


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle under the buffer syncs (empty where the rule does not fire): overhead-bound leaves it out."""
    spans = _found(facts)
    if not spans:
        return merge_intervals(np.empty(0, np.int64), np.empty(0, np.int64))
    busy = max(facts.gpu_busy.values(), key=lambda iv: iv.total)
    return merge_intervals(np.array([a for a, _, _ in spans], np.int64), np.array([b for _, b, _ in spans], np.int64)
                           ).subtract(busy)


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    spans = _found(facts)
    if not spans:
        return []
    idle = [(b - a) - busy_ns(facts, a, b) for a, b, _ in spans]
    impact = ctx.per_step(float(sum(idle)))
    n = ctx.step_count
    ops = np.concatenate([o for _, _, o in spans])
    copies = [int(name_mask(facts, COPY_OPS)[o].sum()) for _, _, o in spans]
    record = DdpBroadcastBuffers(
        steps=n, calls=len(spans), sync_us=us(sum(b - a for a, b, _ in spans)) / n, idle_us=us(sum(idle)) / n,
        copies_per_call=float(np.mean(copies)), broadcasts_per_call=float(name_mask(facts, BROADCAST)[ops].sum()) / len(spans),
        batch_norm=bool((facts.is_host & pattern_mask(facts, BATCH_NORM) & (facts.event_step >= 0)).any()),
        sync_batch_norm=bool((facts.is_host & pattern_mask(facts, SYNC_BATCH_NORM)).any()))
    evidence = [Evidence.of(facts, int(o[0]), SyncNote(us(b - a), us(i), c))
                for (a, b, o), i, c in list(zip(spans, idle, copies, strict=True))[:EVIDENCE_CALLS]]
    return [Finding(ID, record, impact, evidence, edit=Edit("broadcast_buffers=False", remove=ops.astype(np.int64)))]


def _sync(facts: Facts, forward: int) -> np.ndarray | None:
    """The outermost ops of one forward's buffer sync, in time order: from its first flatten or broadcast to the
    last copy after its last unflatten, before the module's first other op; None where it broadcasts nothing."""
    trace = facts.trace
    outer, _ = outer_ops(facts)
    lo, hi = int(trace.ts[forward]), int(trace.ts[forward] + trace.dur[forward])
    mine = outer[(trace.ts[outer] >= lo) & (trace.ts[outer] < hi) & (trace.lane_keys(outer) == trace.lane_keys(
        np.array([forward]))[0])]
    sync, copy = name_mask(facts, SYNC_OPS)[mine], name_mask(facts, COPY_OPS)[mine]
    if not sync.any() or not name_mask(facts, BROADCAST)[mine].any():
        return None
    first = int(np.argmax(sync))
    end = first
    while end + 1 < mine.size and (sync[end + 1] or copy[end + 1]):
        end += 1
    return mine[first:end + 1]
