"""The gpu-idle rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
gpu-idle`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/gpu_idle.ftl."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.purpose import CODE, classify
from pista.query import AUTOGRAD_NODE, LOADER_REGION, name_mask, nearest_in, pattern_mask
from pista.rules import _one_time as one_time
from pista.rules._claims import claim_of
from pista.rules._common import (
    FUSED_OPTIMIZERS,
    OPTIMIZER_CLASS,
    OPTIMIZER_STEP,
    data_region_mask,
    index_mask,
    kernel_launches,
    short_name,
    step_at,
    us,
)
from pista.rules._common import evidence as event_evidence
from pista.rules._idle import ledger, spans, subtract, sum_under
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals

ID = "gpu-idle"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# Below this share of the step the idle is noise (REVIEW.md: under ~1% is worth nothing).
MIN_SHARE = 0.01
EVIDENCE_GAPS = 3
TOP_OPS = 3
TOP_REGIONS = 3
CHUNK = 1 << 18  # ops _ops_inside measures at a time (memory, not output)
# The idle in no recorded op is named where it is this share of the claimed idle (gpu/gpu_idle_dataloader:
# its time.sleep, ~4.7 of 13.8 ms a step; below a tenth it is the gaps between ops).
NO_OP_SHARE = 0.1
# What a region's idle is, read from its own name and ops, for the advice (issue: every region was told
# "input work: load in DataLoader workers", hta_nccl_data's '## optimizer ##' included):
# - "optimizer": named for the optimizer, or at least OPTIMIZER_SHARE of its time under the optimizer's
#   step markers (Optimizer.step#) and foreach/fused ops (hta_nccl_data's '## optimizer ##': 14.7 of 14.8 ms
#   in Optimizer.step#SGD.step; hta_sampled_rank0's: Shampoo's and EMAOptimizer's steps);
# - "start-up": at least STARTUP_SHARE of its idle in calls that start CUDA up (_one_time.startup_ops, CUDA's
#   module loading), or, in a window without steps, its only call starts before the trace's first device
#   work (damaged_fields' '[param|cuda]', whose 29.9 s cudaDeviceGetStreamPriorityRange the damage hid);
# - "input": a data region (the DataLoader's marker, a region named for loading input: _common.LOADER_REGION), or one
#   whose idle holds no compute op (GEMM, convolution, attention, recurrent, an autograd node): host work,
#   copies, Python (gpu/gpu_idle_dataloader, numpy_preprocess);
# - "collective": at least COLLECTIVE_SHARE of its idle ends where a collective queued before that idle began
#   starts: the GPU had work and waited for the other ranks, the host for its result (hta_negq_rank0's
#   '## KJTAllToAllSplitsAwaitable wait() ##': TorchRec's all-to-all of the split sizes, queued 0.2-0.6 ms before
#   a 4.7 ms idle and run at its end, then copied to the host; told "load in DataLoader workers" before);
# - "host": the rest, work of the model's own on the host (hta_backward_thread's '## backward ##').
KINDS = ("input", "optimizer", "start-up", "collective", "host")
OPTIMIZER_SHARE = 0.5
STARTUP_SHARE = 0.5
COLLECTIVE_SHARE = 0.5
OPTIMIZER_NAME = re.compile(r"(?<![a-z])optim(?:i[sz]ers?)?(?![a-z])", re.I)
OPTIMIZER_OPS = re.compile(r"^aten::_(?:foreach|fused)_")
COMPUTE_OPS = re.compile(
    r"^aten::(?:mm|addmm|bmm|baddbmm|matmul|linear|einsum|_?convolution|conv\d?d|cudnn_convolution\w*"
    r"|scaled_dot_product_attention|_scaled_dot_product\w*|lstm|gru|rnn_tanh|rnn_relu)$")


class Region(Record):
    """A region that launches (almost) nothing, and the GPU idle under its calls."""

    name: str
    calls: int  # calls with idle under them
    host_us_per_call: float  # their mean wall time
    launches_per_call: float  # kernel, copy and memset launches under each
    idle_us_per_step: float
    kind: str = "input"  # what its idle is (KINDS): input, optimizer, start-up, host
    optimizer: str = ""  # an optimizer region's class, the one with most time in it (Optimizer.step#SGD.step: SGD)
    mode: str = ""  # an optimizer region's mode from its ops: fused | foreach | per-parameter ("" none recorded)
    collective: str = ""  # a collective region's: the host op that launched the collective it waits on

    @property
    def fusable(self) -> bool:
        """The optimizer has fused=True (torch.optim's Adam, AdamW, SGD)."""
        return self.optimizer in FUSED_OPTIMIZERS


class GpuIdle(Record):
    steps: int
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    idle_us_per_step: float  # all GPU idle in the steps
    claimed_us_per_step: float  # under the regions (the impact)
    regions: tuple[Region, ...]  # most idle first
    ops_self_us: tuple[tuple[str, float], ...]  # host ops with the most self time in that idle, per step
    # of that idle, per step, the time no recorded op or runtime call covers: Python, I/O or sleeping
    # (gpu/gpu_idle_dataloader: its 4 ms time.sleep a step, which no op names)
    no_op_us_per_step: float
    longest_gap_us: float

    @property
    def names_no_op(self) -> bool:
        """The idle in no recorded op is worth naming (NO_OP_SHARE of the claim)."""
        return self.no_op_us_per_step >= NO_OP_SHARE * self.claimed_us_per_step


class IdleGap(Record):
    """Note on a stretch of GPU idle under a region."""

    idle_us: float


class UnderRegion(Record):
    """Note on the call of a region the GPU idled under."""

    launches: int
    idle_us: float


class SelfTime(Record):
    """Note on a host op with self time inside the idle."""

    self_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    book = ledger(facts)
    if book is None:
        return []
    # the idle under the optimizer steps unfused-optimizer reports is its finding (fused=True, priced from a
    # measured pair), not this one's: hta_nccl_data's '## optimizer ##' is Optimizer.step#SGD.step's
    claim = subtract(book.claims["data"], claim_of(facts, "unfused-optimizer"))
    impact = ctx.per_step(claim.total)
    if impact.share < MIN_SHARE:
        return []
    n = ctx.step_count
    trace = facts.trace
    src = np.unique(book.sources["data"])
    launches = sum_under(facts, kernel_launches(facts), src)  # aligned with src
    idle = claim.covered(trace.ts[src], trace.ts[src] + trace.dur[src])
    regions = _regions(facts, claim, src, launches, idle, n)
    longest = np.argsort(claim.start - claim.end, kind="stable")
    ops = _ops_inside(facts, claim)
    record = GpuIdle(steps=n, has_steps=bool(facts.steps), step_us=us(ctx.step_ns),
                     idle_us_per_step=us(book.idle.total) / n, claimed_us_per_step=impact.us,
                     regions=tuple(regions[:TOP_REGIONS]),
                     ops_self_us=tuple((trace.names[k], us(v) / n) for k, (v, _) in ops[:TOP_OPS]),
                     no_op_us_per_step=us(_outside_ops(facts, claim).total) / n,
                     longest_gap_us=us(claim.end[longest[0]] - claim.start[longest[0]]))
    lane = f"GPU {book.device}"
    evidence = [Evidence.span("GPU idle", lane, int(claim.start[k]), int(claim.end[k]), step_at(facts, int(claim.start[k])),
                              IdleGap(us(claim.end[k] - claim.start[k]))) for k in sorted(longest[:EVIDENCE_GAPS])]
    for r in regions[:2]:
        at = np.flatnonzero(trace.name[src] == trace.names.index(r.name))
        calls = src[at]
        k = int(at[np.argmax(claim.covered(trace.ts[calls], trace.ts[calls] + trace.dur[calls]))])
        best = int(src[k])
        evidence.append(event_evidence(facts, best, UnderRegion(int(launches[k]), us(
            claim.covered(trace.ts[[best]], trace.ts[[best]] + trace.dur[[best]])[0]))))
    for _, (v, i) in ops[:TOP_OPS]:
        if all(e.name != trace.event_name(i) for e in evidence):
            evidence.append(event_evidence(facts, i, SelfTime(us(v) / n)))
    # named regions doing host work (NumPy preprocessing, a loader, I/O) are a cause the user can move; idle
    # under no region is a symptom of what runs there
    return [Finding(ID, record, impact, evidence, edit=Edit("work off the GPU's path", host_scale_spans=((claim, 0.0),)),
                    symptom=False if regions else None)]


def _regions(facts: Facts, claim: Intervals, src: np.ndarray, launches: np.ndarray, idle: np.ndarray,
             steps: int) -> list[Region]:
    """Per region name with idle under its calls: the calls, their launches, the idle and what it is; most
    idle first."""
    trace = facts.trace
    marks = _marks(facts)
    out = []
    for name_id in np.unique(trace.name[src]).tolist():
        mine = (trace.name[src] == name_id) & (idle > 0)
        if mine.any():
            calls = src[mine]
            kind, optimizer, mode = _reading(facts, marks, calls, claim)
            collective = mode if kind == "collective" else ""
            mode = "" if kind == "collective" else mode
            out.append(Region(trace.names[name_id], int(calls.size), us(trace.dur[calls].mean()),
                              float(launches[mine].mean()), us(idle[mine].sum()) / steps, kind, optimizer, mode,
                              collective))
    out.sort(key=lambda r: -r.idle_us_per_step)
    return out


@dataclass(frozen=True)
class _Marks:
    """What tells the regions apart (KINDS), once per check."""

    steps: np.ndarray  # the optimizer's step markers (Optimizer.step#, zero_grad#)
    optimizer: Intervals  # their spans and the foreach/fused ops'
    startup: Intervals  # calls that start CUDA up, CUDA's module and function loading
    compute: Intervals  # compute ops and autograd nodes, on any thread
    data: np.ndarray  # mask: data regions (the DataLoader's marker, regions named for data)
    first_work: int  # when the trace's first device work starts


def _marks(facts: Facts) -> _Marks:
    trace = facts.trace
    steps = np.flatnonzero(facts.is_host & pattern_mask(facts, OPTIMIZER_STEP))
    ops = np.flatnonzero(facts.is_host & pattern_mask(facts, OPTIMIZER_OPS))
    startup = [i for op, calls in one_time.startup_ops(facts).items() for i in (calls or [op])]
    loading = np.flatnonzero(name_mask(facts, one_time.LOADING_NAMES))
    compute = np.flatnonzero(facts.is_host & (pattern_mask(facts, COMPUTE_OPS) | pattern_mask(facts, AUTOGRAD_NODE)))
    work = np.flatnonzero(facts.is_device_work)
    first = int(trace.ts[work].min()) if work.size else int(np.iinfo(np.int64).max)
    return _Marks(steps, spans(facts, np.r_[steps, ops]), spans(facts, np.r_[np.asarray(startup, np.int64), loading]),
                  spans(facts, compute), data_region_mask(facts, LOADER_REGION), first)


def _reading(facts: Facts, marks: _Marks, calls: np.ndarray, claim: Intervals) -> tuple[str, str, str]:
    """What a region's idle is (KINDS), with an optimizer region's class and mode."""
    trace = facts.trace
    span = spans(facts, calls)
    mine = claim.intersect(span)  # the region's idle
    name = trace.event_name(int(calls[0]))
    if (OPTIMIZER_STEP.search(name) or OPTIMIZER_NAME.search(name)
            or marks.optimizer.intersect(span).total >= OPTIMIZER_SHARE * span.total):
        return ("optimizer", *_optimizer(facts, marks, calls, mine))
    if mine.total and marks.startup.intersect(mine).total >= STARTUP_SHARE * mine.total:
        return "start-up", "", ""
    if marks.data[calls].any():
        return "input", "", ""
    collective = _collective_wait(facts, mine)
    if collective:
        return "collective", "", collective
    if not facts.steps and calls.size == 1 and int(trace.ts[calls[0]]) <= marks.first_work:
        return "start-up", "", ""  # a window's one-off region before the GPU's first work: the program starting
    return ("host" if marks.compute.intersect(mine).total else "input"), "", ""


def _collective_wait(facts: Facts, idle: Intervals) -> str:
    """The host op that launched the collective this idle waits on, where COLLECTIVE_SHARE of it or more ends
    at (runs until) the start of a collective queued before that stretch of idle began; "" otherwise."""
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    if not work.size or not idle.start.size:
        return ""
    work = work[np.argsort(trace.ts[work], kind="stable")]
    nxt = work[np.clip(np.searchsorted(trace.ts[work], idle.end, side="left"), 0, work.size - 1)]
    launcher = facts.launcher[nxt]
    waits = (trace.ts[nxt] >= idle.end) & (launcher >= 0) & (trace.ts[np.maximum(launcher, 0)] < idle.start) & (
        classify(facts)[nxt] == CODE["communication"])
    if (idle.end - idle.start)[waits].sum() < COLLECTIVE_SHARE * idle.total:
        return ""
    ops = nearest_in(facts, facts.is_host & trace.category_mask({"cpu_op"}), launcher[waits])
    names = [trace.event_name(_outermost_op(facts, int(o))) for o in ops[ops >= 0].tolist()]
    return max(sorted(set(names)), key=names.count) if names else short_name(trace.event_name(int(nxt[waits][0])))


def _outermost_op(facts: Facts, op: int) -> int:
    """The top of the chain of ops above op: c10d::alltoall_base_ over record_param_comms."""
    cpu_op = facts.trace.category_id("cpu_op")
    while int(facts.parent[op]) >= 0 and int(facts.trace.cat[facts.parent[op]]) == cpu_op:
        op = int(facts.parent[op])
    return op


def _optimizer(facts: Facts, marks: _Marks, calls: np.ndarray, idle: Intervals) -> tuple[str, str]:
    """An optimizer region's class (the step marker over most of its idle: '## optimizer ##' holds
    Optimizer.step#SGD.step) and its mode, from the ops that launched its kernels: fused, foreach,
    per-parameter (plain aten ops), or "" (none recorded: hta_sampled_rank0's ops are sampled out)."""
    trace = facts.trace
    steps = marks.steps
    over = idle.covered(trace.ts[steps], trace.ts[steps] + trace.dur[steps]) if steps.size else np.empty(0)
    steps = steps[over > 0]
    by_class: dict[str, int] = {}
    for i, ns in zip(steps.tolist(), over[over > 0].tolist(), strict=True):
        found = OPTIMIZER_CLASS.match(trace.event_name(i))
        if found:
            by_class[found.group(1)] = by_class.get(found.group(1), 0) + int(ns)
    optimizer = max(by_class, key=lambda c: by_class[c]) if by_class else ""
    mine = np.asarray([i for i in steps.tolist() if optimizer and trace.event_name(i).startswith(
        f"Optimizer.step#{optimizer}.")] or calls.tolist(), dtype=np.int64)
    return optimizer, _mode(facts, mine)


def _mode(facts: Facts, under: np.ndarray) -> str:
    """fused | foreach | per-parameter: what launched the kernels under these events; "" none recorded."""
    trace = facts.trace
    launch = np.flatnonzero(kernel_launches(facts))
    ends = trace.ts[under] + trace.dur[under]
    inside = merge_intervals(trace.ts[under], ends).covered(trace.ts[launch], trace.ts[launch] + 1) > 0
    launch = launch[inside]
    launch = launch[nearest_in(facts, index_mask(facts, under), launch) >= 0]
    cpu_op = facts.is_host & trace.category_mask({"cpu_op"})
    ops = nearest_in(facts, cpu_op, launch, inclusive=False)
    names = {trace.event_name(int(o)) for o in ops[ops >= 0].tolist()}
    if any(n.startswith("aten::_fused_") for n in names):
        return "fused"
    if any(n.startswith("aten::_foreach_") for n in names):
        return "foreach"
    return "per-parameter" if any(n.startswith("aten::") for n in names) else ""


def _outside_ops(facts: Facts, claimed: Intervals) -> Intervals:
    """The part of the claimed idle that no host op or runtime call spans (regions do not count)."""
    trace = facts.trace
    host = np.flatnonzero((facts.is_host | facts.is_overhead) & ~trace.category_mask({"user_annotation"}))
    return subtract(claimed, spans(facts, host))


def _ops_inside(facts: Facts, claimed: Intervals) -> list[tuple[int, tuple[float, int]]]:
    """Per host event name (ops and runtime calls, not regions): self time falling inside the claimed
    idle (self time spread evenly over the event), and its event with most."""
    trace = facts.trace
    host = (facts.is_host | facts.is_overhead) & ~trace.category_mask({"user_annotation"})
    idx = np.flatnonzero(host & (facts.self_time > 0))
    if idx.size == 0 or claimed.start.size == 0:
        return []
    totals: dict[int, list] = {}
    for lo in range(0, idx.size, CHUNK):  # a few arrays the size of a chunk, not of the host events
        part = idx[lo:lo + CHUNK]
        start, dur = trace.ts[part], trace.dur[part]
        inside = claimed.covered(start, start + dur) * (facts.self_time[part] / np.maximum(dur, 1))
        for k, v in zip(part[inside > 0].tolist(), inside[inside > 0].tolist(), strict=True):
            entry = totals.setdefault(int(trace.name[k]), [0.0, k, -1.0])
            entry[0] += v
            if v > entry[2]:
                entry[1], entry[2] = k, v
    return sorted(((key, (v[0], v[1])) for key, v in totals.items()), key=lambda kv: -kv[1][0])
