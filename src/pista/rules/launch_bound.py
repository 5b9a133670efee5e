"""The launch-bound rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
launch-bound`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/launch_bound.ftl."""

from __future__ import annotations

from collections import Counter

import numpy as np

from pista.findings import Context, Evidence, Finding, Record
from pista.query import nearest_ancestor, pattern_mask
from pista.rules._common import COMPILED_CODE, new_shapes, short_name, us
from pista.rules._launches import MAX_MEDIAN_KERNEL_US, graph_replays, mean_step_us, tiny_kernels
from pista.timeline import Edit

ID = "launch-bound"
# A symptom: the engine credits it with what is left once every cause's fix is replayed (pista.engine).
SYMPTOM = True
# The share of the host's time in this rule's idle that one batched call (or a graph of the loop) keeps:
# gpu/python_loop_cpu's 128 per-sample matmuls against one batched matmul kept about a tenth of the host.
BATCHED_HOST_SHARE = 0.1
# Below this share of the step the idle is noise (REVIEW.md: under ~1% is worth nothing).
MIN_SHARE = 0.01
EXAMPLES = 3


class KernelExample(Record):
    kernel: str  # short name
    count: int  # in the steps
    op: str  # the op that launched its first call ("" if none)


class LaunchBound(Record):
    kernels: int
    steps: int
    kernels_per_step: float
    median_kernel_us: float
    median_launch_us: float
    median_op_us: float | None
    kernel_us_per_step: float
    launch_us_per_step: float
    idle_us_per_step: float  # GPU idle just before the tiny kernels (the impact)
    tiny_per_step: float  # the kernels that count as tiny: MAX_MEDIAN_KERNEL_US or shorter
    tiny_max_us: float
    has_steps: bool
    step_us: float  # the median step (the window without steps)
    compiled: bool  # most tiny kernels come from compiled code: the fix is a CUDA graph
    examples: tuple[KernelExample, ...]
    new_shapes_percent: float  # of the steps' launching ops, those on a shape seen in one step only
    new_shape_op: str  # the op with most of them ("" under opargs.CHANGING_SHAPES_SHARE: shapes repeat)
    new_shape_calls_per_step: float
    # the CUDA graphs the steps already replay ("" none, "partly", "mostly"): their kernels are not counted here,
    # and the fix is not "capture the step as a graph" (_launches.graph_replays)
    graphed: str = ""
    graph_launches_per_step: float = 0.0
    mean_step_us: float = 0.0  # the mean step: what the per-step figures (means over the steps) are shares of


class TinyKernel(Record):
    """Note on the first call of a common tiny kernel."""

    count: int
    per_step: float


class ItsLaunch(Record):
    """Note on the launch call of that kernel."""

    launch_us: float
    kernel_us: float


class ItsOp(Record):
    """Note on the op that dispatched that kernel."""

    op_us: float


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    found = tiny_kernels(facts)
    if found is None:
        return []
    impact = ctx.per_step(found.claim.total)
    if impact.share < MIN_SHARE:
        return []
    trace = facts.trace
    n = ctx.step_count
    idx, tiny = found.idx, found.tiny
    launchers = facts.launcher[idx]
    linked = launchers >= 0
    owners = facts.owner[idx]
    has_owner = owners >= 0
    compiled_mask = pattern_mask(facts, COMPILED_CODE)
    in_compiled = nearest_ancestor(facts, compiled_mask)[facts.launcher[tiny]] >= 0
    evidence, examples = [], []
    graphs = graph_replays(facts)
    for name_id, count in Counter(trace.name[tiny].tolist()).most_common(EXAMPLES):
        first = int(tiny[trace.name[tiny] == name_id][0])
        owner = int(facts.owner[first])
        examples.append(KernelExample(short_name(trace.names[name_id]), count,
                                      trace.event_name(owner) if owner >= 0 else ""))
        evidence.append(Evidence.of(facts, first, TinyKernel(count, count / n)))
        launch = int(facts.launcher[first])
        evidence.append(Evidence.of(facts, launch, ItsLaunch(us(trace.dur[launch]), us(trace.dur[first]))))
        if owner >= 0:
            evidence.append(Evidence.of(facts, owner, ItsOp(us(trace.dur[owner]))))
    record = LaunchBound(
        kernels=int(idx.size), steps=n, kernels_per_step=idx.size / n,
        median_kernel_us=us(np.median(trace.dur[idx])),
        median_launch_us=us(np.median(trace.dur[launchers[linked]])),
        median_op_us=us(np.median(trace.dur[owners[has_owner]])) if has_owner.any() else None,
        kernel_us_per_step=us(trace.dur[idx].sum()) / n,
        launch_us_per_step=us(trace.dur[np.unique(launchers[linked])].sum()) / n,
        idle_us_per_step=impact.us, tiny_per_step=tiny.size / n, tiny_max_us=MAX_MEDIAN_KERNEL_US,
        has_steps=bool(facts.steps), step_us=us(ctx.step_ns), mean_step_us=mean_step_us(facts),
        compiled=bool(in_compiled.mean() >= 0.5) if in_compiled.size else False,
        examples=tuple(examples), graphed=graphs.graphed, graph_launches_per_step=graphs.per_step,
        **new_shapes(facts))
    return [Finding(ID, record, impact, evidence, edit=Edit("launches batched", host_scale_spans=((found.claim, BATCHED_HOST_SHARE),)))]
