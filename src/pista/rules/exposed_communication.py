"""The exposed-communication rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
exposed-communication`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/exposed_communication.ftl."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import NamedTuple

import msgspec
import numpy as np

from pista.distributed.comm import communication
from pista.findings import Context, Evidence, Finding, Impact, Record
from pista.query import name_mask, pattern_mask
from pista.rules import _one_time as one_time
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
# nccl:all_to_all < record_param_comms < c10d::alltoall_base_ (hta_negq_rank0); DTensor's Redistribute sits within
# it: cudaLaunchKernelExC < nccl:reduce_scatter_tensor_coalesced < c10d::reduce_scatter_tensor_coalesced_ <
# _c10d_functional::reduce_scatter_tensor < Redistribute (rtx4090_tp2_llama_dim1024)
KIND_DEPTH = 6
# FSDP's own markers: FSDP2's record_function regions (FSDP::all_gather, FSDP::pre_forward...), FSDP1's
# FullyShardedDataParallel.forward and _pre_forward. With one in the trace, an all-gather or reduce-scatter moves
# FSDP's parameters and gradients.
FSDP_MARK = re.compile(r"FSDP|FullyShardedDataParallel")
# DTensor changing a tensor's placement (Shard <-> Replicate, Partial -> Shard): tensor and sequence parallelism's
# activations (39 in each tokenomics rtx4090_tp2_llama forward); and the functional collectives DTensor and
# compiled tensor parallelism call, which say the same in a window with no backward.
REDISTRIBUTE = "Redistribute"
FUNCTIONAL_COLLECTIVE = re.compile(r"^_?c10d_functional::")
# A backward in the window: the autograd engine's nodes, or a compiled backward.
BACKWARD = re.compile(r"^autograd::engine::evaluate_function: |Backward")
# What a collective moves, from its host call's 'Input type' or record_param_comms' 'dtype', else from the NCCL
# kernel's name (ncclDevKernel_ReduceScatter_Sum_f32_RING_LL); all-gather kernels name none (they copy bytes).
DTYPES = {"float": "fp32", "Float": "fp32", "c10::BFloat16": "bf16", "BFloat16": "bf16", "c10::Half": "fp16",
          "Half": "fp16", "double": "fp64", "Double": "fp64"}
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp64": 8}
KERNEL_DTYPE = re.compile(r"_(f32|bf16|f16|f64)_")
# A call of a collective at least this many times the median of its calls (same kernel, same recorded inputs)
# waits for another rank to arrive: rtx4090_tp2_llama_annot's last all-gather takes 442 ms against a 3.6 ms median
# (123x), while a transfer of the same message varies far less (dim1024's calls after the first stay within 1.75x
# of their 13.7 ms median; the first, NCCL connecting, 4.4x).
WAIT_RATIO = 10.0
# ... and such calls are rare, at most this share of the collective's calls: a peer late at every step is the
# straggler's pattern, told over a folder of ranks (gloo/straggler_2: rank 1 sleeps before every step).
WAIT_MAX_SHARE = 0.1
# A collective's first call in the window at least this many times the median of its later calls, with none of
# those in a later step as slow, is its one-time set-up (NCCL connecting to its peers, the ranks' first pass):
# dim1024's first reduce-scatter 59.7 ms against 13.7 ms (4.4x), annot's first all-gather 15.4 against 3.6 ms.
# kernel-variability's single-outlier ratio. Only NCCL's, and only in a window that holds first calls (_cold).
SETUP_RATIO = 2.0
# Calls of a collective besides the one judged, at least, to speak of their median.
MIN_SIBLINGS = 3


class LatePeer(Record):
    """The part of the exposure that is this rank waiting for a late rank (a folder's analysis)."""

    rank: int
    wait_us: float  # per step


class PeerWait(Record):
    """Calls of a collective far longer than its other calls: waits for another rank to arrive."""

    kind: str  # the collective (KIND_OF), "" where not named
    calls: int  # such calls
    dur_us: float  # the longest
    median_us: float  # the median of the collective's calls
    siblings: int  # the collective's calls in the window
    exposed_us: float  # per step: their time with no compute beside it, less the median's


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
    # whose the communication is: "tp" (tensor/sequence parallelism's activations: DTensor Redistribute, no FSDP
    # marker), "fsdp" (FSDP's markers in the trace), "" (the trace does not say)
    role: str = ""
    forward_only: bool = False  # no backward in the window
    redistributes: float = 0.0  # DTensor Redistribute calls per step
    dtype: str = ""  # what the top collective moves: fp32, bf16, fp16, fp64 ("" not recorded)
    message_bytes: float = 0.0  # its calls' median input, bytes (0: not recorded)
    wait: PeerWait | None = None  # calls that wait for another rank (WAIT_RATIO)
    setup_us: float = 0.0  # in the window: first calls' one-time set-up (SETUP_RATIO), left out of exposed_us
    setup_ratio: float = 0.0  # the longest such first call over its later calls' median

    @property
    def own_exposed_us(self) -> float:
        """What this rank's own overlap could save: the exposure less the wait for a late peer."""
        return max(0.0, self.exposed_us - (self.late_peer.wait_us if self.late_peer else 0.0))


class ExposedCall(Record):
    """Note on one communication event: how much of it ran with no compute beside it."""

    exposed_us: float
    dur_us: float


class WaitingCall(Record):
    """Note on a call far longer than its collective's other calls: a wait for another rank."""

    dur_us: float
    median_us: float


class SetupCall(Record):
    """Note on a collective's first call, far slower than its later ones: one-time set-up."""

    dur_us: float
    median_us: float


class _Host(NamedTuple):
    """What the host calls above one communication work event say about it."""

    kind: str  # KIND_OF's, "" where nothing names it
    inputs: str  # the collective call's 'Input Dims' as text ("" not recorded): calls moving the same tensors
    dtype: str
    nbytes: int  # 0: not recorded
    redistribute: bool  # launched under DTensor's Redistribute
    functional: bool  # launched under a functional collective


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    stats = communication(facts)
    if not stats.has_comm or stats.exposed <= 0:
        return []
    idx, exposed = stats.work_index, stats.work_exposed
    hosts = [_host(facts, int(i)) for i in idx.tolist()]
    setup, setup_ratio, setup_calls = _setup(facts, idx, exposed, hosts) if _cold(ctx, stats.domain) else (0, 0.0, {})
    impact = ctx.per_step(max(stats.exposed - setup, 0))
    if not _worth_it(impact):
        return []
    top, named = _top_collective(facts, idx, exposed)
    mine = [h for h, n in zip(hosts, named.tolist(), strict=True) if n]
    wait, waiting = _wait(ctx, idx, exposed, hosts)
    record = ExposedCommunication(
        domain=stats.domain,
        collective=short_name(top),
        kind=_top(_by_kind(mine, exposed[named])),
        kinds=tuple((k, us(v) / ctx.step_count) for k, v in _by_kind(hosts, exposed).items()),
        collectives=stats.collectives,
        steps=ctx.step_count,
        exposed_us=impact.us,
        comm_us=us(stats.comm) / ctx.step_count,
        step_us=us(ctx.step_ns),
        overlap_share=stats.overlap_share or 0.0,
        role=_role(facts, hosts),
        forward_only=not pattern_mask(facts, BACKWARD).any(),
        redistributes=float(np.count_nonzero(facts.is_host & name_mask(facts, frozenset({REDISTRIBUTE}))))
        / ctx.step_count,
        dtype=_dtype(facts, idx[named], mine) or _dtype(facts, idx, hosts),
        message_bytes=float(np.median([h.nbytes for h in mine if h.nbytes] or [0])),
        wait=wait, setup_us=us(setup), setup_ratio=setup_ratio,
    )
    return [Finding(ID, record, impact, _evidence(facts, idx, exposed, waiting, setup_calls))]


def _top_collective(facts: Facts, idx: np.ndarray, exposed: np.ndarray) -> tuple[str, np.ndarray]:
    """The collective kernel name with the most exposed time, and which of the calls are its."""
    trace = facts.trace
    by_name: dict[str, int] = defaultdict(int)
    for i, e in zip(idx.tolist(), exposed.tolist(), strict=True):
        by_name[trace.event_name(i)] += e
    top = max(by_name, key=lambda n: by_name[n])
    return top, np.array([trace.event_name(i) == top for i in idx.tolist()], dtype=bool)


def _evidence(facts: Facts, idx: np.ndarray, exposed: np.ndarray, waiting: dict[int, float],
              setup_calls: dict[int, float]) -> list[Evidence]:
    """The calls with the most exposed time, each noted as a wait for another rank, a first call's set-up, or
    its exposed share."""
    trace = facts.trace
    out = []
    for k in np.argsort(-exposed, kind="stable")[:EVIDENCE_EVENTS].tolist():
        i = int(idx[k])
        dur = us(trace.dur[i])
        note: Record = ExposedCall(us(exposed[k]), dur)
        if i in waiting:
            note = WaitingCall(dur, waiting[i])
        elif i in setup_calls:
            note = SetupCall(dur, setup_calls[i])
        out.append(Evidence.of(facts, i, note))
    return out


def _groups(facts: Facts, idx: np.ndarray, hosts: list[_Host]) -> dict[tuple[int, str], list[int]]:
    """Positions in idx (time order) by collective: the same kernel moving the same recorded tensors."""
    trace = facts.trace
    groups: dict[tuple[int, str], list[int]] = defaultdict(list)
    for k, (i, h) in enumerate(zip(idx.tolist(), hosts, strict=True)):
        groups[(int(trace.name[i]), h.inputs)].append(k)
    return groups


def _setup(facts: Facts, idx: np.ndarray, exposed: np.ndarray, hosts: list[_Host]
           ) -> tuple[int, float, dict[int, float]]:
    """The first calls that are one-time set-up (SETUP_RATIO): their exposed ns above their collective's later
    calls' median, summed; the largest ratio; and per such call, that median in µs."""
    trace = facts.trace
    dur = trace.dur[idx].astype(np.float64)
    total, ratio, calls = 0, 0.0, {}
    first_of_name: set[int] = set()
    for (name, _), members in sorted(_groups(facts, idx, hosts).items(), key=lambda kv: kv[1][0]):
        first = members[0]
        if name in first_of_name or len(members) <= MIN_SIBLINGS:
            continue
        first_of_name.add(name)
        later = np.array(members[1:])
        median = float(np.median(dur[later]))
        if median <= 0 or dur[first] < SETUP_RATIO * median or _recurs(facts, idx, first, later, dur, median):
            continue
        total += int(min(exposed[first], dur[first] - median))
        ratio = max(ratio, float(dur[first] / median))
        calls[int(idx[first])] = us(median)
    return total, ratio, calls


def _cold(ctx: Context, domain: str) -> bool:
    """Whether first calls can be NCCL's set-up: its kernels (gloo connects when the group is made), in a window
    that holds the process's first calls, as a one-time rule reports (dead-window in both tokenomics traces; none
    in the gloo fixtures, whose first all-reduce of a step is as slow as 2.1x its others from the scheduler alone)."""
    return domain == "gpu" and any(one_time.findings(ctx, rule_id) for rule_id in one_time.ORDER)


def _recurs(facts: Facts, idx: np.ndarray, first: int, later: np.ndarray, dur: np.ndarray, median: float) -> bool:
    """Whether a call of a later step is as slow as the first (SETUP_RATIO): a peer late at every step."""
    if len(facts.steps) < 2:
        return False
    steps = facts.event_step[idx]
    return bool(((steps[later] > steps[first]) & (dur[later] >= SETUP_RATIO * median)).any())


def _wait(ctx: Context, idx: np.ndarray, exposed: np.ndarray, hosts: list[_Host]
          ) -> tuple[PeerWait | None, dict[int, float]]:
    """The rare calls far longer than their collective's other calls (WAIT_RATIO, WAIT_MAX_SHARE): waits for
    another rank. The collective with the most such time, and per such call its collective's median (µs)."""
    facts = ctx.facts
    dur = facts.trace.dur[idx].astype(np.float64)
    best: PeerWait | None = None
    waiting: dict[int, float] = {}
    for members in _groups(facts, idx, hosts).values():
        if len(members) <= MIN_SIBLINGS:
            continue
        m = np.array(members)
        median = float(np.median(dur[m]))
        slow = m[dur[m] >= WAIT_RATIO * median] if median > 0 else m[:0]
        if not slow.size or slow.size > WAIT_MAX_SHARE * m.size:
            continue
        waiting.update({int(idx[k]): us(median) for k in slow.tolist()})
        lost = float(np.clip(exposed[slow] - median, 0, None).sum())
        found = PeerWait(hosts[int(slow[0])].kind, int(slow.size), us(dur[slow].max()), us(median), int(m.size),
                         us(lost) / ctx.step_count)
        if best is None or found.exposed_us > best.exposed_us:
            best = found
    return best, waiting


def _role(facts: Facts, hosts: list[_Host]) -> str:
    """Whose the communication is: FSDP's (its markers in the trace), tensor parallelism's (DTensor redistributing,
    or functional collectives with no backward), or "" (not said)."""
    if pattern_mask(facts, FSDP_MARK).any():
        return "fsdp"
    if any(h.redistribute for h in hosts):
        return "tp"
    if any(h.functional for h in hosts) and not pattern_mask(facts, BACKWARD).any():
        return "tp"
    return ""


def _dtype(facts: Facts, idx: np.ndarray, hosts: list[_Host]) -> str:
    """What these calls move: their host calls' type, else their kernels' names' ("" where neither says)."""
    said = [h.dtype for h in hosts if h.dtype]
    if said:
        return max(set(said), key=said.count)
    for i in idx.tolist():
        m = KERNEL_DTYPE.search(facts.trace.event_name(i))
        if m:
            return {"f32": "fp32", "bf16": "bf16", "f16": "fp16", "f64": "fp64"}[m.group(1)]
    return ""


def _by_kind(hosts: list[_Host], exposed: np.ndarray) -> dict[str, int]:
    """Per collective kind the trace names (KIND_OF), the exposed ns of these work events, most first."""
    by_kind: dict[str, int] = defaultdict(int)
    for h, e in zip(hosts, exposed.tolist(), strict=True):
        if h.kind:
            by_kind[h.kind] += int(e)
    return dict(sorted(by_kind.items(), key=lambda kv: -kv[1]))


def _top(by_kind: dict[str, int]) -> str:
    return next(iter(by_kind), "")


def _host(facts: Facts, i: int) -> _Host:
    """What one communication work event is (its own 'Collective name', else the host call that launched it,
    climbing from the launch, else its name), what it moves, and under which calls it was launched."""
    trace = facts.trace
    names = [str(trace.args(i).get("Collective name") or "")]
    inputs, dtype, nbytes = "", "", 0
    redistribute = functional = False
    j, depth = int(facts.launcher[i]), 0
    while j >= 0 and depth < KIND_DEPTH:
        args, name = trace.args(j), trace.event_name(j)
        names += [str(args.get("Collective name") or ""), name]
        if not inputs and isinstance(args.get("Input Dims"), list):
            inputs, dtype, nbytes = _payload(args)
        dtype = dtype or DTYPES.get(str(args.get("dtype") or ""), "")
        redistribute |= name == REDISTRIBUTE
        functional |= bool(FUNCTIONAL_COLLECTIVE.match(name))
        j, depth = int(facts.parent[j]), depth + 1
    names.append(trace.event_name(i))
    kind = next((found for found in map(_kind, names) if found), "")
    return _Host(kind, inputs, dtype, nbytes, redistribute, functional)


def _payload(args: dict) -> tuple[str, str, int]:
    """A collective call's recorded inputs: their dims as text, the first tensor's dtype and bytes (0 unknown)."""
    dims, types = args.get("Input Dims") or [], args.get("Input type") or []
    first = dims[0] if dims else []
    while isinstance(first, list) and first and isinstance(first[0], list):  # a TensorList: its first tensor
        first = first[0]
    dtype = DTYPES.get(str(types[0]), "") if types else ""
    count = int(np.prod(first)) if isinstance(first, list) and first and all(isinstance(d, int) for d in first) else 0
    return str(dims), dtype, count * DTYPE_BYTES.get(dtype, 0)


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
