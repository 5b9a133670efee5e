"""What:
torch.compile's per-call host cost is large against the GPU work each call launches. Every call
of a compiled function walks the guards (`TorchDynamo Cache Lookup`), enters the
`Torch-Compiled Region`, runs `Pregraph bytecode` and the `AOTDispatcher Runtime Wrapper
Prologue`, then the generated wrapper (`## Call CompiledFxGraph ...`) before the first launch;
this rule adds up that host time (the region minus the aten ops, launches and profiler work
inside it) and compares it with the device time of the kernels launched from inside the region.

Why:
The compiled graph saves work per kernel, but the wrapper costs a fixed few hundred µs of Python
per call. When a call launches a 2 µs kernel, the wrapper is the runtime, and the compiled step
can be slower than the eager one.

Example:
`torch.compile(matmul_add)` at 64x64 in bf16 on an H200 (seed_mm64_compile): per call 34 µs of
cache lookup plus 345 µs in `Torch-Compiled Region: 0/1`, of which 115 µs is aten::addmm, for a
2.1 µs kernel. At 4096 (seed_mm4096_compile) the same wrapper costs about 200 µs per call for a
175 µs GEMM: still more host time than GPU time.

Fix:
Compile bigger pieces (the whole step, not one small function), so the fixed cost is shared by
more work; use `mode="reduce-overhead"` (CUDA graphs) to replay the launches without the Python
wrapper; or leave tiny functions eager.
"""

from __future__ import annotations

import re

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import (
    CACHE_LOOKUP,
    COMPILE_EVENT,
    COMPILED_REGION,
    fmt_ns,
    name_mask,
    nearest_ancestor,
    pattern_mask,
)
from pista.trace.facts import Facts

ID = "compile-overhead"
TITLE = "torch.compile wrapper host time is large against the GPU work it launches"
SEVERITY = Severity.WARNING
# Host wrapper time / device time of the launched work at or above which the rule fires:
# seed_mm64_compile 104x, series_mlp_compile 7.6x (batch 256: 814 µs of generated wrapper Python per
# forward), seed_mm4096_compile 1.2x (the most GPU work per call of the compiled fixtures); at 0.5 the
# wrapper still costs half the GPU time, most of which CUDA graphs would remove.
MIN_HOST_TO_GPU_RATIO = 0.5
# ... and the wrapper must cost at least this much per call (µs); the seed_mm*_compile traces pay
# 160-280 µs per call, series_mlp_compile 1.3 ms.
MIN_WRAPPER_US_PER_CALL = 20.0
EVIDENCE_EVENTS = 6

# The backward of a compiled graph runs in this autograd node, outside any Torch-Compiled Region.
COMPILED_WRAPPERS = re.compile(COMPILED_REGION.pattern + r"|^CompiledFunctionBackward$")
# What a region does on behalf of the graph itself: ops, generated triton launchers, runtime calls.
PAYLOAD_OPS = re.compile(r"^(aten|prims)::|^triton_")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if not facts.has_gpu:
        return []
    trace = facts.trace
    regions = facts.is_host & pattern_mask(facts, COMPILED_WRAPPERS)
    if not regions.any():
        return []
    compiling = facts.is_host & pattern_mask(facts, COMPILE_EVENT)
    region_of = nearest_ancestor(facts, regions)
    # first calls that compile or autotune inside the region are recompilation's business
    compiled_inside = np.unique(region_of[compiling & (region_of >= 0)])
    payload = ((facts.is_host & pattern_mask(facts, PAYLOAD_OPS)) | facts.is_launch | facts.is_overhead) & ~regions
    owner = nearest_ancestor(facts, payload | regions, inclusive=False)
    top = np.flatnonzero(payload & (owner >= 0))
    top = top[regions[owner[top]]]
    n = len(trace)
    payload_ns = np.bincount(owner[top], weights=trace.dur[top], minlength=n)
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    work = work[region_of[facts.launcher[work]] >= 0]
    gpu_ns = np.bincount(region_of[facts.launcher[work]], weights=trace.dur[work], minlength=n)

    calls = np.setdiff1d(np.flatnonzero(regions), compiled_inside)
    if calls.size == 0:
        return []
    wrapper_ns = trace.dur[calls] - payload_ns[calls]
    lookups = _lookups_before(facts, calls, compiled_inside)
    lookup_ns = np.array([trace.dur[j] if j >= 0 else 0 for j in lookups], dtype=np.int64)
    host_ns = wrapper_ns + lookup_ns
    launched_ns = gpu_ns[calls]
    host_total, gpu_total = float(host_ns.sum()), float(launched_ns.sum())
    per_call_us = host_total / calls.size / 1000.0
    ratio = host_total / gpu_total if gpu_total else float("inf")
    if ratio < MIN_HOST_TO_GPU_RATIO or per_call_us < MIN_WRAPPER_US_PER_CALL:
        return []

    evidence = []
    for k in np.argsort(-host_ns, kind="stable")[:EVIDENCE_EVENTS].tolist():
        i = int(calls[k])
        note = (f"{fmt_ns(host_ns[k])} of wrapper host time for {fmt_ns(launched_ns[k])} of GPU work launched"
                + (f" (incl. {fmt_ns(lookup_ns[k])} cache lookup)" if lookups[k] >= 0 else ""))
        evidence.append(Evidence.of(facts, i, detail=note))
        if lookups[k] >= 0 and len(evidence) < EVIDENCE_EVENTS:
            evidence.append(Evidence.of(facts, int(lookups[k]), detail="guard check before the call"))
    region_names = sorted({trace.event_name(int(i)) for i in calls})
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message=(f"{calls.size} compiled call(s) ({', '.join(region_names)}) spend {fmt_ns(host_total)} of host "
                 f"time in the torch.compile wrapper (cache lookup, guards, prologue, generated wrapper; "
                 f"{per_call_us:.1f} µs per call) for {fmt_ns(gpu_total)} of GPU work launched: "
                 f"{ratio:.1f}x."),
        advice=("Compile larger pieces (the whole step) so the fixed per-call cost is shared, use "
                "torch.compile(mode='reduce-overhead') to replay launches as a CUDA graph, or keep tiny "
                "functions eager."),
        evidence=evidence,
        metrics={
            "calls": int(calls.size),
            "wrapper_host_us": host_total / 1000.0,
            "wrapper_us_per_call": per_call_us,
            "launched_gpu_us": gpu_total / 1000.0,
            "host_to_gpu_ratio": ratio,
        },
    )]


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
