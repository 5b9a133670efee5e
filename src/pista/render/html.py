"""The analysis as one self-contained HTML page: verdict, findings with evidence, the rebuilt table,
a timeline of the CPU and GPU lanes (steps, GPU gaps and dead windows shaded, findings pinned),
kernel-duration distributions and step widths.

Everything is inlined (the charting library is a vendored Apache ECharts build, see
`assets/README.md`), so the file opens without a network. Text from the trace reaches the page
only through `html.escape` or through JSON whose `<`, `>` and `&` are \\u-escaped.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from pista.finding import Evidence, Finding
from pista.i18n import lane_label, localize, words
from pista.i18n._fmt import num, pct, short_figures, t
from pista.memory import MemoryTimeline, timelines
from pista.trace.facts import Facts, Lane, Step

if TYPE_CHECKING:  # an Analysis is read, never built, here: pista.analysis shows one in a notebook with this page's parts
    from pista.analysis import Analysis
    from pista.context import Summary
    from pista.table import Row, Table

# Timeline budget: the 64 MB GPT trace has ~140k events. Two layers: zoomed out, runs of events
# under 1/OVERVIEW_PIXELS of the window are merged into blocks (each at least ~0.5 px wide at
# 1400 px); zoomed in past 1/OVERVIEW_ZOOM of the window, the fine layer, merged only under
# 1/PIXELS_ACROSS (still under a pixel at 40x zoom), each row cut to its share of MAX_RECTS
# (GPU streams first, up to GPU_SHARE of it; the GPT trace's 17k kernels all fit).
# ECharts draws only the visible part of a custom series, so 30k stays smooth when zoomed.
MAX_RECTS = 30_000
PIXELS_ACROSS = 60_000
MAX_OVERVIEW_RECTS = 8_000
OVERVIEW_PIXELS = 3_000
OVERVIEW_ZOOM = 6
GPU_SHARE = 2 / 3
# Nesting levels drawn per host thread: the step, the module/op, its aten op, the launch.
MAX_HOST_DEPTH = 4
# GPU idle gaps drawn: the longest ones, at least this share of the window.
MAX_GAPS = 400
MIN_GAP_SHARE = 1 / 2000
# Kernel-duration distributions: the kernels with the most total time, seen at least twice.
MAX_KERNELS = 14
TABLE_ROWS = 30
MAX_EVIDENCE_SHOWN = 8
OPEN_EVIDENCE = 2  # findings whose evidence table starts unfolded
LANE_ORDER = {"cpu": 0, "gpu": 1, "overhead": 2}


# The page's longer labels, by key; a language's WORDS (pista.i18n) replaces them.
_HINTS = {
    "timeline hint": ("Drag or scroll to zoom; click a finding's evidence row to jump there. Shaded: steps "
                      "(alternating), GPU idle gaps (red), dead windows (grey). Pins: the findings' evidence."),
    "kernels hint": "Per kernel, across its calls: min, quartiles, max (log scale). The kernels with the most GPU time.",
    "steps hint": "Each ProfilerStep's wall time; a first step much wider than the rest is a cold start.",
}


def render(analysis: Analysis, lang: str = "en") -> str:
    """The page; its figures in three significant digits (the charts' data keeps every digit)."""
    with short_figures():
        return _render(analysis, lang)


def _render(analysis: Analysis, lang: str) -> str:
    analysis = localize(analysis, lang)
    data = report_data(analysis)
    labels = {**_HINTS, **words(lang)}
    data["words"] = labels  # the charts' labels (report.js); English where a key is missing

    def w(key: str) -> str:
        return html.escape(labels.get(key, key))

    title = f"pista: {analysis.source}"
    return _PAGE.format(
        lang=html.escape(lang),
        title=html.escape(title),
        css=_asset("report.css"),
        header=_header(analysis, labels, lang),
        findings=_findings(analysis, labels, lang),
        timeline_label=w("Timeline"), timeline_hint=w("timeline hint"), findings_label=w("Findings"),
        kernels_label=w("Kernel durations"), kernels_hint=w("kernels hint"), steps_label=w("Step widths"),
        steps_hint=w("steps hint"), table_label=w("Rebuilt key_averages table"), made_by=w("made by pista"),
        charts_by=w("charts by"),
        table=_table(analysis),
        data=script_json(data),
        echarts=_asset("echarts.pista.min.js"),
        js=_asset("report.js"),
    )


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no `</script>`, no `<!--`, no line separators."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@cache
def _asset(name: str) -> str:
    return resources.files("pista.render").joinpath("assets", name).read_text(encoding="utf-8")


# -- data for the charts ------------------------------------------------------------------------


def report_data(analysis: Analysis) -> dict[str, Any]:
    facts = analysis.facts
    lo, hi = facts.window if (facts.has_gpu or facts.steps) else (facts.trace.start_ns, facts.trace.end_ns)
    origin = min(lo, facts.trace.start_ns) if facts.steps else lo
    names: list[str] = []
    name_ids: dict[str, int] = {}

    def intern(name: str) -> int:
        if name not in name_ids:
            name_ids[name] = len(names)
            names.append(name)
        return name_ids[name]

    timeline = _timeline(facts, origin, lo, hi, intern)
    timeline["findings"] = _pins(analysis.findings, origin, timeline["rows"])
    timeline["dead"] = _dead_windows(analysis.findings, origin)
    return {
        "names": names,
        "timeline": timeline,
        "kernels": _kernel_distributions(analysis),
        "steps": _step_widths(analysis),
    }


def _dead_windows(findings: list[Finding], origin: int) -> list[list[float]]:
    """[start, end] ms of each dead-window finding's window (its "dead window" evidence, else its first)."""
    return [
        [_ms(e.ts_us * 1000 - origin), _ms(e.ts_us * 1000 + e.dur_us * 1000 - origin)]
        for f in findings if f.rule == "dead-window"
        for e in [e for e in f.evidence if e.name == "dead window"][:1] or f.evidence[:1] if e.dur_us > 0
    ]


def _ms(ns: float) -> float:
    return round(float(ns) / 1e6, 6)


def _timeline(facts: Facts, origin: int, lo: int, hi: int, intern) -> dict[str, Any]:
    trace = facts.trace
    rows, groups = _timeline_rows(facts, lo, hi)
    span = max(hi - lo, 1)
    gpu_rows = {i for i, r in enumerate(rows) if r["kind"] == "gpu"}
    fine = _layer(trace, groups, gpu_rows, max(span // PIXELS_ACROSS, 1), MAX_RECTS, origin, intern)
    overview = _layer(trace, groups, gpu_rows, max(span // OVERVIEW_PIXELS, 1), MAX_OVERVIEW_RECTS, origin, intern)
    total = sum(int(g[1].size) for g in groups)
    shown = len(fine["row"])
    steps = [[s.number, _ms(s.start - origin), _ms(s.end - origin)] for s in facts.steps]
    return {"rows": rows, "rects": fine, "overview": overview, "overviewSpan": OVERVIEW_ZOOM,
            "gaps": _gap_bands(facts, rows, origin, lo, hi), "stepBands": steps,
            "window": [_ms(lo - origin), _ms(hi - origin)], "origin_us": origin / 1000.0,
            "events": total, "shown": shown, "cap": MAX_RECTS}


def _timeline_rows(facts: Facts, lo: int, hi: int) -> tuple[list[dict[str, Any]], list[tuple[int, np.ndarray]]]:
    """The timeline's rows (a host thread's up to MAX_HOST_DEPTH levels, each stream, ...) and each row's events
    in the window."""
    lanes = sorted((lane for lane in facts.lanes if lane.kind in LANE_ORDER),
                   key=lambda lane: (LANE_ORDER[lane.kind], lane.pid, lane.tid))
    rows: list[dict[str, Any]] = []
    groups: list[tuple[int, np.ndarray]] = []
    for lane in lanes:
        ev, depth = _lane_events(facts, lane, lo, hi)
        levels = min(int(depth.max()) + 1 if ev.size else 1, MAX_HOST_DEPTH)
        for d in range(levels):
            rows.append({"label": lane.label if d == 0 else "", "lane": lane.label, "kind": lane.kind,
                         "pid": lane.pid, "depth": d})
            groups.append((len(rows) - 1, ev[depth == d]))
    return rows, groups


def _lane_events(facts: Facts, lane: Lane, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """A lane's events in the window [lo, hi] (the profiler's overhead lane: all of them) and their depths (0 off
    the host threads)."""
    trace = facts.trace
    ev = lane.events
    ev = ev[(trace.ts[ev] + trace.dur[ev] >= lo) & (trace.ts[ev] <= hi)] if lane.kind != "overhead" else ev
    return ev, facts.depth[ev] if lane.kind == "cpu" else np.zeros(ev.size, np.int32)


def _gap_bands(facts: Facts, rows: list[dict[str, Any]], origin: int, lo: int, hi: int) -> list[list[Any]]:
    """Each device's longest idle gaps (at most MAX_GAPS, each at least MIN_GAP_SHARE of the window), as bands
    over its stream rows: [first row, last row, start ms, end ms]."""
    gaps: list[list[Any]] = []
    for dev, busy in facts.gpu_busy.items():
        idle = busy.gaps(lo, hi)
        width = idle.end - idle.start
        order = np.argsort(-width, kind="stable")[:MAX_GAPS]
        order = order[width[order] >= (hi - lo) * MIN_GAP_SHARE]
        gpu_rows = [i for i, r in enumerate(rows) if r["kind"] == "gpu" and r["pid"] == dev]
        if gpu_rows:
            gaps += [[min(gpu_rows), max(gpu_rows), _ms(s - origin), _ms(e - origin)]
                     for s, e in zip(idle.start[order].tolist(), idle.end[order].tolist(), strict=True)]
    return gaps


def _fair_cap(sizes: np.ndarray, budget: int) -> int:
    """The largest per-row cap c with sum(min(size, c)) <= budget."""
    if sizes.size == 0 or sizes.sum() <= budget:
        return int(sizes.max()) if sizes.size else 0
    lo, hi = 0, int(sizes.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if np.minimum(sizes, mid).sum() <= budget else (lo, mid - 1)
    return lo


def _layer(trace, groups: list[tuple[int, np.ndarray]], gpu_rows: set[int], min_ns: int, budget: int,
           origin: int, intern) -> dict[str, list]:
    """Rectangles for one zoom level: tiny neighbours merged, then each row cut to its share of the
    budget (rows with few rectangles keep them all), keeping a row's longest."""
    merged = [(row, *_merge_tiny(trace.ts[sel], trace.ts[sel] + trace.dur[sel], trace.name[sel], min_ns))
              for row, sel in groups]
    caps = _caps([m[1].size for m in merged], [g[0] in gpu_rows for g in groups], budget)
    parts: list[tuple[np.ndarray, ...]] = []
    for cap, (row, start, end, name, count) in zip(caps, merged, strict=False):
        keep = _longest(start, end, cap)
        parts.append((np.full(keep.size, row), start[keep], end[keep], name[keep], count[keep]))
    return _rect_columns(trace, parts, origin, intern)


def _rect_columns(trace, parts: list[tuple[np.ndarray, ...]], origin: int, intern) -> dict[str, list]:
    """Each row's kept rectangles (row, start, end, name id, count) as the page's columns: ms from the origin,
    names interned."""
    if not parts:
        return {"row": [], "start": [], "end": [], "name": [], "count": []}
    rows, starts, ends, names, counts = (np.concatenate(c) for c in zip(*parts, strict=True))
    ids = {int(n): intern(trace.names[int(n)]) for n in np.unique(names)}
    # ms to 0.1 µs: finer than any pixel at any zoom the page allows, and ~4 bytes less per number
    return {"row": rows.tolist(), "start": np.round((starts - origin) / 1e6, 4).tolist(),
            "end": np.round((ends - origin) / 1e6, 4).tolist(), "name": [ids[int(n)] for n in names.tolist()],
            "count": counts.tolist()}


def _caps(row_sizes: list[int], gpu: list[bool], budget: int) -> list[int]:
    """Each row's cap on its rectangles: GPU streams first (what the GPU did is the point of the picture), up to
    GPU_SHARE of the budget, the host rows the rest."""
    sizes, is_gpu = np.array(row_sizes or [0]), np.array(gpu or [False])
    gpu_caps = _fair_cap(sizes[is_gpu], int(budget * GPU_SHARE))
    left = budget - int(np.minimum(sizes[is_gpu], gpu_caps).sum())
    host_caps = _fair_cap(sizes[~is_gpu], left)
    return [gpu_caps if gpu else host_caps for gpu in is_gpu.tolist()]


def _longest(start: np.ndarray, end: np.ndarray, cap: int) -> np.ndarray:
    """The indices of the `cap` longest rectangles, in order (all of them where there are no more)."""
    if start.size > cap:
        return np.sort(np.argpartition(-(end - start), cap)[:cap])
    return np.arange(start.size)


def _merge_tiny(start: np.ndarray, end: np.ndarray, name: np.ndarray,
                min_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of neighbouring events each narrower than min_ns, with gaps under min_ns, become one
    rectangle (named after its first event, with the count); wide events stay as they are."""
    if start.size == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty
    order = np.argsort(start, kind="stable")
    start, end, name = start[order], end[order], name[order]
    tiny = (end - start) < min_ns
    running_end = np.maximum.accumulate(end)
    new_block = np.ones(start.size, dtype=bool)
    new_block[1:] = ~(tiny[1:] & tiny[:-1] & (start[1:] - running_end[:-1] < min_ns))
    block = np.cumsum(new_block) - 1
    first = np.flatnonzero(new_block)
    block_end = np.maximum.reduceat(end, first)  # not a zero-filled max: times may be negative
    count = np.bincount(block)
    return start[first], block_end, name[first], count


def _pins(findings: list[Finding], origin: int, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    row_of = {r["lane"]: i for i, r in reversed(list(enumerate(rows)))}
    # evidence about a whole device ("GPU 0": an idle gap) pins to that device's first stream
    for i, r in reversed(list(enumerate(rows))):
        device = re.match(r"(GPU \d+) stream ", r["lane"])
        if device:
            row_of.setdefault(device.group(1), i)
    pins = []
    for k, f in enumerate(findings):
        assert f.severity is not None  # Finding.__post_init__ sets it
        for e in f.evidence[:MAX_EVIDENCE_SHOWN]:
            pins.append({"finding": k, "rule": f.rule, "severity": f.severity.value, "title": f.title,
                         "name": e.name, "lane": e.lane, "row": row_of.get(e.lane, -1), "step": e.step,
                         "note": e.note, "start": _ms(e.ts_us * 1000 - origin),
                         "end": _ms((e.ts_us + e.dur_us) * 1000 - origin)})
    return pins


def _kernel_distributions(analysis: Analysis) -> list[dict[str, Any]]:
    facts = analysis.facts
    trace = facts.trace
    idx = np.flatnonzero(facts.is_device_work & (trace.cat == trace.category_id("kernel")))
    if idx.size == 0:
        return []
    ids, inverse = np.unique(trace.name[idx], return_inverse=True)
    calls = np.bincount(inverse)
    totals = np.bincount(inverse, weights=trace.dur[idx])
    flagged = _flagged_kernels(analysis)
    out = []
    for k in _chosen_kernels(ids, calls, totals, flagged):
        d = trace.dur[idx[inverse == k]] / 1000.0
        q = np.quantile(d, [0.0, 0.25, 0.5, 0.75, 1.0])
        out.append({"name": trace.names[int(ids[k])], "calls": int(calls[k]),
                    "total_us": float(totals[k] / 1000.0), "box": [round(float(v), 3) for v in q],
                    "mean": float(d.mean()), "cv": float(d.std() / d.mean()) if d.mean() else 0.0,
                    "flagged": int(ids[k]) in flagged})
    return out


def _chosen_kernels(ids: np.ndarray, calls: np.ndarray, totals: np.ndarray, flagged: set[int]) -> list[int]:
    """The kernels (indices into ids) with two calls or more to draw: those flagged, then the most time, up to
    MAX_KERNELS."""
    candidates = [k for k in np.argsort(-totals, kind="stable").tolist() if calls[k] >= 2]
    chosen = [k for k in candidates if int(ids[k]) in flagged]
    return chosen + [k for k in candidates if k not in chosen][: max(MAX_KERNELS - len(chosen), 0)]


def _flagged_kernels(analysis: Analysis) -> set[int]:
    """The name ids of the kernels kernel-variability names (its record's and its evidence's)."""
    trace = analysis.facts.trace
    name_id = {name: i for i, name in enumerate(trace.names)}
    return {name_id[n] for f in analysis.findings if f.rule == "kernel-variability"
            for n in [f.metrics.get("name"), *(e.name for e in f.evidence)] if n in name_id}


def _step_widths(analysis: Analysis) -> list[dict[str, Any]]:
    facts = analysis.facts
    out = []
    busy = next(iter(facts.gpu_busy.values()), None)
    for s in facts.steps:
        share = busy.clip(s.start, s.end).total / s.dur if busy is not None and s.dur else None
        out.append({"number": s.number, "ms": s.dur / 1e6, "gpu_busy": share})
    return out


# -- server-rendered parts (readable without JavaScript) ----------------------------------------


def _header(analysis: Analysis, labels: dict[str, str], lang: str = "en") -> str:
    def w(key: str) -> str:
        return labels.get(key, key)

    s = analysis.summary
    stat_html = "".join(f'<div class="stat"><span class="k">{html.escape(k)}</span>'
                        f'<span class="v">{html.escape(v)}</span></div>' for k, v in _stats(s, w))
    chips = _severity_chips(analysis.findings, w)
    notices = "".join(f'<p class="notice">{html.escape(w("notice"))}: {html.escape(n)}</p>' for n in analysis.notices)
    bars = _memory_chart(analysis, labels) + _time_bars(s, labels, lang)
    return (f'<div class="verdict v-{html.escape(s.verdict)}">{html.escape(s.verdict)}</div>'
            f'<div class="stats">{stat_html}</div>{notices}{_start_here(analysis, labels)}{bars}'
            f'<div class="chips">{chips}</div>')


def _severity_chips(findings: list[Finding], w: Callable[[str], str]) -> str:
    """How many findings of each severity, the severities with none left out."""
    counts = {sev: sum(f.severity is not None and f.severity.value == sev for f in findings)
              for sev in ("critical", "warning", "info")}
    return "".join(f'<span class="chip sev-{sev}">{n} {html.escape(w(sev))}</span>' for sev, n in counts.items() if n)


def _time_bars(s: Summary, labels: dict[str, str], lang: str) -> str:
    """The GPU's time per step by purpose, then each host thread's by region, a stacked bar each."""
    return _stacked(labels.get("GPU time per step", "GPU time per step"), s.gpu_time_by_purpose, labels) + "".join(
        _stacked(labels.get("Host time per step", "Host time per step") + ", " + lane_label(lane, lang), regions, labels)
        for lane, regions in s.host_time_by_region.items())


def _stats(s: Summary, w: Callable[[str], str]) -> list[tuple[str, str]]:
    busy = "n/a" if s.gpu_busy_share is None else pct(s.gpu_busy_share)
    return [
        ("Self CPU total", t(s.self_cpu_total_us)),
        ("Self CUDA total", t(s.self_device_total_us)),
        (w("GPU busy"), f"{busy} {w('of')} {t(s.window_us)}"),
        (w("Steps"), str(s.steps)),
        (w("Events"), f"{s.events:,}"),
        (w("Device"), ", ".join(s.devices) or w("none recorded")),
    ]


def _start_here(analysis: Analysis, labels: dict[str, str]) -> str:
    top = analysis.top_fix
    if top is None:
        return ""
    return (f'<p class="top-fix"><b>{html.escape(labels.get("Start here", "Start here"))}:</b> '
            f'{html.escape(top.fix_here)} '
            f'<span class="impact">({html.escape(top.rule)}, {html.escape(_impact(top, labels))})</span></p>')


MEMORY_CHART_POINTS = 600  # points per device line: enough for a step's shape, small on big traces


def _memory_chart(analysis: Analysis, labels: dict[str, str]) -> str:
    """Memory allocated over time per device (profile_memory=True traces), steps shaded: an inline SVG."""
    lines = timelines(analysis.facts)
    if not lines:
        return ""
    t0 = min(int(tl.ts[0]) for tl in lines)
    t1 = max(int(tl.ts[-1]) for tl in lines)
    top = max(max(tl.peak_allocated, 1) for tl in lines)
    width, height = 1000.0, 120.0

    def x(ns: float) -> float:
        return (ns - t0) / max(t1 - t0, 1) * width

    steps = _memory_steps(analysis.facts.steps, x, t0, t1, height)
    paths = [_memory_line(tl, x, top, height) for tl in lines]
    legend = _memory_legend(lines, labels)
    head = html.escape(labels.get("Memory allocated over time", "Memory allocated over time"))
    return (f'<div class="memory"><span class="k">{head}</span><svg viewBox="0 0 {width:.0f} {height:.0f}" '
            f'preserveAspectRatio="none">{steps}{"".join(paths)}</svg><ul>{legend}</ul></div>')


def _memory_steps(steps: list[Step], x: Callable[[float], float], t0: int, t1: int, height: float) -> str:
    """Every other step shaded, cut to the chart's time [t0, t1]."""
    return "".join(f'<rect class="step" x="{x(max(st.start, t0)):.1f}" y="0" '
                   f'width="{max(0.0, x(min(st.end, t1)) - x(max(st.start, t0))):.1f}" height="{height}"/>'
                   for k, st in enumerate(steps) if k % 2 == 0)


def _memory_line(tl: MemoryTimeline, x: Callable[[float], float], top: float, height: float) -> str:
    """One device's memory allocated as a polyline of at most MEMORY_CHART_POINTS points, `top` at the chart's top."""
    pick = np.unique(np.linspace(0, tl.ts.size - 1, min(tl.ts.size, MEMORY_CHART_POINTS)).astype(np.int64))
    points = " ".join(f"{x(float(tl.ts[k])):.1f},{height - tl.allocated[k] / top * (height - 4):.1f}" for k in pick)
    return f'<polyline class="mem" points="{points}"><title>{html.escape(tl.device)}</title></polyline>'


def _memory_legend(lines: list[MemoryTimeline], labels: dict[str, str]) -> str:
    """Per device: its peaks allocated and reserved."""
    return "".join(f"<li>{html.escape(tl.device)}: {html.escape(labels.get('peak allocated', 'peak allocated'))} "
                   f"{num(tl.peak_allocated / 2**20, 1)} MiB, {html.escape(labels.get('reserved', 'reserved'))} "
                   f"{num(tl.peak_reserved / 2**20, 1)} MiB</li>" for tl in lines)


def _stacked(head: str, by_purpose: dict[str, float], labels: dict[str, str]) -> str:
    """Time per step by purpose (or host region) as one stacked bar with its legend (no script needed)."""
    total = sum(by_purpose.values())
    if total <= 0:
        return ""
    parts = [(p, v) for p, v in sorted(by_purpose.items(), key=lambda kv: -kv[1]) if v > 0]
    bar = "".join(f'<span class="seg p-{p}" style="width:{100 * v / total:.3f}%" '
                  f'title="{html.escape(labels.get(p, p))}: {html.escape(t(v))}"></span>' for p, v in parts)
    legend = "".join(f'<li><span class="sw p-{p}"></span>{html.escape(labels.get(p, p))} '
                     f'{html.escape(t(v))} ({pct(v / total)})</li>' for p, v in parts)
    return f'<div class="purposes"><span class="k">{html.escape(head)}</span><div class="bar">{bar}</div><ul>{legend}</ul></div>'



def _impact(f: Finding, labels: dict[str, str]) -> str:
    # start-up: terminal loads rich (48 modules), for one helper
    from pista.render.terminal import impact_words

    return impact_words(f, lambda key: labels.get(key, key))


def _findings(analysis: Analysis, labels: dict[str, str], lang: str) -> str:
    def w(key: str) -> str:
        return html.escape(labels.get(key, key))

    if not analysis.findings:
        return f'<p class="empty">{w("No findings: none of the rules fired on this trace.")}</p>'
    origin_us = analysis.facts.trace.start_ns / 1000.0
    return "".join(_finding_card(k, f, origin_us, labels, lang) for k, f in enumerate(analysis.findings))


def _finding_card(k: int, f: Finding, origin_us: float, labels: dict[str, str], lang: str) -> str:
    """The k-th finding: its title, message, impact, fix and evidence."""
    def w(key: str) -> str:
        return html.escape(labels.get(key, key))

    assert f.severity is not None  # Finding.__post_init__ sets it
    return (f'<article class="finding sev-{f.severity.value}" id="finding-{k}">'
            f'<header><span class="sev">{w(f.severity.value)}</span> <code class="rule">{html.escape(f.rule)}</code>'
            f'<h3>{html.escape(f.title)}</h3></header>'
            f'<p class="message">{html.escape(f.message)}</p>'
            f'<p class="impact"><b>{w("impact")}:</b> {html.escape(_impact(f, labels))}: {html.escape(f.basis)}</p>'
            f'<p class="advice"><b>{w("Fix:")}</b> {html.escape(f.advice)}</p>'
            f'{_evidence_table(k, f, origin_us, labels, lang)}</article>')


def _evidence_table(k: int, f: Finding, origin_us: float, labels: dict[str, str], lang: str) -> str:
    """The k-th finding's evidence, its first MAX_EVIDENCE_SHOWN rows, open for the first OPEN_EVIDENCE
    findings ("" for none)."""
    def w(key: str) -> str:
        return html.escape(labels.get(key, key))

    if not f.evidence:
        return ""
    rows = "".join(_evidence_row(k, e, origin_us, labels, lang) for e in f.evidence[:MAX_EVIDENCE_SHOWN])
    more = (f'<p class="more">... {w("and")} {len(f.evidence) - MAX_EVIDENCE_SHOWN} {w("more events")}</p>'
            if len(f.evidence) > MAX_EVIDENCE_SHOWN else "")
    return (f'<details{" open" if k < OPEN_EVIDENCE else ""}><summary>{w("evidence")}: {len(f.evidence)} '
            f'{w("events") if len(f.evidence) != 1 else w("event")}</summary><table class="evidence"><thead><tr>'
            f'<th>{w("evidence")}</th><th>{w("lane")}</th><th>{w("step")}</th>'
            f'<th class="num">{w("at")}</th><th class="num">{w("dur")}</th><th>{w("note")}</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>{more}</details>')


def _evidence_row(k: int, e: Evidence, origin_us: float, labels: dict[str, str], lang: str) -> str:
    step = "" if e.step is None else str(e.step)
    return (f'<tr class="ev" data-finding="{k}" data-start="{e.ts_us:.3f}" data-dur="{e.dur_us:.3f}">'
            f'<td class="name" title="{html.escape(e.name)}">{html.escape(e.name)}</td>'
            f"<td>{html.escape(lane_label(e.lane, lang))}</td><td>{step}</td>"
            f'<td class="num">+{t(e.ts_us - origin_us)}</td>'
            f'<td class="num">{html.escape(t(e.dur_us))}</td><td>{html.escape(e.note)}'
            f'{_frame(e.stack, labels)}</td></tr>')


def _frame(stack: tuple[str, ...], labels: dict[str, str]) -> str:
    if not stack:
        return ""
    return (f' <span class="frame" title="{html.escape(" < ".join(stack))}">{html.escape(labels.get("in", "in"))} '
            f'<code>{html.escape(stack[0])}</code></span>')


def _table(analysis: Analysis) -> str:
    table = analysis.table
    has_gpu = analysis.facts.has_gpu
    sort_by = "cuda_time_total" if has_gpu else "cpu_time_total"
    rows = table.sorted(sort_by, TABLE_ROWS)
    head = ["Self CPU", "Self CPU %", "CPU total", "CPU avg", *(_DEVICE_COLUMNS if has_gpu else ()), "# Calls"]
    body = [f'<tr class="{r.device_type.lower()}"><td class="name" title="{html.escape(r.name)}">'
            f"{html.escape(r.name)}</td>" + "".join(f'<td class="num">{c}</td>' for c in _row_cells(r, table, has_gpu))
            + "</tr>" for r in rows]
    totals = f"Self CPU time total: {t(table.self_cpu_total_us)}"
    if has_gpu:
        totals += f" &middot; Self CUDA time total: {t(table.self_device_total_us)}"
    header = "<th>Name</th>" + "".join(f'<th class="num">{h}</th>' for h in head)
    return (f'<table class="kavg"><thead><tr>{header}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table><p class="totals">{totals} &middot; sorted by {sort_by}, '
            f"top {len(rows)} of {len(table.rows)} rows</p>")


_DEVICE_COLUMNS = ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA avg")  # the op table's, where the trace has a GPU


def _row_cells(r: Row, table: Table, has_gpu: bool) -> list[str]:
    """An op table row's figures, after its name: CPU, then the device's where there is one, then the calls."""
    cells = [t(r.self_cpu_us), _percent(r.self_cpu_us, table.self_cpu_total_us), t(r.cpu_total_us), t(r.cpu_avg_us)]
    if has_gpu:
        cells += [t(r.self_device_us), _percent(r.self_device_us, table.self_device_total_us),
                  t(r.device_total_us), t(r.device_avg_us)]
    return [*cells, str(r.calls)]


def _percent(part: float, whole: float) -> str:
    return f"{num(100 * part / whole, 2)}%" if whole else "0%"


_PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>{title}</title>
<style>{css}</style></head>
<body>
<header class="top"><div class="brand">pista</div><h1>{title}</h1></header>
<main>
<section id="summary" class="card">{header}</section>
<section id="timeline-section" class="card"><h2>{timeline_label}</h2>
<p class="hint">{timeline_hint}</p>
<div id="timeline" class="chart"></div><p id="timeline-note" class="hint"></p></section>
<section id="findings"><h2>{findings_label}</h2>{findings}</section>
<div class="two">
<section class="card"><h2>{kernels_label}</h2><p class="hint">{kernels_hint}</p><div id="kernels" class="chart"></div></section>
<section class="card"><h2>{steps_label}</h2><p class="hint">{steps_hint}</p><div id="steps" class="chart"></div></section>
</div>
<section id="table" class="card"><h2>{table_label}</h2>{table}</section>
</main>
<footer>{made_by} &middot; {charts_by} Apache ECharts (Apache-2.0), inlined</footer>
<script id="pista-data" type="application/json">{data}</script>
<script>{echarts}</script>
<script>{js}</script>
</body></html>
"""
