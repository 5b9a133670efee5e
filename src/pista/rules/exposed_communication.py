"""What:
The step waits on communication: collectives (NCCL kernels on the GPU, gloo's all-reduce on the
CPU) run while nothing else does, so their time adds straight onto the step instead of hiding
behind the backward pass or other compute.

Why:
Data-parallel training overlaps the all-reduce of one gradient bucket with the backward of the
next; only what is left when compute runs out is paid for. Exposed communication grows with the
number of ranks and the model size, and it is also where ranks wait for a slower peer, so it is
often the first place scaling efficiency goes.

Example:
Two gloo ranks training a 4-layer 256-wide MLP with DDP (0.25 MB buckets) on the CPU: each step's
all-reduces overlap backward for only part of their time, and the main thread waits for the rest
(tests/fixtures/gloo/balanced_2). With a slowed peer (straggler_2), the waiting rank's exposed
communication is most of its step.

Impact:
Per step: the communication work during which no compute runs (on the GPU, no other kernel or
copy; on gloo's threads, no op of the compute threads), summed over the steps and divided by their
number; share of the median step. An upper bound: the last bucket's all-reduce always ends the
backward alone. Over a folder (`pista analyze DIR`), the part that is this rank waiting for a late
peer is the straggler's impact, not this one's: it is taken out here, and the finding stays only if
what is left still passes the thresholds. Before, the rule reported the median share and a fixed
warning. balanced_2: 2.6 ms of a 6.7 ms step on rank 0 (38%), 5.6 of 9.8 ms on rank 1 (57%);
straggler_2 rank 0 alone 36.4 of 39.4 ms (92%), of which 31.9 ms is its wait for rank 1 (in the
folder: 4.6 ms, 12%, warning).

The advice follows the collective that exposes the most, read from the trace: the work's own
'Collective name' argument, else the host call that launched it (`nccl:all_to_all`, `c10d::alltoall_base_`,
`record_param_comms`' 'Collective name'), else the kernel's name (AllReduce, AllGather, ReduceScatter,
Broadcast; SendRecv alone says nothing: NCCL 2.1x runs every collective of hta_negq_rank0 as
`ncclKernel_SendRecv`). Before, every exposure got DDP's all-reduce advice, TorchRec's all-to-all of
embeddings included (hta_diff_control: 42 `nccl:all_to_all`; hta_negq_rank0, hta_sampled_rank0:
`c10d::alltoall_base_`).

Fix:
Give communication compute to hide behind. An all-reduce (DDP's gradients): tune DDP's
`bucket_cap_mb` so buckets start earlier, keep `gradient_as_bucket_view=True`, accumulate gradients
over several micro-batches under `no_sync()`, shard with FSDP/ZeRO and prefetch, or compress
gradients (DDP comm hooks). An all-to-all (TorchRec's input and embedding distribution, a mixture of
experts' tokens): overlap it with the previous batch's compute (TorchRec's `TrainPipelineSparseDist`
runs the next batch's input distribution during this one's forward and backward), and check the ranks
for imbalance (a rank with more ids or tokens makes every other wait). All-gather and reduce-scatter
(FSDP's parameters and gradients): prefetch (`forward_prefetch=True`,
`backward_prefetch=BackwardPrefetch.BACKWARD_PRE`; FSDP2 `set_modules_to_forward_prefetch`) and wrap in
fewer, larger units. If a peer is late (see `straggler`), fix that rank first: the wait is its lateness.
"""

from __future__ import annotations

import re
from collections import defaultdict

import msgspec
import numpy as np

from pista.distributed.comm import communication
from pista.findings import Context, Evidence, Finding, Impact, Record
from pista.rules._common import short_name, us
from pista.trace.facts import Facts

ID = "exposed-communication"
# Share of the median step spent in communication with no compute beside it. A well-bucketed DDP
# step exposes little more than its last bucket's all-reduce; in a compute-heavy gloo capture (tiny
# gradients, long matmuls) it was ~1% of the step, while every fixture of tests/fixtures/gloo
# exposes 38-93% (0.25 MB buckets over loopback on 2 shared cores). A tenth of every step is a cost
# worth removing; below it the last bucket alone explains it.
MIN_EXPOSED_SHARE = 0.10
# ... and at least this much per step (µs), so sub-millisecond toy steps do not fire on noise.
MIN_EXPOSED_US = 500.0
EVIDENCE_EVENTS = 5
# The collective a name says, read lower-cased with its '_', ':' and spaces taken out ('nccl:_all_gather_base',
# 'c10d::alltoall_base_', 'ncclKernel_AllReduce_RING_LL_Sum_float', record_param_comms' 'allreduce'); the first
# that matches wins (all-to-all before all-reduce: 'alltoall' holds no 'allreduce', but 'reducescatter' holds
# 'reduce'). SendRecv is left out: NCCL runs all-to-all, point-to-point and, in some versions, every collective
# as ncclKernel_SendRecv (hta_negq_rank0's all-reduces too).
KIND_OF = (
    (re.compile(r"alltoall|all2all"), "all_to_all"),
    (re.compile(r"allreduce"), "all_reduce"),
    (re.compile(r"allgather"), "all_gather"),
    (re.compile(r"reducescatter"), "reduce_scatter"),
    (re.compile(r"broadcast"), "broadcast"),
)
# How far up from the launching runtime call the host's collective call is looked for: cudaLaunchKernel <
# nccl:all_to_all < record_param_comms < c10d::alltoall_base_ (hta_negq_rank0)
KIND_DEPTH = 6


class LatePeer(Record):
    """The part of the exposure that is this rank waiting for a late rank (a folder's analysis)."""

    rank: int
    wait_us: float  # per step


class ExposedCommunication(Record):
    domain: str  # "gpu": NCCL kernels on a stream; "host": gloo's work on its threads
    collective: str  # the communication work that exposes the most time
    collectives: int  # communication work events inside the steps
    steps: int
    exposed_us: float  # per step: communication with no compute beside it
    comm_us: float  # per step: communication work (union)
    step_us: float  # the median step (the window without steps)
    overlap_share: float  # of the communication, the part with compute beside it
    late_peer: LatePeer | None = None  # set over a folder: the wait for a late rank, inside exposed_us
    # what that work is, the kind exposing most of its time: all_reduce, all_to_all, all_gather, reduce_scatter,
    # broadcast, or "" where the trace does not say (a SendRecv kernel with no host call above it)
    kind: str = ""
    kinds: tuple[tuple[str, float], ...] = ()  # per kind the trace names, the exposed µs per step, most first

    @property
    def own_exposed_us(self) -> float:
        """What this rank's own overlap could save: the exposure less the wait for a late peer."""
        return max(0.0, self.exposed_us - (self.late_peer.wait_us if self.late_peer else 0.0))


class ExposedCall(Record):
    """Note on one communication event: how much of it ran with no compute beside it."""

    exposed_us: float
    dur_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    stats = communication(facts)
    if not stats.has_comm or stats.exposed <= 0:
        return []
    impact = ctx.per_step(stats.exposed)
    if not _worth_it(impact):
        return []
    trace = facts.trace
    idx, exposed = stats.work_index, stats.work_exposed
    by_name: dict[str, int] = defaultdict(int)
    for i, e in zip(idx.tolist(), exposed.tolist(), strict=True):
        by_name[trace.event_name(i)] += e
    top = max(by_name, key=lambda n: by_name[n])
    named = np.array([trace.event_name(i) == top for i in idx.tolist()], dtype=bool)
    record = ExposedCommunication(
        domain=stats.domain,
        collective=short_name(top),
        kind=_top(_by_kind(facts, idx[named], exposed[named])),
        kinds=tuple((k, us(v) / ctx.step_count) for k, v in _by_kind(facts, idx, exposed).items()),
        collectives=stats.collectives,
        steps=ctx.step_count,
        exposed_us=impact.us,
        comm_us=us(stats.comm) / ctx.step_count,
        step_us=us(ctx.step_ns),
        overlap_share=stats.overlap_share or 0.0,
    )
    longest = np.argsort(-exposed, kind="stable")[:EVIDENCE_EVENTS]
    evidence = [Evidence.of(facts, int(idx[k]), ExposedCall(us(exposed[k]), us(trace.dur[idx[k]]))) for k in longest]
    return [Finding(ID, record, impact, evidence)]


def _by_kind(facts: Facts, idx: np.ndarray, exposed: np.ndarray) -> dict[str, int]:
    """Per collective kind the trace names (KIND_OF), the exposed ns of these work events, most first."""
    by_kind: dict[str, int] = defaultdict(int)
    for i, e in zip(idx.tolist(), exposed.tolist(), strict=True):
        kind = _collective(facts, int(i))
        if kind:
            by_kind[kind] += int(e)
    return dict(sorted(by_kind.items(), key=lambda kv: -kv[1]))


def _top(by_kind: dict[str, int]) -> str:
    return next(iter(by_kind), "")


def _collective(facts: Facts, i: int) -> str:
    """What one communication work event is: its own 'Collective name', else the host call that launched it
    (climbing from the launch), else its name."""
    trace = facts.trace
    names = [str(trace.args(i).get("Collective name") or "")]
    j, depth = int(facts.launcher[i]), 0
    while j >= 0 and depth < KIND_DEPTH:
        names += [str(trace.args(j).get("Collective name") or ""), trace.event_name(j)]
        j, depth = int(facts.parent[j]), depth + 1
    names.append(trace.event_name(i))
    for name in names:
        found = _kind(name)
        if found:
            return found
    return ""


def _kind(name: str) -> str:
    flat = re.sub(r"[\s_:.\-]", "", name.lower())
    return next((kind for pattern, kind in KIND_OF if pattern.search(flat)), "")


def with_late_peer(finding: Finding, peer_rank: int, wait_us: float) -> Finding | None:
    """The finding re-estimated over a folder, where `wait_us` per step of its exposure is this rank
    waiting for the late `peer_rank` (the straggler's impact): None when what is left is too small."""
    r: ExposedCommunication = finding.record
    record = msgspec.structs.replace(r, late_peer=LatePeer(peer_rank, min(max(wait_us, 0.0), r.exposed_us)))
    own = record.own_exposed_us
    impact = Impact(own, min(1.0, own / max(r.step_us, 1e-9)))
    if not _worth_it(impact):
        return None
    return Finding(finding.rule, record, impact, list(finding.evidence), lang=finding.lang)


def _worth_it(impact: Impact) -> bool:
    return impact.share >= MIN_EXPOSED_SHARE and impact.us >= MIN_EXPOSED_US
