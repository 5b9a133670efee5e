"""What:
Ops (or kernels) called very many times per step, each call cheap and mostly host work, that
together keep the GPU waiting: the count is the problem. All such ops of a trace are one finding,
each with its calls per step, where they come from (a Python loop, the optimizer, dtype casts,
compiled code) and the GPU idle while the host is inside them.

Why:
Every call pays the same fixed toll: Python and the dispatcher for an op (10-20 µs), a launch for
a kernel (5-10 µs on the host, a few µs of GPU ramp). A hundred tiny calls cost a hundred tolls;
one batched or fused call pays once. The toll only costs time where the GPU waits for it: behind
long kernels it is hidden. An op whose time is the elements it makes or moves (random numbers, fills,
copies) at 200 µs or more a call is that work, not a toll, and is left out: one batched call takes as
long (monisha_trace: 100 aten::randn of 2.9 ms each on the CPU, told "batch the calls" before).

Example:
big_gpt_eager_20steps (a 12-layer GPT, bf16 autocast, eager) on an H200: aten::to is called 271
times per step (32.8 µs each, autocast's casts of the fp32 weights), and the GPU is idle 7.3 ms
per step while the host is inside them, 13.9% of the 52.7 ms median step (warning). On gpu/launch_bound (200 tiny elementwise ops per
step) the ops are aten::mul and aten::add, 100 calls each per step; their idle is launch-bound's
(the tiny kernels explain it), so this rule stays silent there.

Impact:
Per step: the GPU idle while the host is inside the calls of the listed ops (for kernels: inside
their launch calls), not counting idle another finding claims (syncs, data loading, compiling, the
profiler, launch-bound's tiny-kernel ops): what batching or fusing them could save at most (upper
bound; the batched op still costs one call). Host time hidden behind GPU work saves nothing and is
not counted. Without a GPU the calls' own host time counts. Before, each op was its own warning
with its wall time as the cost, hidden or not, and restated overhead-bound.

A kernel's (or copy's) row gives its launch calls and its GPU time apart, and its cost counts a
blocking copy's launch call and the copy once (issue 35: copies' CPU calls summed with their GPU
time, 181.7 ms claimed where the GPU ran 82.7 ms). Per-step figures are shares of the mean step.

Fix:
Batch the work (one op on a stacked tensor instead of a loop of ops on slices), use the
`torch._foreach_*` / fused optimizer variants (`fused=True`), keep the weights in the compute dtype
so autocast does not cast them every step, fuse with torch.compile, or replay the whole step as a
CUDA graph so the per-call host cost disappears (already-compiled code: the CUDA graph).
"""

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
    avg_us: float  # mean wall time of a call (an op) or launch + kernel (a kernel)
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
            calls=int(members.size), calls_per_step=members.size / n, avg_us=us(total / members.size),
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
