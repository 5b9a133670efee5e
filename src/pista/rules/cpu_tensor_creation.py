"""The cpu-tensor-creation rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
cpu-tensor-creation`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/cpu_tensor_creation.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record
from pista.query import name_mask, nearest_ancestor, nearest_in
from pista.rules._common import evidence, index_mask, kernel_launches, mark_ancestors, step_at, us
from pista.timeline import Edit
from pista.trace.facts import Facts

ID = "cpu-tensor-creation"
# Tensor factories, the outermost of them counted (aten::randn holds aten::normal_).
FACTORIES = frozenset({"aten::randn", "aten::rand", "aten::randint", "aten::randn_like", "aten::rand_like",
                       "aten::randint_like", "aten::randperm", "aten::normal", "aten::normal_", "aten::uniform_",
                       "aten::random_", "aten::bernoulli", "aten::bernoulli_", "aten::zeros", "aten::ones",
                       "aten::full", "aten::arange", "aten::linspace", "aten::eye"})
# The copy to the device that follows: its op, with a memcpy runtime call under it.
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
MEMCPY_CALLS = frozenset({"cudaMemcpyAsync", "cudaMemcpy", "hipMemcpyAsync", "hipMemcpy", "hipMemcpyWithStream"})
# A factory call must hold this much host time (ns) to count: a scalar or a small index tensor made on the host
# (torch.tensor(0.5), an arange of a few hundred) costs microseconds and is normal; solangii_default's randn
# calls hold 363 ms each.
MIN_CALL_NS = 100_000
# At least this many factory calls followed by a copy, in more than one step where there are several: one is
# a model built on the CPU and moved (HTA's hta_alexnet: weights drawn with uniform_, then .cuda() holding
# CUDA's start-up), a one-time cost.
MIN_CALLS = 2
# Factories and copies together must reach this share of the step (REVIEW.md: a few percent is noise).
MIN_STEP_SHARE = 0.03
EVIDENCE_CALLS = 2


class CpuTensorCreation(Record):
    ops: tuple[str, ...]  # the factories, most host time first
    calls: int  # factory calls followed by a copy, in the window
    create_us: float  # per step, the factories' host time
    copy_us: float  # per step, the host time in the copies' memcpy calls
    steps: int


class MadeOnCpu(Record):
    """Note on a factory call that ran on the CPU."""

    dur_us: float


class CopiedToGpu(Record):
    """Note on the copy of its tensor to the GPU."""

    dur_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    pairs = _created_then_copied(facts)
    steps_hit = {step_at(facts, int(facts.trace.ts[f])) for f, _ in pairs}
    if len(pairs) < MIN_CALLS or (len(facts.steps) > 1 and len(steps_hit) < 2):
        return []
    trace = facts.trace
    memcpy = _memcpy_under(facts, [c for _, c in pairs])
    create_ns = float(sum(int(trace.dur[f]) for f, _ in pairs))
    copy_ns = float(trace.dur[memcpy].sum())
    impact = ctx.per_step(create_ns + copy_ns)
    if impact.share < MIN_STEP_SHARE:
        return []
    by_op: dict[str, int] = {}
    for f, _ in pairs:
        by_op[trace.event_name(f)] = by_op.get(trace.event_name(f), 0) + int(trace.dur[f])
    steps = ctx.step_count
    record = CpuTensorCreation(ops=tuple(sorted(by_op, key=lambda n: -by_op[n])), calls=len(pairs),
                               create_us=us(create_ns) / steps, copy_us=us(copy_ns) / steps, steps=steps)
    ev = []
    for f, c in sorted(pairs, key=lambda p: -int(trace.dur[p[0]]))[:EVIDENCE_CALLS]:
        ev += [evidence(facts, f, MadeOnCpu(us(trace.dur[f]))), evidence(facts, c, CopiedToGpu(us(trace.dur[c])))]
    # the factories go (made on the GPU: a kernel of microseconds) and the memcpy calls with their copies; the
    # copy ops' other host time (the first copy's CUDA start-up) stays
    gone = np.concatenate((np.array([f for f, _ in pairs], dtype=np.int64), memcpy))
    return [Finding(ID, record, impact, ev, edit=Edit("tensors made on the GPU", remove=gone))]


def _memcpy_under(facts: Facts, copies: list[int]) -> np.ndarray:
    """The memcpy runtime calls under these copy ops."""
    memcpy = np.flatnonzero(facts.is_host & name_mask(facts, MEMCPY_CALLS))
    return memcpy[nearest_in(facts, index_mask(facts, copies), memcpy, inclusive=False) >= 0]


def _created_then_copied(facts: Facts) -> list[tuple[int, int]]:
    """(factory call, the copy after it) on one host thread: the outermost factory calls that launch nothing
    and hold MIN_CALL_NS, each with the first copy op with a memcpy under it that follows it on its thread,
    before the next such factory call and in the same step."""
    trace = facts.trace
    host = facts.is_host & facts.is_complete
    factory = host & name_mask(facts, FACTORIES)
    outer = np.flatnonzero(factory & (nearest_ancestor(facts, factory, inclusive=False) < 0))
    outer = outer[trace.dur[outer] >= MIN_CALL_NS]
    if outer.size == 0:
        return []
    outer = outer[_launch_count(facts, outer) == 0]
    holds_memcpy = np.zeros(len(trace), dtype=bool)
    mark_ancestors(facts, np.flatnonzero(host & name_mask(facts, MEMCPY_CALLS)), holds_memcpy)
    copies = np.flatnonzero(host & name_mask(facts, COPY_OPS))
    with_memcpy = holds_memcpy[copies]
    copies = copies[with_memcpy & (nearest_ancestor(facts, host & name_mask(facts, COPY_OPS), inclusive=False)[copies] < 0)]
    return _pair(facts, outer, copies)


def _launch_count(facts: Facts, ops: np.ndarray) -> np.ndarray:
    """Per op: the kernel launches on its thread inside its span."""
    trace = facts.trace
    launches = np.flatnonzero(kernel_launches(facts))
    out = np.zeros(ops.size, dtype=np.int64)
    if launches.size == 0:
        return out
    keys, ts = trace.lane_keys(launches), trace.ts[launches]
    for k, (op, lane) in enumerate(zip(ops.tolist(), trace.lane_keys(ops).tolist(), strict=True)):
        out[k] = int(((ts >= trace.ts[op]) & (ts < trace.ts[op] + trace.dur[op]) & (keys == lane)).sum())
    return out


def _pair(facts: Facts, factories: np.ndarray, copies: np.ndarray) -> list[tuple[int, int]]:
    trace = facts.trace
    out = []
    f_keys, c_keys = trace.lane_keys(factories), trace.lane_keys(copies)
    for k, f in enumerate(factories.tolist()):
        end = int(trace.ts[f] + trace.dur[f])
        later_f = factories[(f_keys == f_keys[k]) & (trace.ts[factories] > trace.ts[f])]
        stop = int(trace.ts[later_f].min()) if later_f.size else None
        cand = copies[(c_keys == f_keys[k]) & (trace.ts[copies] >= end)]
        if stop is not None:
            cand = cand[trace.ts[cand] < stop]
        if cand.size == 0:
            continue
        c = int(cand[np.argmin(trace.ts[cand])])
        if step_at(facts, int(trace.ts[c])) == step_at(facts, int(trace.ts[f])):
            out.append((f, c))
    return out
