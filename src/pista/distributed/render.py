"""A distributed analysis as text (per-rank table, cross-rank and per-rank findings) or JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.table import Table

from pista.distributed import DistributedAnalysis
from pista.finding import Evidence, Finding
from pista.i18n import lane_label, word
from pista.i18n._fmt import num, pct, short_figures, t
from pista.render import layout
from pista.render.controls import TextBuffer, sanitize_json
from pista.render.terminal import SEVERITY_STYLE, safe_markup

if TYPE_CHECKING:
    from pista.distributed.rank import RankSummary
    from pista.distributed.straggler import RankTiming

# Past this many ranks the text table keeps the ranks that matter: the latest and the slowest.
MAX_RANK_ROWS = 16
MAX_EVIDENCE = 3


def render_json(result: DistributedAnalysis) -> str:
    # C1 and bidi controls as \u escapes, as the single trace's JSON writes them
    return sanitize_json(json.dumps(result.to_dict(), indent=1, ensure_ascii=False)) + "\n"


def render_text(result: DistributedAnalysis, color: bool = False, width: int | None = 110, lang: str = "en") -> str:
    """The findings arrive localized (analyze_ranks' lang); `lang` is for the labels around them;
    `width` None: for a pipe (pista.render.layout)."""
    with short_figures():
        return layout.finish(_render_text(result, color, width, lang), width)


def _render_text(result: DistributedAnalysis, color: bool, width: int | None, lang: str) -> str:
    out = TextBuffer()  # rich draws ASCII boxes for an ASCII stdout
    console = layout.console(out, color, width)
    layout.header(console, f"pista: {safe_markup(result.source)}", _summary(result), width)
    for notice in result.notices:
        console.print(f"[dim]{word('notice', lang)}: {safe_markup(notice)}[/]")
    console.print(_rank_table(result))
    if not result.cross.findings and not any(r.findings for r in result.ranks):
        console.print(word("No findings.", lang))
    for f, ranks, rank in _shown(result):
        _finding(console, f, ranks=ranks, shown=rank, lang=lang)
    return out.getvalue()


def _summary(result: DistributedAnalysis) -> str:
    overlap = result.overlap()
    cross = result.cross
    backends = sorted({r.backend for r in result.ranks if r.backend})
    return (f"{len(result.ranks)} rank(s), backend {', '.join(backends) or 'unknown'}   "
            f"median step {_ms(cross.median_step_ms)}   communication {_ms(overlap['comm_ms'])}, "
            f"exposed {_ms(overlap['exposed_ms'])}, overlapped {_pct(overlap['overlap_share'])} (all ranks)   "
            f"matched collectives {cross.matched_collectives}\n"
            f"per rank: medians per step; late = when it calls its collectives vs the other ranks (+ later)")


def _shown(result: DistributedAnalysis) -> list[tuple[Finding, list[int] | None, int | None]]:
    """(finding, the ranks it fires on, the rank shown), by what fixing them saves, highest first: a rule that
    fires on many ranks is shown once, with the ranks and the evidence of the rank where it costs most."""
    by_rule: dict[str, list[tuple[int, Finding]]] = defaultdict(list)
    for r in result.ranks:
        for f in r.findings:
            by_rule[f.rule].append((int(r.rank), f))  # type: ignore[arg-type]
    shown: list[tuple[Finding, list[int] | None, int | None]] = [(f, None, None) for f in result.cross.findings]
    for hits in by_rule.values():
        worst_rank, worst = max(hits, key=lambda h: _weight(h[1]))
        shown.append((worst, [rank for rank, _ in hits], worst_rank))
    return sorted(shown, key=lambda x: tuple(-v for v in _weight(x[0])))


def _rank_table(result: DistributedAnalysis) -> Table:
    table = _rank_columns()
    timing = {t.rank: t for t in result.cross.timings}
    straggling = {int(f.record.rank) for f in result.cross.findings}
    for r in _rank_rows(result, timing):
        table.add_row(*_rank_cells(r, timing.get(int(r.rank)), straggling))  # type: ignore[arg-type]
    if len(result.ranks) > MAX_RANK_ROWS:
        table.caption = f"{MAX_RANK_ROWS} of {len(result.ranks)} ranks shown: the latest first (--format json has all)"
    return table


def _rank_columns() -> Table:
    """The rank table, its columns and no row yet."""
    table = Table(show_edge=False, pad_edge=False, box=None)
    # per step, medians; "late": when the rank calls its collectives, vs the other ranks (ms, + = later)
    for column in ("rank", "verdict", "steps", "step ms", "comm ms", "exposed ms", "overlap", "late ms",
                   "findings"):
        # the numbers keep their width; a long list of rules wraps inside its own column
        table.add_column(column, justify="left" if column in ("verdict", "findings") else "right",
                         no_wrap=column != "findings", overflow="fold", ratio=1 if column == "findings" else None)
    return table


def _rank_rows(result: DistributedAnalysis, timing: dict[int, RankTiming]) -> list[RankSummary]:
    """The ranks in the table: all of them, or past MAX_RANK_ROWS the latest first, then the slowest step."""
    ranks = result.ranks
    if len(ranks) <= MAX_RANK_ROWS:
        return ranks

    def key(r: RankSummary) -> tuple[float, float]:
        t = timing.get(int(r.rank))  # type: ignore[arg-type]
        return (-(t.late_ms or 0.0), -(t.step_ms or 0.0)) if t else (0.0, 0.0)

    return sorted(ranks, key=key)[:MAX_RANK_ROWS]


def _rank_cells(r: RankSummary, t: RankTiming | None, straggling: set[int]) -> list[str]:
    steps = [s for s in r.steps if s.dur]
    comm = _median_ms([s.comm for s in steps])
    share = r.comm.overlap_share if r.comm else None
    rules = sorted({f.rule for f in r.findings} | ({"straggler"} if r.rank in straggling else set()))
    step_ms, exposed_ms, late_ms = (t.step_ms, t.exposed_ms, t.late_ms) if t else (None, None, None)
    return [str(r.rank), str(r.summary.get("verdict", "")), str(len(steps)), _num(step_ms),
            _num(comm), _num(exposed_ms), _pct(share), _num(late_ms, signed=True), ", ".join(rules)]


def _finding(console: Console, f: Finding, ranks: list[int] | None, shown: int | None = None,
             lang: str = "en") -> None:
    def w(key: str) -> str:
        return word(key, lang)

    assert f.severity is not None  # Finding.__post_init__ sets it
    style = SEVERITY_STYLE.get(f.severity.value, "")
    where = "" if ranks is None else _where(ranks, shown, w)
    console.print(f"\n[{style}]{w(f.severity.value.upper()):8s}[/] [bold]{safe_markup(f.rule)}[/]: {safe_markup(f.title)}{where}")
    console.print(f"  {safe_markup(f.message)}")
    # what fixing it saves, per step and as a share of the step (the severity follows), and how
    console.print(f"  [{style}]{t(f.impact.us)}, {pct(f.impact.share)}[/]: [dim]{safe_markup(f.basis)}[/]")
    for e in f.evidence[:MAX_EVIDENCE]:
        console.print(_evidence_line(e, lang))
    console.print(f"  [green]{w('fix')}:[/] {safe_markup(f.advice)}")


# ranks named in a finding's heading; past it, how many more
MAX_RANKS_NAMED = 12


def _where(ranks: list[int], shown: int | None, w: Callable[[str], str]) -> str:
    """The ranks a finding fires on (the first MAX_RANKS_NAMED of them) and the rank whose evidence is shown."""
    more = len(ranks) - MAX_RANKS_NAMED
    listed = ", ".join(str(r) for r in ranks[:MAX_RANKS_NAMED]) + (f" +{more} {w('more')}" if more > 0 else "")
    return f" [dim]({w('ranks' if len(ranks) > 1 else 'rank')} {listed}; {w('shown:')} {w('rank')} {shown})[/]"


def _evidence_line(e: Evidence, lang: str) -> str:
    step = f"{word('step', lang)} {e.step}" if e.step is not None else word("no step", lang)
    note = f"  ({safe_markup(e.note)})" if e.note else ""
    return (f"  [dim]-[/] {safe_markup(e.name[:70])}  [dim]{safe_markup(lane_label(e.lane, lang))}, {step}, "
            f"{word('dur', lang)} {t(e.dur_us)}[/]{note}")


def _weight(f: Finding) -> tuple[float, float]:
    """What fixing it saves: the order of the findings, and which rank's finding a rule shows."""
    return f.impact.share, f.impact.us


def _median_ms(values: list[int]) -> float | None:
    return float(np.median(values)) / 1e6 if values else None


def _ms(value: float | None) -> str:
    return "-" if value is None else t(value * 1000.0)


def _num(value: float | None, signed: bool = False) -> str:
    return "-" if value is None else (f"+{num(value)}" if signed and value > 0 else num(value))


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{num(100 * share, 1)}%"
