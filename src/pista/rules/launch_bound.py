"""What:
Each step launches many tiny kernels, and launching one costs more host time than running it:
the median kernel lasts a few µs or less, while the launch call alone (cudaLaunchKernel,
cuLaunchKernelEx) takes as long or longer, and the op that dispatched it longer still.

Why:
A kernel launch costs ~5-10 µs of host time (Python, the dispatcher, the CUDA driver); an
elementwise op on a small tensor runs in 1 µs. With hundreds of them per step the GPU finishes
each kernel before the next one arrives, so the step time is the sum of launch costs. A faster GPU
does not help; fewer, bigger kernels do.

Example:
gpu/launch_bound on an H200: 200 tiny elementwise ops (mul, add on 256 floats) per step; 600
kernels over 3 steps with a median of 0.928 µs each, against a median cudaLaunchKernel of 6.49 µs;
188 µs of kernels per step for 1.37 ms of launch calls.

Fix:
Fuse the ops: torch.compile (Inductor fuses elementwise chains into one Triton kernel),
foreach/fused optimizers (`fused=True`), vectorise over a batch instead of looping in Python;
replay the whole step as a CUDA graph (`torch.compile(mode="reduce-overhead")`,
`torch.cuda.CUDAGraph`) so the launches cost one graph launch.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import fmt_ns, kernels

ID = "launch-bound"
TITLE = "Many tiny kernels: launch cost exceeds GPU time"
SEVERITY = Severity.WARNING
# At least this many kernels per step: gpu/launch_bound has 200; seed_mm64_* have 1-2 (a few big
# launches are overhead-bound's business, not this rule's).
MIN_KERNELS_PER_STEP = 50
# Median kernel duration (µs) at or below which kernels count as tiny: gpu/launch_bound 0.93 µs;
# series_mlp_compile 6.1 µs, series_mlp_eager 7.0 µs, big_gpt_eager_20steps 17.8 µs have real work.
MAX_MEDIAN_KERNEL_US = 5.0
# Median launch call / median kernel at or above which launching costs more than running:
# gpu/launch_bound 7.0x.
MIN_LAUNCH_TO_KERNEL = 1.0
EXAMPLES = 3


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    k = kernels(facts)
    if facts.steps:
        k &= facts.event_step >= 0
    idx = np.flatnonzero(k)
    n_steps = len(facts.steps) or 1
    if idx.size / n_steps < MIN_KERNELS_PER_STEP:
        return []
    kernel_med = float(np.median(trace.dur[idx]))
    launchers = facts.launcher[idx]
    linked = launchers >= 0
    if not linked.any():
        return []
    launch_med = float(np.median(trace.dur[launchers[linked]]))
    if kernel_med > MAX_MEDIAN_KERNEL_US * 1000 or launch_med < MIN_LAUNCH_TO_KERNEL * kernel_med:
        return []
    owners = facts.owner[idx]
    has_owner = owners >= 0
    op_med = float(np.median(trace.dur[owners[has_owner]])) if has_owner.any() else None
    kernel_ns = int(trace.dur[idx].sum())
    launch_ns = int(trace.dur[np.unique(launchers[linked])].sum())

    tiny = idx[trace.dur[idx] <= MAX_MEDIAN_KERNEL_US * 1000]
    common = Counter(trace.name[tiny].tolist()).most_common(EXAMPLES)
    evidence, examples = [], []
    for name_id, count in common:
        first = int(tiny[trace.name[tiny] == name_id][0])
        owner = int(facts.owner[first])
        op = trace.event_name(owner) if owner >= 0 else "?"
        examples.append(f"{count}x {_short(trace.event_name(first))} from {op}")
        evidence.append(Evidence.of(facts, first, detail=f"{count} launches of this kernel in the steps"))
        if facts.launcher[first] >= 0:
            evidence.append(Evidence.of(facts, int(facts.launcher[first]), detail="its launch call"))
        if owner >= 0:
            evidence.append(Evidence.of(facts, owner, detail="the op that dispatched it"))
    op_text = f", the median dispatching op {fmt_ns(op_med)}" if op_med is not None else ""
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{idx.size} kernels in {n_steps} step(s) ({idx.size / n_steps:.0f} per step), median "
                 f"{fmt_ns(kernel_med)} each, while the median launch call takes {fmt_ns(launch_med)}{op_text}; "
                 f"per step {fmt_ns(kernel_ns / n_steps)} of kernels for {fmt_ns(launch_ns / n_steps)} of launch "
                 f"calls. Most launched: {'; '.join(examples)}."),
        advice=("Fuse the small ops (torch.compile, fused/foreach optimizers, batch the Python loop into tensor "
                "ops) or capture the step as a CUDA graph (torch.compile(mode='reduce-overhead'))."),
        evidence=evidence,
        metrics={
            "kernels": int(idx.size),
            "kernels_per_step": idx.size / n_steps,
            "median_kernel_us": kernel_med / 1000.0,
            "median_launch_us": launch_med / 1000.0,
            "median_op_us": op_med / 1000.0 if op_med is not None else None,
            "kernel_us_per_step": kernel_ns / n_steps / 1000.0,
            "launch_us_per_step": launch_ns / n_steps / 1000.0,
        },
    )]


def _short(name: str, width: int = 80) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."
