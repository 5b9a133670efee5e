"""What:
Each step launches many tiny kernels, and launching one costs more host time than running it:
the median kernel lasts a few µs or less, while the launch call alone (cudaLaunchKernel,
cuLaunchKernelEx) takes as long or longer, and the op that dispatched it longer still. The rule
names the kernels and the ops that launch them, and the GPU idle while the host dispatches them.

Why:
A kernel launch costs ~5-10 µs of host time (Python, the dispatcher, the CUDA driver); an
elementwise op on a small tensor runs in 1 µs. With hundreds of them per step the GPU finishes
each kernel before the next one arrives, so the step time is the sum of launch costs. A faster GPU
does not help; fewer, bigger kernels do.

Example:
gpu/launch_bound on an H200: 200 tiny elementwise ops (mul, add on 256 floats) per step; 600
kernels over 3 steps with a median of 0.928 µs each, against a median cudaLaunchKernel of 6.49 µs;
188 µs of kernels per step for 1.37 ms of launch calls. The GPU waits 4.19 ms per step for these
kernels to be launched, 95% of the 4.41 ms median step.

Impact:
Per step: the GPU idle just before each tiny kernel, from the end of the device's previous work to
the kernel's start (the GPU was waiting for this launch), not counting idle another finding
claims (a sync's, a data-loading region's, compiling, the profiler's): what fusing those ops into a
few kernels, or replaying them as a CUDA graph, could save at most (upper bound). This is the part
of the per-op idle the tiny kernels explain: `many-calls` and `overhead-bound` take only what is
left, so the same idle is never reported twice (on gpu/launch_bound overhead-bound keeps 59 µs,
1.3%, and many-calls nothing). Before, the rule had no impact and restated overhead-bound's
verdict and many-calls' aten::mul / aten::add.

Kernels a graph launch replays (cudaGraphLaunch, hipGraphLaunch) are not launched one by one and
are left out; a program that already replays graphs is told to fuse the rest or capture it into
those graphs, not to capture the step (issue 35: foreign/hta_negq_rank0, 14 graph launches a step,
its 135 graph kernels counted before). Per-step figures are means over the steps, shares of the
mean step (a mean part against the median step could exceed it).

Fix:
Fuse the ops: torch.compile (Inductor fuses elementwise chains into one Triton kernel),
foreach/fused optimizers (`fused=True`), vectorise over a batch instead of looping in Python;
replay the whole step as a CUDA graph (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.CUDAGraph`) so the launches cost one graph launch. Code that is already compiled needs
the CUDA graph (or bigger work per call), not another torch.compile.
"""

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
