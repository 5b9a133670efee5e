"""The many-calls rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
many-calls`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/many_calls.ftl."""

from __future__ import annotations

import numpy as np

from pista.findings import Context, Finding, Record
from pista.rules._common import evidence, us
from pista.rules._idle import intersect, spans
from pista.rules._launches import graph_replays, mean_step_us
from pista.rules._repeated import MIN_SHARE, repeated_calls
from pista.timeline import Edit

ID = "many-calls"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The share of the host's time in this rule's idle that one batched call (or a graph of the loop) keeps:
# gpu/python_loop_cpu's 128 per-sample matmuls against one batched matmul kept about a tenth of the host.
BATCHED_HOST_SHARE = 0.1
EVIDENCE_PER_OP = 2  # calls shown per op, from the first step; presentation


class RepeatedCall(Record):
    kind: str  # op | kernel
    name: str
    source: str  # loop | optimizer | cast | compiled
    calls: int
    calls_per_step: float
    avg_us: float  # a call's typical wall time: an op's median (a cold first call of 995 ms among 840 of 156 µs
    # made the mean 1.35 ms: review 5's param_linear_kineto), a kernel's mean launch + kernel
    cost_us_per_step: float  # all its calls' own cost per step, hidden or not
    idle_us_per_step: float  # GPU idle while the host is inside them (its share of the impact)
    # a kernel's or copy's calls apart: their launch calls, and the device's time (not a GPU time summed with
    # the launches); 0 for an op
    launch_us_per_step: float = 0.0
    gpu_us_per_step: float = 0.0


class ManyCalls(Record):
    steps: int
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    has_gpu: bool
    idle_us_per_step: float  # the impact: the listed calls together
    calls: tuple[RepeatedCall, ...]  # largest idle first
    graphed: bool = False  # the steps already replay CUDA graphs (_launches.graph_replays): no "graph the step"
    mean_step_us: float = 0.0  # the mean step: what the per-step figures (means over the steps) are shares of


class OneOfMany(Record):
    """Note on one call of a repeated op."""

    calls_per_step: float
    steps: bool  # the trace has steps (else: in the window)


def _typical_us(trace, kind: str, members: np.ndarray, total: float) -> float:
    """A call's typical time: an op's median wall time, a kernel's mean launch plus kernel."""
    return us(float(np.median(trace.dur[members]))) if kind != "kernel" else us(total / members.size)


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = repeated_calls(facts)
    if found is None:
        return []
    impact = ctx.per_step(found.claim.total)
    if impact.share < MIN_SHARE:
        return []
    trace = facts.trace
    n = ctx.step_count
    rows, shown = [], []
    for kind, name_id, members, hosts, total, source in found.record_calls:
        own = intersect(found.claim, spans(facts, hosts)).total
        kernel = kind == "kernel"
        rows.append(RepeatedCall(
            kind=kind, name=trace.names[name_id], source=source,
            calls=int(members.size), calls_per_step=members.size / n, avg_us=_typical_us(trace, kind, members, total),
            cost_us_per_step=us(total) / n, idle_us_per_step=us(own) / n,
            launch_us_per_step=us(trace.dur[hosts].sum()) / n if kernel else 0.0,
            gpu_us_per_step=us(trace.dur[members].sum()) / n if kernel else 0.0))
        ordered = members[np.argsort(trace.ts[members], kind="stable")]
        first = ordered[facts.event_step[ordered] == facts.event_step[ordered[0]]][:EVIDENCE_PER_OP]
        shown.append((own, [evidence(facts, int(i), OneOfMany(members.size / n, bool(facts.steps))) for i in first]))
    order = np.argsort([-r.idle_us_per_step for r in rows], kind="stable")
    record = ManyCalls(steps=n, has_steps=bool(facts.steps), step_us=us(ctx.step_ns), has_gpu=facts.has_gpu, idle_us_per_step=impact.us,
                       calls=tuple(rows[k] for k in order), graphed=bool(graph_replays(facts).graphed),
                       mean_step_us=mean_step_us(facts))
    return [Finding(ID, record, impact, [e for k in order for e in shown[k][1]],
                    edit=Edit("calls batched", host_scale_spans=((found.claim, BATCHED_HOST_SHARE),)))]
