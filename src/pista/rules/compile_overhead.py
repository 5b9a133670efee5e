"""The compile-overhead rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
compile-overhead`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/compile_overhead.ftl."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pista.findings import Context, Evidence, Finding, Record, Severity, steps_of
from pista.query import AUTOGRAD_NODE, COMPILE_EVENT, name_mask, nearest_ancestor, pattern_mask
from pista.rules._common import CACHE_LOOKUP, COMPILED_REGION, OPTIMIZER_STEP, us
from pista.rules._idle import idle_under, union
from pista.timeline import Edit
from pista.trace.facts import Facts, Intervals, per_facts

ID = "compile-overhead"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The share of the wrappers' host time left with the region captured as a CUDA graph: the graph replays
# its kernels with one launch; the guards and the wrapper's Python stay (seed_mm4096_compile: 182 µs a step
# unprofiled for 174 µs of GPU work).
GRAPHED_WRAPPER_SHARE = 0.3
# The wrapper's exposed host time (the GPU idle meanwhile) must be at least this share of the median
# step: seed_mm64_compile 53%, series_mlp_compile 28%, capture_mlp_compile 18%; under 1% is noise
# (capture_mm4096_compile: 0 in its median step, the wrapper hides behind the previous GEMM).
MIN_STEP_SHARE = 0.01
# GPU work launched per call at or above this share of the wrapper's host time per call: the
# profiler may be what exposes the wrapper. The profiler about doubles host time on op-dense loops
# (_common.PROFILER_HOST_INFLATION), and seed_mm4096_compile's 368 µs profiled step (203 µs
# of wrapper for 176 µs of GEMM, 0.87) is 182 µs unprofiled, GPU-bound (REVIEW.md); capture_mm4096_compile_sync 1.7. The
# tiny-call traces are far below: seed_mm64_compile 0.01, series_mlp_compile 0.13,
# capture_mlp_compile 0.28, seed_mm4096_compile_cold 0.46. Such a finding is info, the condition stated.
PROFILER_MAY_EXPLAIN_RATIO = 0.5
# Wrapper host time per call at or above this multiple of the GPU work per call: the call is too
# small for its fixed cost, and the advice adds "more work per call" to CUDA graphs. seed_mm64_compile
# 104x, series_mlp_compile 7.6x, capture_mlp_compile 3.5x, seed_mm4096_compile_cold 2.2x; not
# seed_mm4096_compile (1.15x: a 175 µs GEMM per call is enough work) nor capture_mm4096_compile_sync 0.6x.
WRAPPER_DOMINATES_RATIO = 2.0
EVIDENCE_EVENTS = 6

# The backward of a compiled graph runs in this autograd node, outside any Torch-Compiled Region.
COMPILED_WRAPPERS = re.compile(COMPILED_REGION.pattern + r"|^CompiledFunctionBackward$")
# Not the step's eager work: the compiled backward's node, gradient accumulation, the guard check (this
# rule's wrapper time).
NOT_EAGER_WORK = re.compile(r"^autograd::engine::evaluate_function: (CompiledFunctionBackward|torch::autograd::"
                            r"AccumulateGrad)|^TorchDynamo Cache Lookup$")
EAGER_OPS = 3  # the eager ops around the compiled calls named in the advice
# ... where the GPU idles under them at least this share of the step (capture_mlp_compile 7.5%,
# series_mlp_compile 8.9%, compile_float_arg 15.8%)
EAGER_MIN_SHARE = 0.02
BACKWARD = "CompiledFunctionBackward"
# A compiled call whose graph ran op by op: this many aten ops of its own and no generated code under it
# (review 4's hta_v100_dfidx: a CompiledFunctionBackward of 3,606 ops per call, 294 aten::mm and 404
# c10d::allreduce_ among them, the 122 ms between them had been called "wrapper"; Inductor's graphs call triton_ kernels
# and extern GEMMs under `## Call CompiledFxGraph`: capture_mlp_compile's regions hold 3 aten ops).
OP_BY_OP_MIN_OPS = 100
GENERATED_CODE = re.compile(r"^triton_|^## Call CompiledFxGraph|^## Call ")
# What a region does on behalf of the graph itself: ops, generated triton launchers, runtime calls.
# Collectives a graph's hooks issue (hta_v100_dfidx: 404 c10d::allreduce_ a call) are its payload, not wrapper.
PAYLOAD_OPS = re.compile(r"^(aten|prims|c10d)::|^triton_|^record_param_comms$")


class CompileOverhead(Record):
    regions: tuple[str, ...]  # 'Torch-Compiled Region: 0/1', 'CompiledFunctionBackward'
    calls: int
    steps: int
    wrapper_us: float  # host time in the wrapper (cache lookup, guards, prologue, generated code), window
    exposed_us: float  # of that, with the GPU idle, over the window
    exposed_per_step_us: float  # the median step's (the impact)
    wrapper_us_per_call: float
    gpu_us_per_call: float  # device time launched from inside the regions, per call
    backward: bool  # the compiled backward is among the regions
    wrapper_dominates: bool  # wrapper host time per call >= WRAPPER_DOMINATES_RATIO x GPU work: too little work
    profiler_may_explain: bool  # enough GPU work per call that the host may outrun it unprofiled
    step_share_percent: float
    eager_ops: tuple[str, ...]  # the step's eager ops outside the compiled calls, most GPU idle under them
    eager_idle_us: float  # per step, the GPU idle under them
    op_by_op_ops: int = 0  # aten ops per call where the graphs run op by op (a backend without code generation)


class WrapperCall(Record):
    """Note on one compiled call."""

    host_us: float
    exposed_us: float
    gpu_us: float
    lookup_us: float | None
    between_ops: bool = False  # the graph runs op by op: the host time is between its ops, not a wrapper's


class GuardCheck(Record):
    """Note on the cache lookup (guard check) before a compiled call."""

    lookup_us: float


@dataclass(eq=False)
class _Found:
    calls: np.ndarray  # the compiled calls in the steps (not compiling)
    lookups: list[int]  # each one's cache lookup, -1 for none
    host_ns: np.ndarray  # per call: the wrapper's host time
    exposed_ns: np.ndarray  # per call: of it, with the GPU idle
    launched_ns: np.ndarray  # per call: the device time launched from inside it
    per_step_ns: float  # the median step's exposed wrapper time (the impact)
    spans: Intervals  # every call's wrapper spans: the idle under them is this rule's
    op_by_op_ops: int  # aten ops a call where the graphs run op by op (no generated code), else 0


def claimed_idle(facts: Facts) -> Intervals:
    """The idle this rule claims (empty where it does not fire): overhead-bound leaves it out."""
    found = _detect(facts)
    if found is None or found.per_step_ns < MIN_STEP_SHARE * steps_of(facts).ns:
        return union(np.empty(0), np.empty(0))
    return found.spans


def check(ctx: Context) -> list[Finding]:
    found = _detect(ctx.facts)
    if found is None:
        return []
    impact = ctx.step_impact(found.per_step_ns)
    if impact.share < MIN_STEP_SHARE:
        return []
    facts, trace, calls = ctx.facts, ctx.facts.trace, found.calls
    host_ns, exposed_ns, launched = found.host_ns, found.exposed_ns, found.launched_ns
    host_per_call = float(host_ns.sum()) / calls.size
    gpu_per_call = float(launched.sum()) / calls.size
    may_explain = gpu_per_call >= PROFILER_MAY_EXPLAIN_RATIO * host_per_call
    names = tuple(sorted({trace.event_name(int(i)) for i in calls}))
    record = CompileOverhead(
        regions=names, calls=int(calls.size), steps=ctx.step_count, wrapper_us=us(host_ns.sum()),
        exposed_us=us(exposed_ns.sum()), exposed_per_step_us=us(found.per_step_ns),
        wrapper_us_per_call=us(host_per_call), gpu_us_per_call=us(gpu_per_call), backward=BACKWARD in names,
        wrapper_dominates=host_per_call >= WRAPPER_DOMINATES_RATIO * gpu_per_call, profiler_may_explain=may_explain,
        step_share_percent=100.0 * impact.share, op_by_op_ops=found.op_by_op_ops, **_eager_around(facts, ctx.step_count))
    # the exposure may be the profiler's own cost (see PROFILER_MAY_EXPLAIN_RATIO): info, the condition stated
    severity = Severity.INFO if may_explain else None

    evidence: list[Evidence] = []
    for k in np.argsort(-exposed_ns, kind="stable").tolist():
        if len(evidence) >= EVIDENCE_EVENTS:
            break
        i, j = int(calls[k]), found.lookups[k]
        lookup = us(trace.dur[j]) if j >= 0 else None
        evidence.append(Evidence.of(facts, i, WrapperCall(us(host_ns[k]), us(exposed_ns[k]), us(launched[k]),
                                                          lookup, bool(found.op_by_op_ops))))
        if j >= 0 and len(evidence) < EVIDENCE_EVENTS:
            evidence.append(Evidence.of(facts, j, GuardCheck(us(trace.dur[j]))))
    # a CUDA graph of the compiled region (mode="reduce-overhead") runs the wrapper's launches as one
    edit = Edit("compiled region graphed", host_scale_spans=((found.spans, GRAPHED_WRAPPER_SHARE),))
    return [Finding(ID, record, impact, evidence, severity, edit=edit)]


@per_facts
def _detect(facts: Facts) -> _Found | None:
    if not facts.has_gpu:
        return None
    trace = facts.trace
    regions = facts.is_host & pattern_mask(facts, COMPILED_WRAPPERS)
    if not regions.any():
        return None
    compiling = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    region_of = nearest_ancestor(facts, regions)
    # first calls that compile or autotune inside the region are recompilation's business
    compiled_inside = np.unique(region_of[compiling & (region_of >= 0)])
    payload = ((facts.is_host & pattern_mask(facts, PAYLOAD_OPS)) | facts.is_launch | facts.is_overhead) & ~regions
    owner = nearest_ancestor(facts, payload | regions, inclusive=False)
    top = np.flatnonzero(payload & (owner >= 0))
    top = top[regions[owner[top]]]
    top = top[np.argsort(trace.ts[top], kind="stable")]
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    work = work[region_of[facts.launcher[work]] >= 0]
    gpu_ns = np.bincount(region_of[facts.launcher[work]], weights=trace.dur[work], minlength=len(trace))

    calls = np.setdiff1d(np.flatnonzero(regions), compiled_inside)
    if facts.steps:
        calls = calls[facts.event_step[calls] >= 0]
    if calls.size == 0:
        return None
    lookups = _lookups_before(facts, calls, compiled_inside)
    payload_of: dict[int, list[int]] = {}
    for j in top.tolist():
        payload_of.setdefault(int(owner[j]), []).append(j)
    host_ns, exposed_ns = np.zeros(calls.size), np.zeros(calls.size)
    busy = [_Busy(iv.start, iv.end) for iv in facts.gpu_busy.values()]
    every: list[tuple[int, int]] = []
    for k, i in enumerate(calls.tolist()):
        spans = _wrapper_spans(facts, i, payload_of.get(i, []), lookups[k])
        every += spans
        host_ns[k] = sum(b - a for a, b in spans)
        exposed_ns[k] = sum((b - a) - max((d.within(a, b) for d in busy), default=0) for a, b in spans)
    pairs = np.array(every, dtype=np.int64).reshape(-1, 2)
    return _Found(calls, lookups, host_ns, exposed_ns, gpu_ns[calls], _median_step(facts, calls, exposed_ns),
                  union(pairs[:, 0], pairs[:, 1]), _op_by_op(facts, calls, region_of, top, owner))


def _op_by_op(facts: Facts, calls: np.ndarray, region_of: np.ndarray, top: np.ndarray, owner: np.ndarray) -> int:
    """The median count of aten ops a call runs of its own where most calls run their graph op by op (at least
    OP_BY_OP_MIN_OPS of them and no generated code under the call: a backend without code generation, the host
    time between the ops the graph's Python), else 0."""
    trace = facts.trace
    aten = top[np.char.startswith(trace.name_array[trace.name[top]].astype(str), "aten::")] if top.size else top
    ops = np.bincount(owner[aten], minlength=len(trace))[calls] if aten.size else np.zeros(calls.size, np.int64)
    generated = facts.is_host & pattern_mask(facts, GENERATED_CODE) & (region_of >= 0)
    has_code = np.zeros(len(trace), dtype=bool)
    has_code[region_of[generated]] = True
    eager = (ops >= OP_BY_OP_MIN_OPS) & ~has_code[calls]
    return int(np.median(ops[eager])) if 2 * int(eager.sum()) > calls.size else 0


class _Busy:
    """One device's busy intervals, for the busy time inside many short spans (searchsorted, not a
    pass over every interval per span)."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start, self.end = start, end
        self.before = np.concatenate(([0], np.cumsum(end - start)))  # busy ns in intervals [0, i)

    def within(self, lo: int, hi: int) -> int:
        i = int(np.searchsorted(self.end, lo, side="right"))  # first interval ending after lo
        j = int(np.searchsorted(self.start, hi, side="left"))  # intervals starting before hi
        if j <= i:
            return 0
        total = int(self.before[j] - self.before[i])
        total -= max(0, lo - int(self.start[i]))  # the first one may start before lo
        total -= max(0, int(self.end[j - 1]) - hi)  # the last one may end after hi
        return max(0, total)


def _wrapper_spans(facts: Facts, call: int, payload: list[int], lookup: int) -> list[tuple[int, int]]:
    """The call's host time outside its payload (ops, launches, profiler work), and its cache lookup."""
    trace = facts.trace
    lo, hi = int(trace.ts[call]), int(trace.ts[call] + trace.dur[call])
    spans, cur = [], lo
    for j in payload:
        a, b = int(trace.ts[j]), int(trace.ts[j] + trace.dur[j])
        if a > cur:
            spans.append((cur, a))
        cur = max(cur, b)
    if hi > cur:
        spans.append((cur, hi))
    if lookup >= 0:
        spans.append((int(trace.ts[lookup]), int(trace.ts[lookup] + trace.dur[lookup])))
    return spans


def _eager_around(facts: Facts, steps: int) -> dict:
    """The step's outermost eager ops (and autograd nodes) outside the compiled calls and the optimizer
    step, with the GPU idle under them: what compiling the whole step would take in (capture_mlp_compile:
    the loss, mse_loss and MseLossBackward0, about 360 µs of idle a step)."""
    trace = facts.trace
    ops = facts.is_host & (trace.category_mask({"cpu_op"}) | pattern_mask(facts, AUTOGRAD_NODE))
    if facts.steps:
        ops &= facts.event_step >= 0
    outer = ops & ~(ops[facts.parent] & (facts.parent >= 0))  # a root's -1 reads the last event
    skip = facts.is_host & (pattern_mask(facts, COMPILED_WRAPPERS) | pattern_mask(facts, OPTIMIZER_STEP))
    idx = np.flatnonzero(outer & (nearest_ancestor(facts, skip) < 0) & ~pattern_mask(facts, NOT_EAGER_WORK))
    idle = idle_under(facts, idx)
    under = idle.covered(trace.ts[idx], trace.ts[idx] + trace.dur[idx]) if idx.size else np.zeros(0)
    names = trace.name[idx]
    totals = np.bincount(names, weights=under.astype(np.float64), minlength=len(trace.names)) if idx.size else \
        np.zeros(0)
    top = [k for k in np.argsort(-totals, kind="stable")[:EAGER_OPS].tolist() if totals[k] > 0]
    if idle.total < EAGER_MIN_SHARE * steps_of(facts).ns * steps:
        top = []  # nothing worth compiling with them: seed_mm64_compile's loop calls the function alone
    return {"eager_ops": tuple(trace.names[k] for k in top), "eager_idle_us": us(idle.total) / steps}


def _median_step(facts: Facts, calls: np.ndarray, exposed_ns: np.ndarray) -> float:
    """The exposed wrapper time of the median step (the window's without steps): the first step of a
    window often starts with an empty GPU queue (capture_mm4096_compile: 169, 0, 0 µs)."""
    if not facts.steps:
        return float(exposed_ns.sum())
    per_step = np.zeros(len(facts.steps))
    np.add.at(per_step, facts.event_step[calls], exposed_ns)
    return float(np.median(per_step))


def _lookups_before(facts: Facts, calls: np.ndarray, compiled_inside: np.ndarray) -> list[int]:
    """For each region call, the TorchDynamo Cache Lookup just before it under the same parent (-1 if
    none, or if a compile ran between them: that lookup missed)."""
    trace = facts.trace
    lookups = np.flatnonzero(facts.is_host & name_mask(facts, {CACHE_LOOKUP}))
    if lookups.size == 0:
        return [-1] * calls.size
    compiling = np.flatnonzero(facts.is_host & pattern_mask(facts, COMPILE_EVENT))
    out = []
    for i in calls.tolist():
        same = lookups[(facts.parent[lookups] == facts.parent[i]) & (trace.ts[lookups] < trace.ts[i])]
        if same.size == 0:
            out.append(-1)
            continue
        j = int(same[np.argmax(trace.ts[same])])
        between = compiling[(trace.ts[compiling] >= trace.ts[j]) & (trace.ts[compiling] < trace.ts[i])]
        out.append(-1 if between.size else j)
    return out
