"""One process's profiler cycles (pista.cycles) as text (a block per cycle, then what changed from
each cycle to the next) or JSON (`cycles`, one analysis per file in time order, and `changes`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from pista.analysis import Analysis
from pista.cycles import CycleChange, CyclesAnalysis
from pista.i18n import word, words
from pista.i18n._fmt import pct, short_figures, t
from pista.render import layout
from pista.render.controls import TextBuffer, sanitize_json
from pista.render.json import _finite
from pista.render.terminal import SEVERITY_STYLE, VERDICT_STYLE, impact_text, safe_markup

# The longer labels, by key; a language's WORDS (pista.i18n) replaces them.
_HINTS = {
    "cycles hint": ("per cycle: the verdict, the median step, GPU busy, the top fix and the findings (rule, "
                    "severity, share of the step); then what changed from each cycle to the next"),
}


def render_json(result: CyclesAnalysis, row_limit: int = 25) -> str:
    text = json.dumps(_finite(result.to_dict(row_limit)), indent=1, ensure_ascii=False, allow_nan=False)
    return sanitize_json(text) + "\n"


def render_text(result: CyclesAnalysis, color: bool = False, width: int | None = 110, lang: str = "en") -> str:
    """The findings arrive localized (analyze_cycles' lang); `lang` is for the labels around them;
    `width` None: for a pipe (pista.render.layout)."""
    with short_figures():
        return layout.finish(_render_text(result, color, width, lang), width)


def _render_text(result: CyclesAnalysis, color: bool, width: int | None, lang: str) -> str:
    labels = {**_HINTS, **words(lang)}

    def w(key: str) -> str:
        return labels.get(key, key)

    out = TextBuffer()  # rich draws ASCII boxes for an ASCII stdout
    console = layout.console(out, color, width)
    who = _who(result, w("host"))
    layout.header(console, f"pista: {safe_markup(result.source)}",
                  f"{len(result.cycles)} {w('profiler cycles of one process')}{f' ({safe_markup(who)})' if who else ''}, "
                  f"{w('in time order')}\n{w('cycles hint')}", width)
    for notice in result.notices:
        console.print(f"[dim]{w('notice')}: {safe_markup(notice)}[/]")
    for n, cycle in enumerate(result.cycles, start=1):
        _cycle(console, n, Path(cycle.path).name, cycle.analysis, lang)
    if result.changes:
        console.print(f"\n[bold]{w('What changed')}[/]")
        for c in result.changes:
            _change(console, c, lang)
    return out.getvalue()


def _who(result: CyclesAnalysis, host: str) -> str:
    """The process the cycles are of: its host and pid, as far as the trace names them."""
    return ", ".join(part for part in (f"{host} {result.host}" if result.host else "",
                                       f"pid {result.pid}" if result.pid is not None else "") if part)


def _cycle(console: Console, n: int, name: str, a: Analysis, lang: str) -> None:
    def w(key: str) -> str:
        return word(key, lang)

    s = a.summary
    busy = "n/a" if s.gpu_busy_share is None else pct(s.gpu_busy_share)
    steps = f"{s.steps}" + (f" (#{s.step_numbers[0]}-#{s.step_numbers[-1]})" if s.step_numbers else "")
    console.print(f"\n[bold]{w('Cycle')} {n}[/]  [dim]{safe_markup(name)}[/]")
    console.print(f"  [{VERDICT_STYLE.get(s.verdict, 'bold')}]{s.verdict}[/]   {w('median step')} {_ms(s.step_us)}   "
                  f"{w('GPU busy')} {busy}   {w('steps')} {steps}")
    for notice in a.notices:
        console.print(f"  [dim]{w('notice')}: {safe_markup(notice)}[/]")
    top = a.top_fix
    if top is not None:
        console.print(f"  [bold green]{w('Start here')}:[/] {safe_markup(top.fix_here)} [dim]({safe_markup(top.rule)}, "
                      f"{impact_text(top, lang)})[/]")
    if not a.findings:
        console.print(f"  {w('No findings.')}")
        return
    console.print(f"  {w('Findings')}: {', '.join(_finding_per_rule(a, w))}")


def _finding_per_rule(a: Analysis, w: Callable[[str], str]) -> list[str]:
    """One entry per rule: the finding that costs most (findings come sorted by impact), and how many."""
    count = Counter(f.rule for f in a.findings)
    shown: set[str] = set()
    parts = []
    for f in a.findings:
        if f.rule in shown:
            continue
        shown.add(f.rule)
        times = f" x{count[f.rule]}" if count[f.rule] > 1 else ""
        style = SEVERITY_STYLE.get(f.severity.value, "")  # type: ignore[union-attr]
        parts.append(f"{safe_markup(f.rule)}{times} ([{style}]{w(f.severity.value)}[/], "  # type: ignore[union-attr]
                     f"{pct(f.impact.share)})")
    return parts


def _change(console: Console, c: CycleChange, lang: str) -> None:
    def w(key: str) -> str:
        return word(key, lang)

    change = "" if c.step_change is None else f" ({_signed(c.step_change)})"
    verdict = (f"{c.verdict_before} -> {c.verdict_after}" if c.verdict_changed
               else f"{c.verdict_after} ({w('unchanged')})")
    console.print(f"  {w('Cycle')} {c.before + 1} -> {c.after + 1}: {w('median step')} {_ms(c.step_us_before)} -> "
                  f"{_ms(c.step_us_after)}{change}; {w('verdict')} {verdict}")
    lines = _findings_changed(c, w)
    console.print(f"    {'; '.join(lines) if lines else w('same findings')}")


def _signed(share: float) -> str:
    """A share of change with its sign, + included."""
    return f"{'+' if share >= 0 else ''}{pct(share)}"


def _findings_changed(c: CycleChange, w: Callable[[str], str]) -> list[str]:
    """The findings that appeared, vanished or changed severity from one cycle to the next, a line per kind."""
    listed = [(w("appeared"), [f"{r} ({w(s)})" for r, s in c.appeared]),
              (w("vanished"), [f"{r} ({w(s)})" for r, s in c.vanished]),
              (w("severity changed"), [f"{r} ({w(a)} -> {w(b)})" for r, a, b in c.severity_changed])]
    return [f"{label}: {safe_markup(', '.join(items))}" for label, items in listed if items]


def _ms(us: float) -> str:
    return t(us)
