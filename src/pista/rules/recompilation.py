"""What:
torch.compile compiles inside the profiled window: Dynamo/Inductor compile spans (`dynamo`,
`entire_frame_compile`, `_compile.compile_inner (dynamo_timed)`, `OutputGraph.call_user_compiler`,
`CompileTime`, autotuning...) run inside the steps, or one frame shows up under several compile
ids (`Torch-Compiled Region: 0/1`, `0/2`, ...: the number after the slash counts recompiles), each
running its own graph (`## Call CompiledFxGraph <hash>` with a new hash).

Why:
A compile costs hundreds of ms to seconds of host time, during which the GPU waits. Compiling once
at start-up is the deal torch.compile offers; compiling again in the steady state means a guard
failed: a new input shape (without dynamic shapes), a new dtype or device, a changed Python
constant or global, a new module instance. Each recompile also adds an entry the guards must
check on every later call, and past `torch._dynamo.config.recompile_limit` (8) Dynamo gives up and
runs the frame eagerly.

Example:
gpu/recompile on an H200: `torch.compile(fn, dynamic=False)` of `relu(x @ w) + 1` called with a
new square size each step (96, 128, 160 in the profiled steps): compile ids 0/1, 0/2, 0/3, one
compile per step (`dynamo` 220-231 ms each) plus Inductor autotuning on each new graph's first call
(60-68 ms): 865 ms of the 896 ms of steps (96.6%).

Fix:
Find what changes with `TORCH_LOGS="recompiles"` (or `torch._dynamo.explain`); mark varying
dimensions dynamic (`torch._dynamo.mark_dynamic(x, 0)`, `dynamic=True`) or pad/bucket the shapes to
a few sizes; keep Python scalars that change out of the compiled function (pass them as tensors);
warm up every shape before profiling or timing.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import Context, Evidence, Finding, Severity, legacy_finding
from pista.rules._common import COMPILE_EVENT, COMPILED_REGION, fmt_ns, nearest_ancestor, pattern_mask
from pista.trace.facts import Facts

ID = "recompilation"
TITLE = "torch.compile recompiles inside the profiled window"
SEVERITY = Severity.WARNING
# Compile spans inside the window must add up to at least this (µs) to count: gpu/recompile has
# 650 ms; the compiled fixtures profiled warm (seed_mm*_compile, series_mlp_compile) have none.
MIN_COMPILE_US = 1000.0
# A frame seen under at least this many compile ids inside the window has recompiled there, even
# if the compile itself ran before profiling started.
MIN_IDS_PER_FRAME = 2
EVIDENCE_EVENTS = 8

COMPILE_ID = re.compile(r"compile_id=(\d+)/(\d+)")
AUTOTUNE = re.compile(r"^CachingAutotuner\.")  # Inductor benchmarks kernel configs on a graph's first call
GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph (\w+)")


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    host = facts.is_host
    if facts.steps:
        host = host & (facts.event_step >= 0)
    compiling = host & pattern_mask(facts, COMPILE_EVENT)
    markers = compiling & pattern_mask(facts, COMPILE_ID)
    spans_mask = compiling & ~markers
    top = spans_mask & (nearest_ancestor(facts, spans_mask, inclusive=False) < 0)
    spans = np.flatnonzero(top)
    spans = spans[np.argsort(trace.ts[spans], kind="stable")]
    compile_ns = int(trace.dur[spans].sum())

    regions = np.flatnonzero(host & pattern_mask(facts, COMPILED_REGION))
    regions = regions[np.argsort(trace.ts[regions], kind="stable")]
    ids: dict[int, set[int]] = defaultdict(set)
    for i in regions.tolist():
        frame, count = COMPILED_REGION.match(trace.event_name(i)).groups()
        ids[int(frame)].add(int(count))
    span_ids = _span_ids(facts, top, markers)
    for frame, count in span_ids.values():
        ids[frame].add(count)
    recompiled = {f: sorted(c) for f, c in ids.items() if len(c) >= MIN_IDS_PER_FRAME}
    if compile_ns < MIN_COMPILE_US * 1000 and not recompiled:
        return []

    lo, hi = facts.window
    step_ns = sum(s.dur for s in facts.steps) if facts.steps else hi - lo
    graphs = sorted({m.group(1) for n in trace.name_array[trace.name[host & pattern_mask(facts, GRAPH_CALL)]]
                     if (m := GRAPH_CALL.match(n))})
    parts = []
    if spans.size:
        tuning = int(np.count_nonzero(pattern_mask(facts, AUTOTUNE)[spans]))
        what = f"{len(spans) - tuning} compile(s)" + (f" and {tuning} autotuning run(s)" if tuning else "")
        parts.append(f"{what} ran inside the {'steps' if facts.steps else 'profiled window'}: "
                     f"{fmt_ns(compile_ns)} of host time, {100 * compile_ns / max(step_ns, 1):.1f}% of it")
    if ids:
        parts.append("compile ids seen: " + "; ".join(
            f"frame {f}: " + ", ".join(f"{f}/{c}" for c in sorted(cs)) for f, cs in sorted(ids.items())))
    if len(graphs) > 1:
        parts.append(f"{len(graphs)} different compiled graphs called (## Call CompiledFxGraph hashes)")
    shapes = _shapes_per_region(facts, regions)
    if len(set(shapes)) > 1:
        parts.append("input shapes per call: " + " -> ".join(shapes))

    evidence = []
    for i in spans[np.argsort(-trace.dur[spans], kind="stable")][: EVIDENCE_EVENTS // 2].tolist():
        cid = span_ids.get(i)
        note = f"compile {cid[0]}/{cid[1]}" if cid else "compile"
        evidence.append(Evidence.of(facts, i, detail=f"{note}: {fmt_ns(trace.dur[i])}"))
    for i in regions.tolist()[: EVIDENCE_EVENTS - len(evidence)]:
        evidence.append(Evidence.of(facts, i, detail="compiled region call (frame/recompile count)"))
    return [legacy_finding(
        rule=ID,
        severity=SEVERITY,
        title=TITLE,
        message="torch.compile compiled during the profile: " + "; ".join(parts) + ".",
        advice=("Find the failing guard with TORCH_LOGS='recompiles'; mark varying dimensions dynamic "
                "(torch._dynamo.mark_dynamic, dynamic=True) or bucket shapes; pass changing scalars as tensors; "
                "warm up every shape before profiling."),
        evidence=evidence,
        metrics={
            "compiles": int(spans.size - np.count_nonzero(pattern_mask(facts, AUTOTUNE)[spans])),
            "compile_spans": int(spans.size),
            "compile_us": compile_ns / 1000.0,
            "compile_share_percent": 100.0 * compile_ns / max(step_ns, 1),
            "compile_ids": {str(f): [f"{f}/{c}" for c in sorted(cs)] for f, cs in ids.items()},
            "graphs": len(graphs),
        },
    )]


def _span_ids(facts: Facts, top: np.ndarray, markers: np.ndarray) -> dict[int, tuple[int, int]]:
    """The compile id of each top-level compile span, from the `..._data: compile_id=F/C` markers
    torch records inside it."""
    trace = facts.trace
    owner = nearest_ancestor(facts, top, inclusive=False)
    out: dict[int, tuple[int, int]] = {}
    for j in np.flatnonzero(markers & (owner >= 0)).tolist():
        span = int(owner[j])
        if span not in out:
            m = COMPILE_ID.search(trace.event_name(j))
            out[span] = (int(m.group(1)), int(m.group(2)))
    return out


def _shapes_per_region(facts: Facts, regions: np.ndarray) -> list[str]:
    """The input shapes of the first recorded op inside each compiled region call."""
    trace = facts.trace
    inside = nearest_ancestor(facts, np.isin(np.arange(len(trace)), regions), inclusive=False)
    ops = np.flatnonzero((inside >= 0) & trace.category_mask({"cpu_op"}) & pattern_mask(facts, re.compile(r"^aten::")))
    ops = ops[np.argsort(trace.ts[ops], kind="stable")]
    out = []
    for r in regions.tolist():
        mine = ops[inside[ops] == r]
        dims = next((d for d in (trace.args(int(o)).get("Input Dims") for o in mine[:5]) if d), None)
        if dims is not None:
            out.append(str([d for d in dims if d]))
    return out
