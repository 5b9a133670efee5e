"""`pista diff --format html`: one self-contained page (pista's report style, no script needed)."""

from __future__ import annotations

import html

from pista.diff import KINDS, Diff, RowDiff
from pista.i18n._fmt import short_figures
from pista.i18n._fmt import t as format_time
from pista.render.diff_text import (
    KIND_LABEL,
    busy,
    calls_label,
    change,
    format_calls,
    outside_rows,
    step_avg,
    total_labels,
)
from pista.render.html import _asset

STATUS_LABEL = {"appeared": "appeared (only in B)", "vanished": "vanished (only in A)", "changed": "changed"}


def _cell(side, attr: str) -> str:
    return "" if side is None else html.escape(format_time(getattr(side, attr)))


def _rows(rows: list[RowDiff], calls: str = "calls") -> str:
    body = []
    for r in rows:
        a, b = r.a, r.b
        body.append(
            f'<tr><td class="name" title="{html.escape(r.name)}">{html.escape(r.name)}</td>'
            f'<td class="num">{format_calls(a.calls) if a else ""}</td>'
            f'<td class="num">{format_calls(b.calls) if b else ""}</td>'
            f'<td class="num">{_cell(a, "self_cpu_us")}</td><td class="num">{_cell(b, "self_cpu_us")}</td>'
            f'<td class="num">{_cell(a, "self_device_us")}</td><td class="num">{_cell(b, "self_device_us")}</td>'
            f'<td class="num">{_delta(r.delta_self_cpu_us)}</td><td class="num">{_delta(r.delta_self_device_us)}</td></tr>')
    head = "".join(f'<th class="num">{h}</th>' for h in (f"{calls} A", f"{calls} B", "Self CPU A", "Self CPU B",
                                                          "Self CUDA A", "Self CUDA B", "Δ Self CPU", "Δ Self CUDA"))
    return ('<table class="kavg diff"><colgroup><col style="width:34%"></colgroup><thead><tr><th>Name</th>'
            + head + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def _delta(us: float) -> str:
    if not us:
        return ""
    cls = "up" if us > 0 else "down"
    return f'<span class="{cls}">{"+" if us > 0 else "-"}{html.escape(format_time(abs(us)))}</span>'


def render(d: Diff) -> str:
    """The page, figures in three significant digits."""
    with short_figures():
        return _render(d)


def _render(d: Diff) -> str:
    e = html.escape
    head = ('<table class="kavg"><thead><tr><th></th><th class="num">A</th><th class="num">B</th>'
            '<th class="num">change</th></tr></thead><tbody>'
            + "".join(f"<tr><td>{e(k)}</td><td class='num'>{e(a)}</td><td class='num'>{e(b)}</td>"
                      f"<td class='num'>{e(c)}</td></tr>" for k, a, b, c in _totals(d)) + "</tbody></table>")
    sections = [_section(d, kind, status) for kind in KINDS for status in ("appeared", "vanished", "changed")]
    title = f"pista diff: {d.a.source} vs {d.b.source}"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{_asset('report.css')}{_STYLE}</style></head><body><header class='top'><div class='brand'>pista</div>"
            f"<h1>diff</h1></header><main><section class='card'><p>A: <code>{e(d.a.source)}</code><br>"
            f"B: <code>{e(d.b.source)}</code></p><p class='mode'>Compared {e(d.note)}</p>{head}</section>"
            f"<section id='findings'>{_findings(d)}</section>"
            + "".join(sections) + "</main></body></html>\n")


def _totals(d: Diff) -> list[tuple[str, str, str, str]]:
    """(label, A, B, change) of the totals table."""
    cpu_label, cuda_label = total_labels(d)
    totals = [(cpu_label, format_time(d.a.self_cpu_total_us), format_time(d.b.self_cpu_total_us),
               change(d.a.self_cpu_total_us, d.b.self_cpu_total_us)),
              (cuda_label, format_time(d.a.self_device_total_us), format_time(d.b.self_device_total_us),
               change(d.a.self_device_total_us, d.b.self_device_total_us))]
    totals += [(label, format_time(a), format_time(b), change(a, b)) for label, a, b in outside_rows(d)]
    totals += [("GPU busy", busy(d.a), busy(d.b), ""), ("Steps", str(d.a.steps), str(d.b.steps), "")]
    if d.a.step_avg_us is not None or d.b.step_avg_us is not None:
        totals.append(("Step time (mean)", step_avg(d.a), step_avg(d.b), ""))
    totals.append(("Verdict", d.a.verdict, d.b.verdict, "" if d.a.verdict == d.b.verdict else "changed"))
    return totals


def _section(d: Diff, kind: str, status: str) -> str:
    """The rows of one kind that appeared, vanished or changed ("" for none)."""
    e = html.escape
    rows = d.select(kind, status)
    if not rows:
        return ""
    return (f'<section class="card"><h2>{e(KIND_LABEL[kind])} {e(STATUS_LABEL[status])}: '
            f"{len(rows)}</h2>{_rows(rows, calls_label(d))}</section>")


def _findings(d: Diff) -> str:
    findings = ""
    if d.findings_gained:
        findings += "<h2>Findings gained (in B)</h2>" + _finding_list(d, d.findings_gained, "+")
    if d.findings_lost:
        findings += "<h2>Findings lost (only in A)</h2>" + _finding_list(d, d.findings_lost, "-")
    if d.findings_kept:
        findings += "<p class='hint'>In both: " + html.escape(", ".join(d.findings_kept)) + "</p>"
    return findings


def _finding_list(d: Diff, items: list[dict[str, str]], mark: str) -> str:
    e = html.escape
    return "".join(f'<article class="finding sev-{e(f["severity"])}"><header><span class="sev">{mark} '
                   f'{e(f["severity"])}</span> <code class="rule">{e(f["rule"])}</code><h3>{e(f["title"])}</h3>'
                   f'</header><p class="message">{e(d.short_messages.get(f["rule"], f["message"]))}</p></article>'
                   for f in items)


_STYLE = """
table.diff { table-layout: fixed; } .up { color: #c62828; } .down { color: #2e7d32; }
"""
