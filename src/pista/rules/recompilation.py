"""The recompilation rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
recompilation`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/recompilation.ftl."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from pista.findings import WARNING_SHARE, Context, Evidence, Finding, Record, Severity
from pista.query import COMPILE_EVENT, nearest_ancestor, pattern_mask
from pista.rules._common import COMPILED_REGION, GRAPH_CALL, us
from pista.timeline import Edit
from pista.trace.facts import Facts, merge_intervals

ID = "recompilation"
# The compiles must cost at least this share of the median step to be reported: gpu/recompile 96%;
# the compiled fixtures profiled warm (seed_mm*_compile, series_mlp_compile) compile nothing inside.
MIN_STEP_SHARE = 0.01
# Compiles in at least this many steps of the window recur: a guard fails in the steady state
# (gpu/recompile: one per step, 3 of 3). In one step only, they are a warm-up or a one-off.
MIN_RECURRING_STEPS = 2
# torch._dynamo.config.recompile_limit (cache_size_limit before torch 2.7): past this many compiled
# entries for one frame Dynamo stops compiling it and runs it eagerly ("hit config.recompile_limit (8)").
RECOMPILE_LIMIT = 8
# A frame holding at least this many entries is near the limit: gpu/recompile's frame 0 holds 4
# (0/0 before the window, 0/1-0/3 inside), one more per step; seed_mm64_compile's holds 2 (0/0, 0/1).
NEAR_LIMIT_ENTRIES = RECOMPILE_LIMIT // 2
EVIDENCE_EVENTS = 8

COMPILE_ID = re.compile(r"compile_id=(\d+)/(\d+)")
AUTOTUNE = re.compile(r"^CachingAutotuner\.")  # Inductor benchmarks kernel configs on a graph's first call

STEADY = "steady"  # compiles recur across the steps: a guard keeps failing
WARMUP = "warmup"  # first compiles of their frames, once: a warm-up inside the window
ONCE = "once"  # one recompile (a guard failed once), in one step
NEAR_LIMIT = "near-limit"  # nothing compiles inside the window, but a frame holds many entries


class FrameCompiles(Record):
    """One compiled frame (the F of compile id F/R)."""

    frame: int
    ids: tuple[str, ...]  # compile ids seen in the window ("0/1", "0/2", ...)
    entries: int  # cache entries it holds at least: the highest R + 1
    compiles: int  # compiles of it inside the window


class Recompilation(Record):
    kind: str  # STEADY, WARMUP, ONCE or NEAR_LIMIT
    compiles: int  # Dynamo compiles inside the window (autotuning runs not counted)
    autotunes: int
    compile_us: float  # host time compiling over the window
    exposed_us: float  # of it, with the GPU running none of the user's work (the impact, over the window)
    steps: int
    steps_compiling: tuple[int, ...]
    step_share_percent: float  # of the step; a one-time kind's (WARMUP, ONCE) of the window
    frames: tuple[FrameCompiles, ...]
    graphs: int  # different compiled graphs called (## Call CompiledFxGraph hashes)
    shapes: tuple[str, ...]  # input shapes of the compiled calls, in order, when they change
    recompile_limit: int
    near_limit: tuple[int, ...]  # frames holding at least NEAR_LIMIT_ENTRIES entries


class CompileSpan(Record):
    """Note on a compile (or autotuning) span."""

    compile_id: str | None
    dur_us: float
    autotune: bool


class RegionCall(Record):
    """Note on a compiled region call: its frame and recompile count."""

    frame: int
    count: int


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    trace = facts.trace
    host = facts.is_host
    if facts.steps:
        host = host & (facts.event_step >= 0)
    spans, top, span_ids = _compile_spans(facts, host)
    regions = np.flatnonzero(host & pattern_mask(facts, COMPILED_REGION))
    regions = regions[np.argsort(trace.ts[regions], kind="stable")]
    frames = _frames(facts, regions, spans, span_ids)
    near = tuple(f.frame for f in frames if f.entries >= NEAR_LIMIT_ENTRIES)
    exposed = _exposed(facts, spans, top)
    steps_compiling = tuple(sorted({s for i in spans.tolist() if (s := facts.step_of(i)) is not None}))
    kind = _kind(facts, spans, span_ids, steps_compiling)
    # compiling every step recurs; a first compile or a single recompile is paid once
    once = kind in (WARMUP, ONCE)
    impact = ctx.once(exposed) if once else ctx.per_step(exposed)
    if impact.share < MIN_STEP_SHARE and not near:
        return []
    tuning = pattern_mask(facts, AUTOTUNE)[spans]
    graphs = {m.group(1) for n in trace.name_array[trace.name[host & pattern_mask(facts, GRAPH_CALL)]]
              if (m := GRAPH_CALL.match(n))}
    shapes = _shapes_per_region(facts, regions)
    record = Recompilation(
        kind=kind,
        compiles=int(spans.size - np.count_nonzero(tuning)),
        autotunes=int(np.count_nonzero(tuning)),
        compile_us=us(trace.dur[spans].sum()),
        exposed_us=us(exposed),
        steps=ctx.step_count,
        steps_compiling=steps_compiling,
        step_share_percent=100.0 * impact.share,
        frames=frames,
        graphs=len(graphs),
        shapes=tuple(shapes) if len(set(shapes)) > 1 else (),
        recompile_limit=RECOMPILE_LIMIT,
        near_limit=near,
    )
    # Near the limit a frame is about to fall back to eager for good, a cliff the compile time in
    # this window does not show: at least a warning.
    severity = Severity.WARNING if near and impact.share < WARNING_SHARE else None
    # steady recompiles stop with shapes that repeat (dynamic=True, mark_dynamic, padding): the compiles go,
    # with what they launched (autotuning's benchmarks)
    edit = None if once else Edit("no recompiles", remove=spans.astype(np.int64))
    return [Finding(ID, record, impact, _evidence(facts, spans, span_ids, regions), severity, edit=edit)]


def _compile_spans(facts: Facts, host: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, int]]]:
    """The outermost compile spans in time order (not the compile_id markers), their mask, and each one's
    compile id (frame, count) where a marker inside it says."""
    trace = facts.trace
    compiling = host & pattern_mask(facts, COMPILE_EVENT)
    markers = compiling & pattern_mask(facts, COMPILE_ID)
    spans_mask = compiling & ~markers
    top = spans_mask & (nearest_ancestor(facts, spans_mask, inclusive=False) < 0)
    spans = np.flatnonzero(top)
    spans = spans[np.argsort(trace.ts[spans], kind="stable")]
    return spans, top, _span_ids(facts, top, markers)


def _evidence(facts: Facts, spans: np.ndarray, span_ids: dict[int, tuple[int, int]],
              regions: np.ndarray) -> list[Evidence]:
    """The longest compile spans (half the evidence at most), then the compiled regions' first calls."""
    trace = facts.trace
    evidence = []
    for i in spans[np.argsort(-trace.dur[spans], kind="stable")][: EVIDENCE_EVENTS // 2].tolist():
        cid = span_ids.get(i)
        evidence.append(Evidence.of(facts, i, CompileSpan(f"{cid[0]}/{cid[1]}" if cid else None, us(trace.dur[i]),
                                                          bool(AUTOTUNE.search(trace.event_name(i))))))
    for i in regions.tolist()[: EVIDENCE_EVENTS - len(evidence)]:
        frame, count = COMPILED_REGION.match(trace.event_name(i)).groups()  # type: ignore[union-attr]  # regions match it
        evidence.append(Evidence.of(facts, i, RegionCall(int(frame), int(count))))
    return evidence


def _frames(facts: Facts, regions: np.ndarray, spans: np.ndarray,
            span_ids: dict[int, tuple[int, int]]) -> tuple[FrameCompiles, ...]:
    trace = facts.trace
    ids: dict[int, set[int]] = defaultdict(set)
    for i in regions.tolist():
        frame, count = COMPILED_REGION.match(trace.event_name(i)).groups()  # type: ignore[union-attr]  # regions match it
        ids[int(frame)].add(int(count))
    compiled: dict[int, set[int]] = defaultdict(set)
    for i in spans.tolist():
        if i in span_ids:
            frame, count = span_ids[i]
            ids[frame].add(count)
            compiled[frame].add(count)
    return tuple(FrameCompiles(frame=f, ids=tuple(f"{f}/{c}" for c in sorted(cs)), entries=max(cs) + 1,
                               compiles=len(compiled[f])) for f, cs in sorted(ids.items()))


def _kind(facts: Facts, spans: np.ndarray, span_ids: dict[int, tuple[int, int]],
          steps_compiling: tuple[int, ...]) -> str:
    """Steady-state recompiles, a warm-up, a single recompile, or none (a frame near the limit)."""
    if spans.size == 0:
        return NEAR_LIMIT
    counts = {span_ids[i] for i in spans.tolist() if i in span_ids}
    if len(steps_compiling) >= MIN_RECURRING_STEPS:
        return STEADY
    if not facts.steps and sum(1 for _, c in counts if c > 0) >= MIN_RECURRING_STEPS:
        return STEADY  # no steps: two recompiles (R > 0) in the window recur
    if all(c == 0 for _, c in counts):
        return WARMUP
    return ONCE


def _exposed(facts: Facts, spans: np.ndarray, top: np.ndarray) -> int:
    """ns of the compile spans during which the GPU ran none of the user's work (the work compiling
    launches itself, autotuning benchmarks, is part of the compile)."""
    if spans.size == 0:
        return 0
    trace = facts.trace
    under = nearest_ancestor(facts, top)
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    work = work[under[facts.launcher[work]] < 0]
    total = int(trace.dur[spans].sum())
    if work.size == 0:
        return total
    hidden = 0
    for dev in np.unique(trace.pid[work]).tolist():
        sel = work[trace.pid[work] == dev]
        busy = merge_intervals(trace.ts[sel], trace.ts[sel] + trace.dur[sel])
        hidden = max(hidden, sum(busy.clip(int(trace.ts[i]), int(trace.ts[i] + trace.dur[i])).total
                                 for i in spans.tolist()))
    return total - hidden


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
            assert m is not None  # markers match COMPILE_ID
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
