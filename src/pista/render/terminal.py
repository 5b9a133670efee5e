"""The analysis for a terminal: verdict, findings with their evidence, then the rebuilt table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from pista.efficiency import kernel_rows
from pista.finding import Evidence, Finding
from pista.i18n import lane_label, localize, word
from pista.i18n._fmt import pct, short_figures, t
from pista.render import layout
from pista.render.controls import TextBuffer, sanitize, sanitize_line
from pista.table import render_text

if TYPE_CHECKING:  # an Analysis is read, never built, here (pista.analysis is above the renderers)
    from pista.analysis import Analysis
    from pista.efficiency import KernelRow


def safe_markup(text: object) -> str:
    """One field of trace text for rich markup: sanitized for one line (and cut if very long) first,
    then escaped, so pista's own styles around it still colour and nothing in it does."""
    return escape(sanitize_line(text))


SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"overhead-bound": "bold red", "compute-bound": "bold green", "balanced": "bold yellow",
                 "input-bound": "bold magenta", "start-up": "bold cyan", "cpu-only": "bold blue"}
MAX_EVIDENCE = 5


def render(analysis: Analysis, color: bool = False, width: int | None = 110, show_table: bool = False,
           row_limit: int = 15, lang: str = "en", verbose: bool = False) -> str:
    """The report for people: figures with three significant digits; `width` None lays it out for a
    pipe (pista.render.layout); brief findings unless `verbose` (BRIEF_* below)."""
    with short_figures():
        return layout.finish(_render(analysis, color, width, show_table, row_limit, lang, verbose), width)


def _render(analysis: Analysis, color: bool, width: int | None, show_table: bool, row_limit: int, lang: str,
            verbose: bool) -> str:
    analysis = localize(analysis, lang)

    def w(key: str) -> str:
        return word(key, lang)

    out = TextBuffer()  # rich draws ASCII boxes for an ASCII stdout
    console = layout.console(out, color, width)
    _summary_box(console, analysis, w, width)
    # what changes how to read all the rest (a contended CPU, a window of one-time costs), then the first
    # thing to fix (REVIEW.md), then where the time goes
    _notices(console, analysis.notices, w)
    _start_here(console, analysis, lang, verbose)
    _where_time_goes(console, analysis, lang)
    cut = _findings(console, analysis, lang, verbose)
    if show_table:
        _table(console, analysis, row_limit)
    elif cut or analysis.findings:
        console.print(f"\n[dim]{safe_markup(_more_hint(analysis.source, cut, lang))}[/]")
    return out.getvalue()


def _notices(console: Console, notices: list[str], w: Callable[[str], str]) -> None:
    """The notices, a blank line after them."""
    for notice in notices:
        console.print(f"[dim]{w('notice')}: {safe_markup(notice)}[/]")
    if notices:
        console.print()


def _findings(console: Console, analysis: Analysis, lang: str, verbose: bool) -> bool:
    """Each finding, brief unless `verbose`; whether any brief one left something out."""
    if not analysis.findings:
        console.print(word("No findings.", lang))
    origin_us = analysis.facts.trace.start_ns / 1000.0
    cut = False
    for finding in analysis.findings:
        cut = (_finding if verbose else _brief_finding)(console, finding, origin_us, lang) or cut
    return cut


def _summary_box(console: Console, analysis: Analysis, w: Callable[[str], str], width: int | None) -> None:
    s = analysis.summary
    busy = "n/a" if s.gpu_busy_share is None else pct(s.gpu_busy_share)
    layout.header(console, f"pista: {safe_markup(analysis.source)}",
                  f"[{VERDICT_STYLE.get(s.verdict, 'bold')}]{s.verdict}[/]\n"
                  f"Self CPU total {t(s.self_cpu_total_us)}   Self CUDA total {t(s.self_device_total_us)}   "
                  f"{w('GPU busy')} {busy} {w('of')} {t(s.window_us)}   {w('steps')} {s.steps}", width)


def _start_here(console: Console, analysis: Analysis, lang: str, verbose: bool) -> None:
    """The top fix's line, where there is one."""
    top = analysis.top_fix
    if top is not None:
        impact = impact_text(top, lang) if verbose else brief_impact(top, lang)
        console.print(f"[bold green]{word('Start here', lang)}:[/] {safe_markup(top.fix_here)} "
                      f"[dim]({safe_markup(top.rule)}, {impact})[/]\n")


def _table(console: Console, analysis: Analysis, row_limit: int) -> None:
    console.print()
    sort_by = "cuda_time_total" if analysis.facts.has_gpu else "cpu_time_total"
    # the table's own lines (each name in it already sanitized for one line, and cut), as torch prints it
    console.print(escape(sanitize(render_text(analysis.table, sort_by, row_limit,
                                              has_device=analysis.facts.has_gpu))), soft_wrap=True, end="")


def _where_time_goes(console: Console, analysis: Analysis, lang: str) -> None:
    s = analysis.summary
    purposes = purpose_line(s.gpu_time_by_purpose, lang)
    if purposes:
        console.print(f"{word('GPU time per step', lang)}: {safe_markup(purposes)}")
    kernels = kernel_line(analysis, lang)
    if kernels:
        console.print(f"{word('Top kernels', lang)}: {safe_markup(kernels)}")
    for lane, regions in list(s.host_time_by_region.items())[:MAX_THREADS]:
        console.print(f"{word('Host time per step', lang)}, {safe_markup(lane_label(lane, lang))}: "
                      f"{safe_markup(purpose_line(regions, lang))}")


def _more_hint(source: str, cut: bool, lang: str) -> str:
    """Where the rest is: -v for the findings in full, the HTML page, and the op table."""
    trace = shlex_quote(source)
    parts = [word("more hint -v", lang)] if cut else []
    parts.append(f"pista report {trace}: {word('more hint report', lang)}")
    parts.append(f"pista table {trace}: {word('more hint table', lang)}")
    return "; ".join(parts)


def shlex_quote(path: str) -> str:
    # start-up: only for the hint line; `pista report` loads terminal without it
    import shlex

    return "-" if path == "<stdin>" else shlex.quote(path)


MAX_THREADS = 2  # host threads shown in the terminal (the HTML page shows every one)
# Purposes under this share of the GPU time are left out of the one-line summary.
PURPOSE_LINE_MIN_SHARE = 0.01


def purpose_line(by_purpose: dict[str, float], lang: str = "en") -> str:
    """'gemm 171.2 µs (80%), elementwise 41.3 µs (19%)': the purposes worth naming, largest first."""
    total = sum(by_purpose.values())
    if total <= 0:
        return ""
    parts = [(p, v) for p, v in sorted(by_purpose.items(), key=lambda kv: -kv[1]) if v >= PURPOSE_LINE_MIN_SHARE * total]
    return ", ".join(f"{word(p, lang)} {t(v)} ({100 * v / total:.0f}%)" for p, v in parts)


TOP_KERNELS = 3  # kernels named in the terminal's efficiency line


# Kernels shorter than this on average are launch-sized: their rate says nothing about the card.
RATE_MIN_MEAN_US = 10.0


def kernel_line(analysis: Analysis, lang: str = "en") -> str:
    """The biggest kernels and how they run against the card: '<name> gemm 171 µs (803 TFLOP/s, 81% of peak)'."""
    rows = kernel_rows(analysis.facts, TOP_KERNELS)
    total = sum(k.total_us for k in rows) or 1.0
    steps = max(1, len(analysis.facts.steps))
    rows = [k for k in rows if k.total_us >= PURPOSE_LINE_MIN_SHARE * total and k.purpose != "memset"]
    return "; ".join(f"{name} {word(k.purpose, lang)} {t(k.total_us / steps)}{_rate(k, lang)}"
                     for name, k in zip(_kernel_names(rows, lang), rows, strict=True))


def _kernel_names(rows: list[KernelRow], lang: str) -> list[str]:
    """The kernels' short names; those that collide (template instances of multi_tensor_apply_kernel) say their op."""
    names = [kernel_short_name(k.name) for k in rows]
    short = Counter(names)
    return [f"{name} ({word('from', lang)} {k.op})" if short[name] > 1 and k.op else name
            for name, k in zip(names, rows, strict=True)]


def _rate(k: KernelRow, lang: str) -> str:
    """How a kernel runs against the card (' (803 TFLOP/s, 81% of peak)'); "" for a launch-sized one or no rate."""
    if k.mean_us < RATE_MIN_MEAN_US:
        return ""
    rate = _throughput(k)
    if rate and k.peak_share:
        rate += f", {100 * k.peak_share:.0f}% {word('of peak', lang)}"
    return f" ({rate})" if rate else ""


def _throughput(k: KernelRow) -> str:
    """A kernel's FLOP rate where it is compute-bound and has one, else its memory rate ("" for neither)."""
    if k.bound == "compute" and k.tflops:
        return f"{k.tflops:.0f} TFLOP/s" if k.tflops >= 10 else f"{k.tflops:.2f} TFLOP/s"
    if k.tbps:
        return f"{k.tbps:.2f} TB/s" if k.tbps >= 0.1 else f"{k.tbps * 1000:.1f} GB/s"
    return ""


def kernel_short_name(name: str, limit: int = 48) -> str:
    """A kernel's own name: no 'void', namespaces or template arguments
    ('void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>' -> 'multi_tensor_apply_kernel')."""
    if name.startswith(("Memcpy", "Memset")):
        return name  # 'Memcpy DtoH (Device -> Pageable)': the direction and memory kinds are the point
    text = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    cut = min([i for i in (text.find("<"), text.find("(")) if i > 0] or [len(text)])
    text = text[:cut].rsplit("::", 1)[-1].strip() or name
    return text if len(text) <= limit else text[: limit - 3] + "..."


def impact_text(f: Finding, lang: str = "en") -> str:
    """'355.427 µs per step, 38.9% of the step' (a one-time cost: '2.600 ms once, 17.8% of the
    window') in `lang`."""
    return impact_words(f, lambda key: word(key, lang))


def impact_words(f: Finding, label: Callable[[str], str]) -> str:
    """The impact line's words, the labels in the caller's language: the prediction without the profiler
    first where the engine replayed one (it ranks the findings), the profiled figure beside it."""
    unit, of = _unit(f)
    predicted = _unprofiled(f)
    if predicted is not None:
        return (f"{t(predicted[0])} {label(unit)} {label('without the profiler')}, "
                f"{pct(predicted[1])} {label(of)} ({label('as profiled')}: "
                f"{t(f.impact.us)}, {pct(f.impact.share)})")
    return f"{t(f.impact.us)} {label(unit)}, {pct(f.impact.share)} {label(of)}"


def _unit(f: Finding) -> tuple[str, str]:
    """The labels of the impact's unit and whole: per step of the step, or once of the window."""
    return ("once", "of the window") if f.impact.once else ("per step", "of the step")


def _unprofiled(f: Finding) -> tuple[float, float] | None:
    """The impact the engine predicts without the profiler, µs and share (it then ranks the findings); None
    where it made no prediction."""
    i = f.impact
    return None if i.unprofiled_us is None or i.unprofiled_share is None else (i.unprofiled_us, i.unprofiled_share)


def brief_impact(f: Finding, lang: str = "en") -> str:
    """The impact in one figure: the prediction without the profiler where the engine made one (it
    ranks the findings), else the profiled one ('42.1 µs per step, 19.6% of the step')."""
    unit, of = _unit(f)
    us, share = _unprofiled(f) or (f.impact.us, f.impact.share)
    return f"{t(us)} {word(unit, lang)}, {pct(share)} {word(of, lang)}"


# The brief finding a terminal shows by default (-v: all of it): the message in lines of this many
# columns, at most so many of them, so many evidence rows, the fix in so many lines.
BRIEF_WIDTH = 100
BRIEF_MESSAGE_LINES = 3
BRIEF_EVIDENCE = 3
BRIEF_FIX_LINES = 2


def _brief_finding(console: Console, f: Finding, origin_us: float, lang: str = "en") -> bool:
    """The title with the impact, the message and the fix clipped, the first evidence rows; whether
    anything was left out (then the report's last line points at -v)."""
    assert f.severity is not None  # Finding.__post_init__ sets it
    style = SEVERITY_STYLE.get(f.severity.value, "")
    console.print(f"\n[{style}]{word(f.severity.value.upper(), lang):8s}[/] [bold]{safe_markup(f.rule)}[/]: "
                  f"{safe_markup(f.title)} [dim]({brief_impact(f, lang)})[/]")
    message, cut = layout.clip(sanitize_line(f.message), BRIEF_MESSAGE_LINES, BRIEF_WIDTH)
    console.print(f"  {escape(message)}")
    _evidence_rows(console, f.evidence, BRIEF_EVIDENCE, origin_us, lang)
    fix, fix_cut = layout.clip(sanitize_line(f.fix), BRIEF_FIX_LINES, BRIEF_WIDTH, indent=2 + len(word("fix", lang)) + 2)
    console.print(f"  [green]{word('fix', lang)}:[/] {escape(fix)}")
    return cut or fix_cut or len(f.evidence) > BRIEF_EVIDENCE or f.advice != f.fix


def _evidence_rows(console: Console, evidence: list[Evidence], limit: int, origin_us: float, lang: str) -> None:
    """The first `limit` evidence rows, then how many more there are."""
    for e in evidence[:limit]:
        _evidence_row(console, e, origin_us, lang)
    if len(evidence) > limit:
        console.print(f"  [dim]... {len(evidence) - limit} {word('more', lang)}[/]")


def _evidence_row(console: Console, e: Evidence, origin_us: float, lang: str) -> None:
    step = f"{word('step', lang)} {e.step}" if e.step is not None else word("no step", lang)
    note = f"  ({safe_markup(e.note)})" if e.note else ""
    if e.stack:
        note += f" [dim]{word('in', lang)} {safe_markup(e.stack[0])}[/]"
    console.print(f"  [dim]-[/] {safe_markup(word(e.name, lang)[:70])}  "
                  f"[dim]{safe_markup(lane_label(e.lane, lang))}, {step}, "
                  f"{word('at', lang)} +{t(e.ts_us - origin_us)}, {word('dur', lang)} {t(e.dur_us)}[/]{note}")


def _finding(console: Console, f: Finding, origin_us: float, lang: str = "en") -> bool:
    """A finding in full (-v): the message, the impact and how it was estimated, the evidence, the advice."""
    def w(key: str) -> str:
        return word(key, lang)

    assert f.severity is not None  # Finding.__post_init__ sets it
    style = SEVERITY_STYLE.get(f.severity.value, "")
    console.print(f"\n[{style}]{w(f.severity.value.upper()):8s}[/] [bold]{safe_markup(f.rule)}[/]: "
                  f"{safe_markup(f.title)}")
    console.print(f"  {safe_markup(f.message)}")
    console.print(f"  [dim]{w('impact')}: {impact_text(f, lang)}: {safe_markup(f.basis)}[/]")
    _evidence_rows(console, f.evidence, MAX_EVIDENCE, origin_us, lang)
    console.print(f"  [green]{w('fix')}:[/] {safe_markup(f.advice)}")
    return False
