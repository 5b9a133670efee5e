"""`pista diff` for a terminal (plain text) and as JSON."""

from __future__ import annotations

import json

from pista.diff import KINDS, Diff, RowDiff, Totals
from pista.i18n._fmt import num, short_figures
from pista.i18n._fmt import t as format_time
from pista.render.controls import sanitize, sanitize_json, sanitize_line

KIND_LABEL = {"op": "Ops", "kernel": "Kernels and copies", "gpu-annotation": "GPU regions (record_function)"}
MAX_ROWS = 15


def change(a: float, b: float) -> str:
    if a == 0:
        return "new" if b else "="
    share = 100 * (b - a) / a
    return f"{'+' if share >= 0 else ''}{num(share, 1)}%"


def busy(t: Totals) -> str:
    return "n/a" if t.gpu_busy_share is None else f"{num(100 * t.gpu_busy_share, 1)}%"


def format_calls(calls: float) -> str:
    # per step an average: whole ones print as such, the rest with two decimals
    return str(round(calls)) if abs(calls - round(calls)) < 1e-9 else num(calls, 2)


def calls_label(d: Diff) -> str:
    return "calls/step" if d.per_step else "calls"


def total_labels(d: Diff) -> tuple[str, str]:
    return ("Self CPU / step", "Self CUDA / step") if d.per_step else ("Self CPU total", "Self CUDA total")


def step_avg(t: Totals) -> str:
    return "-" if t.step_avg_us is None else format_time(t.step_avg_us)


def _side(r: RowDiff, which: str, unit: str = "calls") -> str:
    s = r.a if which == "a" else r.b
    if s is None:
        return "-"
    parts = [f"{format_calls(s.calls)} {unit}"]
    if s.self_cpu_us:
        parts.append(f"self CPU {format_time(s.self_cpu_us)}")
    if s.self_device_us:
        parts.append(f"self CUDA {format_time(s.self_device_us)}")
    return ", ".join(parts)


def outside_rows(d: Diff) -> list[tuple[str, float, float]]:
    """Per-step mode: the work outside the steps, whole (not per step), when either side has some."""
    if not d.per_step:
        return []
    rows = [("Self CPU outside steps", d.a.outside_steps_self_cpu_us or 0.0, d.b.outside_steps_self_cpu_us or 0.0),
            ("Self CUDA outside steps", d.a.outside_steps_self_device_us or 0.0,
             d.b.outside_steps_self_device_us or 0.0)]
    return [r for r in rows if r[1] or r[2]]


def render_text(d: Diff) -> str:
    """Plain text, no colour: each name from the traces on one line (a newline in one would forge a
    line of the report), and the whole string sanitized; figures in three significant digits."""
    with short_figures():
        return _render_text(d)


# the label column of the totals
WIDTH = 24
STATUS_LABEL = (("appeared", "appeared (only in B)"), ("vanished", "vanished (only in A)"), ("changed", "changed"))


def _render_text(d: Diff) -> str:
    lines = [f"pista diff\n  A: {sanitize_line(d.a.source)}\n  B: {sanitize_line(d.b.source)}", f"  Compared {d.note}", ""]
    lines += _totals_lines(d)
    for kind in KINDS:
        for status, label in STATUS_LABEL:
            lines += _rows_lines(d, kind, status, label)
    lines.append("")
    lines += _findings_lines(d)
    return sanitize("\n".join(lines) + "\n")


def _totals_lines(d: Diff) -> list[str]:
    w = WIDTH
    cpu_label, cuda_label = total_labels(d)
    lines = [f"{'':{w}}{'A':>16}{'B':>16}{'change':>10}"]
    totals = [(cpu_label, d.a.self_cpu_total_us, d.b.self_cpu_total_us),
              (cuda_label, d.a.self_device_total_us, d.b.self_device_total_us), *outside_rows(d)]
    lines += [f"{label:{w}}{format_time(a):>16}{format_time(b):>16}{change(a, b):>10}" for label, a, b in totals]
    lines.append(f"{'GPU busy':{w}}{busy(d.a):>16}{busy(d.b):>16}")
    lines.append(f"{'steps':{w}}{d.a.steps:>16}{d.b.steps:>16}")
    if d.a.step_avg_us is not None or d.b.step_avg_us is not None:
        lines.append(f"{'step time (mean)':{w}}{step_avg(d.a):>16}{step_avg(d.b):>16}")
    verdict = d.a.verdict if d.a.verdict == d.b.verdict else f"{d.a.verdict} -> {d.b.verdict}"
    lines.append(f"{'verdict':{w}}{verdict:>32}")
    return lines


def _rows_lines(d: Diff, kind: str, status: str, label: str) -> list[str]:
    """The rows of one kind that appeared, vanished or changed, the first MAX_ROWS of them."""
    rows = d.select(kind, status)
    if not rows:
        return []
    unit = calls_label(d)
    lines = ["", f"{KIND_LABEL[kind]} {label}: {len(rows)}"]
    lines += [_row_line(r, status, unit) for r in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"  ... {len(rows) - MAX_ROWS} more")
    return lines


def _row_line(r: RowDiff, status: str, unit: str) -> str:
    if status == "changed":
        return f"  ~ {sanitize_line(r.name[:80])}\n      A: {_side(r, 'a', unit)}\n      B: {_side(r, 'b', unit)}"
    mark = "+" if status == "appeared" else "-"
    return f"  {mark} {sanitize_line(r.name[:80])}  ({_side(r, 'b' if status == 'appeared' else 'a', unit)})"


def _findings_lines(d: Diff) -> list[str]:
    lines = _listed("Findings gained (in B):", "+", d.findings_gained)
    lines += _listed("Findings lost (only in A):", "-", d.findings_lost)
    if d.findings_kept:
        lines.append("Findings in both: " + ", ".join(d.findings_kept))
    if not (d.findings_gained or d.findings_lost or d.findings_kept):
        lines.append("No findings in either trace.")
    return lines


def _listed(head: str, mark: str, findings: list[dict[str, str]]) -> list[str]:
    """The head, then a line per finding (none for no finding)."""
    if not findings:
        return []
    return [head, *(f"  {mark} {f['severity']:8s} {f['rule']}: {sanitize_line(f['title'])}" for f in findings)]


def render_json(d: Diff) -> str:
    return sanitize_json(json.dumps(d.to_dict(), indent=1, ensure_ascii=False)) + "\n"
