"""The unfused-optimizer rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
unfused-optimizer`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/unfused_optimizer.ftl."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np

from pista.findings import Context, Evidence, Finding, Record, steps_of
from pista.purpose import CODE, classify
from pista.query import AUTOGRAD_NODE, name_mask, nearest_ancestor, pattern_mask, update_starts
from pista.rules._common import FUSED_OPTIMIZERS, OPTIMIZER_CLASS, busy_ns, index_mask, outer_ops, us
from pista.rules._idle import idle_under
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, merge_intervals, per_facts

ID = "unfused-optimizer"
STEP_EVENT = OPTIMIZER_CLASS
FOREACH_OP = re.compile(r"^aten::_foreach_")
FUSED_OP = re.compile(r"^aten::_fused_")
# Optimizers with a fused CUDA implementation (torch.optim: `fused=True`).
FUSABLE = FUSED_OPTIMIZERS
# The optimizer's share of the device time, or its host span's share of the step, from which it is
# worth fusing: foreach AdamW is 62.6% of the GPU time in series_mlp_eager, 32.7% in gpu/adamw_foreach,
# 12.8% in gpu/gpt_autocast, whose Optimizer.step is also 15.8% of the step on the host.
MIN_GPU_SHARE = 0.05
MIN_HOST_SHARE = 0.05
# Below this share of the step the saving is noise (REVIEW.md).
MIN_IMPACT_SHARE = 0.01
# A foreach step that sweeps the parameters once (plain SGD: one _foreach_add_) is as good as fused
# on the GPU (series_linear_train, gpu/capture_linear); AdamW makes 8 sweeps (gpu/adamw_foreach).
MIN_PASSES = 2
# A per-parameter (foreach=False) step launches several kernels per parameter; fewer kernels from
# plain aten ops than this per call is not that (an optimizer with a handful of tensors is cheap).
MIN_PER_PARAM_KERNELS = 8
# What fused keeps of foreach, measured on the H200 with the same fp32 MLP both ways: the optimizer's
# kernels take 797.1 µs in 3 steps fused (gpu/adamw_fused) and 2241.0 µs foreach (gpu/adamw_foreach);
# Optimizer.step spans 802.3 µs and 2282.8 µs of host time.
FUSED_GPU_RATIO = 0.356
FUSED_HOST_RATIO = 0.351
# What fused keeps of a per-parameter step's host time on a GPU (foreach=False: an op and a launch per
# parameter and operation): savings/h100/optim_adam_loop's Optimizer.step spans 2.95 ms a step for 12
# Linear layers, the fused twin's 0.29 ms.
FUSED_LOOP_HOST_RATIO = 0.1
# On the CPU, what fused keeps of each unfused mode's Optimizer.step time (the docstring's measurement).
FUSED_CPU_RATIO = {"per-parameter": 0.192, "foreach": 0.239}
EVIDENCE_STEPS = 3
EVIDENCE_KERNELS = 2


class UnfusedOptimizer(Record):
    optimizer: str  # the class in the event's name: AdamW
    event: str  # Optimizer.step#AdamW.step ("" for a hand-written update loop)
    mode: str  # "foreach" | "per-parameter"
    passes: float  # per call: foreach ops that launched kernels (sweeps over the parameters), or
    # kernels of plain aten ops per-parameter
    fusable: bool  # the class has fused=True
    steps: int
    calls: int  # Optimizer.step calls in the window
    kernels_per_step: float
    foreach_ops: tuple[str, ...]  # the foreach ops it dispatched, most GPU time first
    gpu_us: float  # per step: the optimizer's device work
    gpu_share_percent: float  # of the device time in the window
    host_us: float  # per step: Optimizer.step's span
    exposed_host_us: float  # per step: of that span, with the GPU idle
    gpu_saving_us: float  # per step: the optimizer's GPU time fused would not take
    host_saving_us: float  # per step: its host time fused would not take
    saving_us: float  # per step: how much earlier the work after the step starts (the impact)
    fused_gpu_ratio: float
    fused_host_ratio: float
    step_share_percent: float
    device: str = "gpu"  # "cpu": a CPU-only trace, where the step is host time alone
    ops_per_step: float = 0.0  # cpu: the aten ops the step dispatched
    # collectives launched inside the step (Shampoo's all-gather): the host op that launched the most, their GPU
    # time per step, and the host time per step inside the step while they were in flight, left out of host_us
    comm_op: str = ""
    comm_us: float = 0.0
    comm_wait_us: float = 0.0


class StepCall(Record):
    """Note on one Optimizer.step call."""

    host_us: float
    exposed_host_us: float
    gpu_us: float
    kernels: int


class CpuStepCall(Record):
    """Note on one Optimizer.step call of a CPU-only trace."""

    host_us: float
    ops: int


class OptimizerKernel(Record):
    """Note on one of the optimizer's kernels."""

    op: str


def claimed_idle(facts: Facts) -> Intervals:
    """The GPU idle under the Optimizer.step calls this rule reports (empty where it does not fire):
    overhead-bound leaves it out."""
    calls = [c for _, group in _found(facts) for c in group]
    return idle_under(facts, np.asarray(calls, dtype=np.int64))


def check(ctx: Context) -> list[Finding]:
    return [finding for finding, _ in _found(ctx.facts)]


@per_facts
def _found(facts: Facts) -> list[tuple[Finding, list[int]]]:
    """Each finding, with the Optimizer.step calls it is about."""
    trace = facts.trace
    step_mask = facts.is_host & pattern_mask(facts, STEP_EVENT)
    calls = np.flatnonzero(step_mask)
    if facts.steps:
        calls = calls[facts.event_step[calls] >= 0]
    if calls.size == 0:
        hand = _hand_written(facts)
        return [] if hand is None else [hand]
    groups = _by_name(facts, calls)
    if not facts.has_gpu:
        found = [(_cpu_finding(facts, name, group), group) for name, group in groups.items()]
    else:
        work = _optimizer_work(facts, step_mask)
        comm = _optimizer_work(facts, step_mask, "communication")
        lo, hi = facts.window
        in_window = facts.is_device_work & (trace.ts >= lo) & (trace.ts < hi)
        device_ns = float(trace.dur[in_window].sum()) or 1.0
        found = [(_finding(facts, name, group, work, device_ns, comm), group) for name, group in groups.items()]
    return [(finding, group) for finding, group in found if finding is not None]


# In-place ops a hand-written update applies to each parameter after the backward, outside any
# Optimizer.step (savings/h100/optim_manual_sgd: `buf.mul_(m).add_(p.grad); p.data.add_(buf, alpha=-lr)`,
# three a parameter, 294 a step for 98 parameters; fused SGD saved 27% of the step unprofiled).
UPDATE_OPS = frozenset({"aten::add_", "aten::mul_", "aten::sub_", "aten::div_", "aten::addcmul_", "aten::addcdiv_",
                        "aten::lerp_", "aten::sqrt_", "aten::copy_", "aten::mul", "aten::add"})
ADAM_LIKE_OPS = frozenset({"aten::addcdiv_", "aten::lerp_", "aten::sqrt_", "aten::addcmul_"})
# ... at least this many a step, every step: a gradient clip, an EMA of a few tensors or a loss scale makes
# a handful (the GPU fixtures' steps run at most 12 in-place ops after their last autograd node).
MIN_UPDATE_OPS = 48


def _hand_written(facts: Facts) -> tuple[Finding, list[int]] | None:
    """A Python loop over the parameters that updates them op by op after the backward, with no
    Optimizer.step: what fused=True replaces."""
    if not facts.has_gpu or not facts.steps:
        return None
    ops = _update_ops(facts)
    if ops is None:
        return None
    trace = facts.trace
    steps = len(facts.steps)
    update_of = nearest_ancestor(facts, index_mask(facts, ops))  # each event's update op, itself included
    launched = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    kernels = launched[update_of[facts.owner[launched]] >= 0]
    if kernels.size == 0:
        return None
    names = [trace.event_name(int(o)) for o in ops]
    optimizer = "AdamW" if ADAM_LIKE_OPS & set(names) else "SGD"
    gpu_ns = float(trace.dur[kernels].sum())
    spans = _loop_spans(facts, ops)
    host_ns = float(spans.total)
    exposed_ns = float(host_ns - sum(busy_ns(facts, int(a), int(b)) for a, b in zip(spans.start, spans.end, strict=True)))
    scale = steps_of(facts)
    impact = scale.per_step(gpu_ns * (1 - FUSED_GPU_RATIO) * scale.busy + exposed_ns * (1 - FUSED_LOOP_HOST_RATIO))
    if impact.share < MIN_IMPACT_SHARE:
        return None
    device_ns = float(trace.dur[facts.is_device_work].sum()) or 1.0
    by_time: dict[str, int] = defaultdict(int)
    for k in kernels.tolist():
        by_time[trace.event_name(int(update_of[facts.owner[k]]))] += int(trace.dur[k])
    record = UnfusedOptimizer(
        optimizer=optimizer, event="", mode="hand-written",
        passes=len(set(names)), fusable=True, steps=steps, calls=0, kernels_per_step=kernels.size / steps,
        foreach_ops=tuple(sorted(by_time, key=lambda n: -by_time[n])), gpu_us=us(gpu_ns) / steps,
        gpu_share_percent=100.0 * gpu_ns / device_ns, host_us=us(host_ns) / steps,
        exposed_host_us=us(exposed_ns) / steps, gpu_saving_us=us(gpu_ns * (1 - FUSED_GPU_RATIO)) / steps,
        host_saving_us=us(host_ns * (1 - FUSED_LOOP_HOST_RATIO)) / steps, saving_us=impact.us,
        fused_gpu_ratio=FUSED_GPU_RATIO, fused_host_ratio=FUSED_LOOP_HOST_RATIO,
        step_share_percent=100.0 * impact.share, ops_per_step=ops.size / steps)
    ordered = kernels[np.argsort(trace.ts[kernels], kind="stable")]
    first = np.array([ordered[0]], np.int64)
    edit = Edit("fused optimizer", remove=ordered[1:].astype(np.int64), host_scale_spans=((spans, FUSED_LOOP_HOST_RATIO),),
                device_dur=(first, np.array([gpu_ns / steps * FUSED_GPU_RATIO])))
    ev = [Evidence.of(facts, int(o), CpuStepCall(us(trace.dur[o]), 1)) for o in ops[:EVIDENCE_STEPS].tolist()]
    return Finding(ID, record, impact, ev, edit=edit), ops.tolist()


def _update_ops(facts: Facts) -> np.ndarray | None:
    """The outermost in-place ops after each step's last autograd node, outside any Optimizer.step, where every
    step runs at least MIN_UPDATE_OPS of them; None otherwise."""
    trace = facts.trace
    outer, _ = outer_ops(facts)
    nodes = np.flatnonzero(facts.is_host & pattern_mask(facts, AUTOGRAD_NODE) & (facts.event_step >= 0))
    if nodes.size == 0 or outer.size == 0:
        return None
    ends = trace.ts[nodes] + trace.dur[nodes]
    last_end = np.full(len(facts.steps), -1, dtype=np.int64)
    np.maximum.at(last_end, facts.event_step[nodes], ends)
    step = facts.event_step[outer]
    cand = outer[name_mask(facts, UPDATE_OPS)[outer] & (step >= 0)]
    cand = cand[(last_end[facts.event_step[cand]] >= 0) & (trace.ts[cand] > last_end[facts.event_step[cand]])]
    cand = cand[nearest_ancestor(facts, facts.is_host & pattern_mask(facts, STEP_EVENT))[cand] < 0]
    counts = np.bincount(facts.event_step[cand], minlength=len(facts.steps))
    if counts.min() < MIN_UPDATE_OPS:
        return None
    return cand[np.argsort(trace.ts[cand], kind="stable")].astype(np.int64)


def _loop_spans(facts: Facts, ops: np.ndarray) -> Intervals:
    """Per step, from the loop's first op to the end of its last (the Python between them included)."""
    trace = facts.trace
    step = facts.event_step[ops]
    first = np.full(len(facts.steps), np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(len(facts.steps), -1, dtype=np.int64)
    np.minimum.at(first, step, trace.ts[ops])
    np.maximum.at(last, step, trace.ts[ops] + trace.dur[ops])
    keep = last > 0
    return merge_intervals(first[keep], last[keep])


def _by_name(facts: Facts, calls: np.ndarray) -> dict[str, list[int]]:
    by_name: dict[str, list[int]] = defaultdict(list)
    for c in calls.tolist():
        by_name[facts.trace.event_name(c)].append(c)
    return by_name


def _cpu_passes(names: list[str], calls: int) -> tuple[str, float] | None:
    """How the step's ops sweep the parameters: "foreach" with its sweeps per call, or "per-parameter" with the
    distinct operations applied to each (SGD's add_ alone is one); None under MIN_PASSES, or per parameter with
    under MIN_PER_PARAM_KERNELS ops a call."""
    foreach = [n for n in names if FOREACH_OP.search(n)]
    if foreach:
        mode, passes = "foreach", len(foreach) / calls
    elif len(names) >= MIN_PER_PARAM_KERNELS * calls:
        mode, passes = "per-parameter", float(len(set(names)))
    else:
        return None
    return (mode, passes) if passes >= MIN_PASSES else None


def _cpu_finding(facts: Facts, name: str, group: list[int]) -> Finding | None:
    """A CPU-only trace: the step's own host time, by the aten ops it dispatched."""
    trace = facts.trace
    scale = steps_of(facts)
    if any(FUSED_OP.search(o) for o in _ops_under(facts, group)):
        return None
    ops = _top_ops_under(facts, group)
    names = [trace.event_name(int(o)) for o in ops]
    sweeps = _cpu_passes(names, len(group))
    if sweeps is None:
        return None
    mode, passes = sweeps
    steps = scale.count
    host_ns = float(trace.dur[group].sum())
    if host_ns / steps / max(scale.ns, 1.0) < MIN_HOST_SHARE:
        return None
    ratio = FUSED_CPU_RATIO[mode]
    impact = scale.per_step(host_ns * (1.0 - ratio))
    if impact.share < MIN_IMPACT_SHARE:
        return None
    optimizer = STEP_EVENT.match(name).group(1)  # type: ignore[union-attr]
    by_time: dict[str, int] = defaultdict(int)
    for o, n in zip(ops, names, strict=True):
        by_time[n] += int(trace.dur[o])
    record = UnfusedOptimizer(
        optimizer=optimizer, event=name, mode=mode, passes=passes, fusable=optimizer in FUSABLE, steps=steps,
        calls=len(group), kernels_per_step=0.0, foreach_ops=tuple(sorted(by_time, key=lambda n: -by_time[n])),
        gpu_us=0.0, gpu_share_percent=0.0, host_us=us(host_ns) / steps, exposed_host_us=us(host_ns) / steps,
        gpu_saving_us=0.0, host_saving_us=impact.us, saving_us=impact.us, fused_gpu_ratio=0.0,
        fused_host_ratio=ratio, step_share_percent=100.0 * impact.share, device="cpu",
        ops_per_step=len(names) / steps)
    call_of = nearest_ancestor(facts, index_mask(facts, group))
    counts: dict[int, int] = defaultdict(int)
    for o in ops:
        counts[int(call_of[o])] += 1
    ev = [Evidence.of(facts, c, CpuStepCall(us(trace.dur[c]), counts[c]))
          for c in sorted(group, key=lambda c: int(trace.ts[c]))[:EVIDENCE_STEPS]]
    return Finding(ID, record, impact, ev,
                   edit=Edit("fused optimizer", host_scale=((np.asarray(group, np.int64), ratio),)))


def _top_ops_under(facts: Facts, calls: list[int]) -> list[int]:
    """The aten ops right under these calls: below them, with no other aten op in between."""
    trace = facts.trace
    aten = trace.category_mask({"cpu_op"}) & np.array([n.startswith("aten::") for n in trace.names],
                                                      dtype=bool)[trace.name]
    under = nearest_ancestor(facts, index_mask(facts, calls), inclusive=False)
    above = nearest_ancestor(facts, aten, inclusive=False)
    inner = (under >= 0) & aten & ((above < 0) | (facts.depth[np.maximum(above, 0)] < facts.depth[np.maximum(under, 0)]))
    return np.flatnonzero(inner).tolist()


def _optimizer_work(facts: Facts, step_mask: np.ndarray, purpose: str = "optimizer") -> dict[int, np.ndarray]:
    """Optimizer.step call -> the device work of that purpose launched under it (the update's: "optimizer"; the
    collectives it runs: "communication")."""
    codes = classify(facts)
    idx = np.flatnonzero(codes == CODE[purpose])
    source = np.where(facts.owner[idx] >= 0, facts.owner[idx], facts.launcher[idx])
    keep = source >= 0
    idx, source = idx[keep], source[keep]
    call = nearest_ancestor(facts, step_mask)[source]
    out: dict[int, list[int]] = defaultdict(list)
    for k, c in zip(idx.tolist(), call.tolist(), strict=True):
        if c >= 0:
            out[c].append(k)
    return {c: np.asarray(ks, dtype=np.int64) for c, ks in out.items()}


def _finding(facts: Facts, name: str, group: list[int], work: dict[int, np.ndarray],
             device_ns: float, comm: dict[int, np.ndarray]) -> Finding | None:
    trace = facts.trace
    scale = steps_of(facts)
    ops = _ops_under(facts, group)
    if any(FUSED_OP.search(o) for o in ops):
        return None  # fused already (its step counters still go through one _foreach_add_)
    kernels = np.concatenate([work.get(c, np.empty(0, np.int64)) for c in group])
    if kernels.size == 0:
        return None  # nothing on the GPU: a CPU optimizer
    found = _mode(facts, kernels, len(group))
    if found is None:
        return None  # one pass already (plain SGD), an extension's own kernels, or compiled
    mode, passes = found
    gpu_ns = float(trace.dur[kernels].sum())
    starts = _own_starts(facts, group)
    waits = _in_flight(facts, group, comm)
    own = _own_spans(facts, starts).subtract(waits)
    host_ns = float(own.total)
    exposed = {c: sum(int(b - a) - busy_ns(facts, int(a), int(b)) for a, b in zip(
        *_of_call(facts, own, c), strict=True)) for c in group}
    exposed_ns = float(sum(exposed.values()))
    steps = scale.count
    gpu_share = gpu_ns / device_ns
    host_share = host_ns / steps / max(scale.ns, 1.0)
    if gpu_share < MIN_GPU_SHARE and host_share < MIN_HOST_SHARE:
        return None
    gpu_saving = gpu_ns * (1.0 - FUSED_GPU_RATIO)
    host_saving = host_ns * (1.0 - FUSED_HOST_RATIO)
    impact = scale.per_step(_saving(facts, group, work, exposed, own))
    if impact.share < MIN_IMPACT_SHARE:
        return None
    optimizer = STEP_EVENT.match(name).group(1)  # type: ignore[union-attr]
    record = UnfusedOptimizer(
        optimizer=optimizer, event=name, mode=mode, passes=passes, fusable=optimizer in FUSABLE, steps=steps,
        calls=len(group), kernels_per_step=kernels.size / steps, foreach_ops=tuple(_by_gpu_time(facts, kernels, FOREACH_OP)),
        gpu_us=us(gpu_ns) / steps, gpu_share_percent=100.0 * gpu_share, host_us=us(host_ns) / steps,
        exposed_host_us=us(exposed_ns) / steps, gpu_saving_us=us(gpu_saving) / steps,
        host_saving_us=us(host_saving) / steps, saving_us=impact.us, fused_gpu_ratio=FUSED_GPU_RATIO, fused_host_ratio=FUSED_HOST_RATIO,
        step_share_percent=100.0 * impact.share, **_communication(facts, group, comm, waits, steps))
    return Finding(ID, record, impact, _evidence(facts, group, work, exposed, kernels),
                   edit=_fused(facts, group, work, own, FUSED_HOST_RATIO if mode == "foreach" else FUSED_LOOP_HOST_RATIO))


def _own_starts(facts: Facts, group: list[int]) -> dict[int, int]:
    """Where the optimizer's own host time starts in each step call (_common.update_starts: after a closure's
    forward and backward). A new user's Lightning run read 'fused=True saves 71%' for a 3% saving."""
    return dict(zip(group, update_starts(facts, np.asarray(group, np.int64)).tolist(), strict=True))


def _own_spans(facts: Facts, starts: dict[int, int]) -> Intervals:
    trace = facts.trace
    calls = np.asarray(list(starts), np.int64)
    return merge_intervals(np.asarray(list(starts.values()), np.int64), trace.ts[calls] + trace.dur[calls])


def _in_flight(facts: Facts, group: list[int], comm: dict[int, np.ndarray]) -> Intervals:
    """Inside the step calls, the host time while a collective they launched is in flight: from its launch to the
    end of its work. hta_sampled_rank0: Shampoo.step launches an all-gather (c10d::_allgather_base_, 42-64 ms on
    the GPU) and the host carries on only once it ends, 105 of the call's 191 ms; that is communication
    (exposed-communication's), which fusing the update does not shorten."""
    trace = facts.trace
    work = np.concatenate([comm.get(c, np.empty(0, np.int64)) for c in group]) if group else np.empty(0, np.int64)
    work = work[facts.launcher[work] >= 0]
    if not work.size:
        return merge_intervals(np.empty(0, np.int64), np.empty(0, np.int64))
    flight = merge_intervals(trace.ts[facts.launcher[work]], trace.ts[work] + trace.dur[work])
    calls = np.asarray(group, np.int64)
    return flight.intersect(merge_intervals(trace.ts[calls], trace.ts[calls] + trace.dur[calls]))


def _of_call(facts: Facts, spans: Intervals, c: int) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of spans inside call c."""
    inside = spans.clip(int(facts.trace.ts[c]), int(facts.trace.ts[c] + facts.trace.dur[c]))
    return inside.start, inside.end


def _communication(facts: Facts, group: list[int], comm: dict[int, np.ndarray], waits: Intervals,
                   steps: int) -> dict[str, Any]:
    """The record's collective fields: the host op that launched most of their GPU time, that time and the host
    time left out per step."""
    trace = facts.trace
    work = np.concatenate([comm.get(c, np.empty(0, np.int64)) for c in group]) if group else np.empty(0, np.int64)
    if not work.size:
        return {}
    by_op: dict[str, int] = defaultdict(int)
    for k in work.tolist():
        op = _launching_op(facts, k)
        while op >= 0 and int(facts.parent[op]) >= 0 and trace.category_id("cpu_op") == int(trace.cat[facts.parent[op]]) \
                and not STEP_EVENT.search(trace.event_name(int(facts.parent[op]))):
            op = int(facts.parent[op])  # the outermost op under the step (c10d::_allgather_base_, not nccl:...)
        by_op[trace.event_name(op) if op >= 0 else trace.event_name(k)] += int(trace.dur[k])
    return {"comm_op": max(by_op, key=lambda n: by_op[n]), "comm_us": us(trace.dur[work].sum()) / steps,
            "comm_wait_us": us(waits.total) / steps}


def _fused(facts: Facts, group: list[int], work: dict[int, np.ndarray], own: Intervals, host_ratio: float) -> Edit:
    """What fused=True does: per call, its own host time at host_ratio (a closure's forward and backward
    inside it stay) and its kernels replaced by one at FUSED_GPU_RATIO of their time (the first kernel
    resized, the rest removed)."""
    trace = facts.trace
    first, durs, rest = [], [], []
    for c in group:
        ks = work.get(c, np.empty(0, np.int64))
        if ks.size:
            ks = ks[np.argsort(trace.ts[ks], kind="stable")]
            first.append(int(ks[0]))
            durs.append(float(trace.dur[ks].sum()) * FUSED_GPU_RATIO)
            rest.extend(ks[1:].tolist())
    return Edit("fused optimizer", remove=np.asarray(rest, np.int64), host_scale_spans=((own, host_ratio),),
                device_dur=(np.asarray(first, np.int64), np.asarray(durs, np.float64)))


def _saving(facts: Facts, calls: list[int], work: dict[int, np.ndarray], exposed: dict[int, int],
            own: Intervals) -> float:
    """ns saved over the window: per call, how much earlier the first device work launched after it
    could start if its kernels took FUSED_GPU_RATIO of their time (G: G_f, S saved) and its host span
    FUSED_HOST_RATIO (H saved). That work starts at N, once the optimizer's last kernel has ended and
    its own launch (queued at Q) allows it. Fused, the optimizer's kernel runs G_f from when the GPU
    is done with the work queued before the step's first kernel (P) or from the shorter call's end
    (its launch), whichever is later; the next work starts at max(that end, Q - H). A call with no
    work after it in the window counts the mean of the others, or, with none, S plus the host time
    with the GPU idle times (1 - FUSED_HOST_RATIO)."""
    trace = facts.trace
    linked = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    launch_ts = trace.ts[facts.launcher[linked]]
    order = np.argsort(launch_ts, kind="stable")
    linked, launch_ts = linked[order], launch_ts[order]
    ready = _ready(facts)
    known, unknown = [], []
    for c in calls:
        ks = work.get(c, np.empty(0, np.int64))
        gpu = float(trace.dur[ks].sum())
        s = gpu * (1.0 - FUSED_GPU_RATIO)
        h = float(own.clip(int(trace.ts[c]), int(trace.ts[c] + trace.dur[c])).total) * (1.0 - FUSED_HOST_RATIO)
        pos = int(np.searchsorted(launch_ts, int(trace.ts[c] + trace.dur[c])))
        if ks.size == 0 or pos >= linked.size:
            unknown.append(s + exposed[c] * (1.0 - FUSED_HOST_RATIO))
            continue
        k = int(linked[pos])
        start = float(trace.ts[k])
        call = int(facts.launcher[k])
        queued = min(start, float(trace.ts[call] + trace.dur[call]))
        # gpt2_conv1d: the GPU idles 4.9 of the step's 6.7 ms waiting for its 40 launches, so fused
        # ends its kernel ~4 ms earlier, not S; gpu/adamw_foreach: a backlog, so about S earlier
        fused_end = max(ready(int(trace.ts[ks].min())), float(trace.ts[c] + trace.dur[c]) - h) + gpu - s
        fused_start = max(fused_end, queued - h)
        known.append(min(max(start - fused_start, 0.0), s + h))
    if known:
        return float(sum(known)) + len(unknown) * float(np.mean(known))
    return float(sum(unknown))


def _ready(facts: Facts):
    """t -> when the devices finish the work that started before t (the latest end among it)."""
    trace = facts.trace
    idx = np.flatnonzero(facts.is_device_work)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    ends = np.maximum.accumulate(trace.ts[idx] + trace.dur[idx]) if idx.size else np.empty(0, np.int64)
    starts = trace.ts[idx]

    def at(t: int) -> float:
        pos = int(np.searchsorted(starts, t, side="left"))
        return float(ends[pos - 1]) if pos else float("-inf")
    return at


def _mode(facts: Facts, kernels: np.ndarray, calls: int) -> tuple[str, float] | None:
    """("foreach", passes per call) if foreach ops launched the kernels, ("per-parameter", kernels per
    call) if plain aten ops launched at least MIN_PER_PARAM_KERNELS per call, else None (nothing this
    rule can say). A pass is one foreach op call that launched kernels: a sweep over the parameters."""
    trace = facts.trace
    foreach = {op for k in kernels.tolist() if (op := _foreach_above(facts, k)) >= 0}
    if foreach:
        passes = len(foreach) / calls
        return ("foreach", passes) if passes >= MIN_PASSES else None
    plain = sum(1 for k in kernels.tolist() if (op := _launching_op(facts, k)) >= 0
                and trace.event_name(op).startswith("aten::") and not FUSED_OP.search(trace.event_name(op)))
    return ("per-parameter", plain / calls) if plain >= MIN_PER_PARAM_KERNELS * calls else None


def _foreach_above(facts: Facts, k: int) -> int:
    """The foreach op that launched kernel k (itself or an ancestor of its op), or -1."""
    op = _launching_op(facts, k)
    while op >= 0:
        if FOREACH_OP.search(facts.trace.event_name(op)):
            return op
        op = int(facts.parent[op])
    return -1


def _ops_under(facts: Facts, calls: list[int]) -> set[str]:
    """Names of the ops below these calls (any depth)."""
    trace = facts.trace
    under = nearest_ancestor(facts, index_mask(facts, calls), inclusive=False)
    idx = np.flatnonzero((under >= 0) & trace.category_mask({"cpu_op"}))
    return {trace.names[int(n)] for n in np.unique(trace.name[idx])}


def _launching_op(facts: Facts, k: int) -> int:
    owner = int(facts.owner[k])
    if owner >= 0:
        return owner
    j = int(facts.launcher[k])
    cpu_op = facts.trace.category_id("cpu_op")
    while j >= 0 and int(facts.trace.cat[j]) != cpu_op:
        j = int(facts.parent[j])
    return j


def _by_gpu_time(facts: Facts, kernels: np.ndarray, pattern: re.Pattern[str]) -> list[str]:
    """Names of the ops matching pattern that launched these kernels, most GPU time first."""
    trace = facts.trace
    totals: dict[str, int] = defaultdict(int)
    for k in kernels.tolist():
        op = _launching_op(facts, k)
        while op >= 0 and not pattern.search(trace.event_name(op)):
            op = int(facts.parent[op])
        if op >= 0:
            totals[trace.event_name(op)] += int(trace.dur[k])
    return [n for n, _ in sorted(totals.items(), key=lambda x: -x[1])]


def _evidence(facts: Facts, group: list[int], work: dict[int, np.ndarray], exposed: dict[int, int],
              kernels: np.ndarray) -> list[Evidence]:
    trace = facts.trace
    out = []
    for c in sorted(group, key=lambda c: int(trace.ts[c]))[:EVIDENCE_STEPS]:
        ks = work.get(c, np.empty(0, np.int64))
        out.append(Evidence.of(facts, c, StepCall(us(trace.dur[c]), us(exposed[c]), us(trace.dur[ks].sum()),
                                                  int(ks.size))))
    for k in sorted(kernels.tolist(), key=lambda k: -int(trace.dur[k]))[:EVIDENCE_KERNELS]:
        op = _launching_op(facts, k)
        out.append(Evidence.of(facts, k, OptimizerKernel(trace.event_name(op) if op >= 0 else "")))
    return out
