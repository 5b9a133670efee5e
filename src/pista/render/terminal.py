"""The analysis for a terminal: verdict, findings with their evidence, then the rebuilt table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel

from pista.findings import Analysis, Finding
from pista.render.controls import TextBuffer, sanitize, sanitize_line
from pista.rules._common import fmt_ns
from pista.table import format_time, render_text


def safe_markup(text: object) -> str:
    """One field of trace text for rich markup: sanitized for one line (and cut if very long) first,
    then escaped, so pista's own styles around it still colour and nothing in it does."""
    return escape(sanitize_line(text))


SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
VERDICT_STYLE = {"overhead-bound": "bold red", "compute-bound": "bold green", "balanced": "bold yellow",
                 "cpu-only": "bold blue"}
MAX_EVIDENCE = 5


def render(analysis: Analysis, color: bool = False, width: int = 110, show_table: bool = True,
           row_limit: int = 15, lang: str = "en") -> str:
    from pista.i18n import lane_label, localize, word

    analysis = localize(analysis, lang)

    def w(key: str) -> str:
        return word(key, lang)

    out = TextBuffer()  # rich draws ASCII boxes for an ASCII stdout
    console = Console(file=out, force_terminal=color, no_color=not color, width=width, highlight=False)
    s = analysis.summary
    busy = "n/a" if s.gpu_busy_share is None else f"{100 * s.gpu_busy_share:.1f}%"
    console.print(Panel(
        f"[{VERDICT_STYLE.get(s.verdict, 'bold')}]{s.verdict}[/]\n"
        f"Self CPU total {format_time(s.self_cpu_total_us)}   Self CUDA total {format_time(s.self_device_total_us)}   "
        f"{w('GPU busy')} {busy} {w('of')} {format_time(s.window_us)}   {w('steps')} {s.steps}",
        title=f"pista: {safe_markup(analysis.source)}", expand=True))
    # what changes how to read all the rest (a contended CPU, a window of one-time costs), then the first
    # thing to fix (REVIEW.md), then where the time goes
    for notice in analysis.notices:
        console.print(f"[dim]{w('notice')}: {safe_markup(notice)}[/]")
    if analysis.notices:
        console.print()
    top = analysis.top_fix
    if top is not None:
        console.print(f"[bold green]{w('Start here')}:[/] {safe_markup(top.fix_here)} [dim]({safe_markup(top.rule)}, "
                      f"{impact_text(top, lang)})[/]\n")
    purposes = purpose_line(s.gpu_time_by_purpose, lang)
    if purposes:
        console.print(f"{w('GPU time per step')}: {safe_markup(purposes)}")
    kernels = kernel_line(analysis, lang)
    if kernels:
        console.print(f"{w('Top kernels')}: {safe_markup(kernels)}")
    for lane, regions in list(s.host_time_by_region.items())[:MAX_THREADS]:
        console.print(f"{w('Host time per step')}, {safe_markup(lane_label(lane, lang))}: "
                      f"{safe_markup(purpose_line(regions, lang))}")
    if not analysis.findings:
        console.print(word("No findings.", lang))
    origin_us = analysis.facts.trace.start_ns / 1000.0
    for finding in analysis.findings:
        _finding(console, finding, origin_us, lang)
    if show_table:
        console.print()
        sort_by = "cuda_time_total" if analysis.facts.has_gpu else "cpu_time_total"
        # the table's own lines (each name in it already sanitized for one line, and cut)
        console.print(escape(sanitize(render_text(analysis.table, sort_by, row_limit,
                                                  has_device=analysis.facts.has_gpu))), soft_wrap=True, end="")
    return out.getvalue()


MAX_THREADS = 2  # host threads shown in the terminal (the HTML page shows every one)
# Purposes under this share of the GPU time are left out of the one-line summary.
PURPOSE_LINE_MIN_SHARE = 0.01


def purpose_line(by_purpose: dict[str, float], lang: str = "en") -> str:
    """'gemm 171.2 µs (80%), elementwise 41.3 µs (19%)': the purposes worth naming, largest first."""
    from pista.i18n import word

    total = sum(by_purpose.values())
    if total <= 0:
        return ""
    parts = [(p, v) for p, v in sorted(by_purpose.items(), key=lambda kv: -kv[1]) if v >= PURPOSE_LINE_MIN_SHARE * total]
    return ", ".join(f"{word(p, lang)} {fmt_ns(v * 1000)} ({100 * v / total:.0f}%)" for p, v in parts)


TOP_KERNELS = 3  # kernels named in the terminal's efficiency line


# Kernels shorter than this on average are launch-sized: their rate says nothing about the card.
RATE_MIN_MEAN_US = 10.0


def kernel_line(analysis: Analysis, lang: str = "en") -> str:
    """The biggest kernels and how they run against the card: '<name> gemm 171 µs (803 TFLOP/s, 81% of peak)'."""
    from pista.efficiency import kernel_rows
    from pista.i18n import word

    parts = []
    rows = kernel_rows(analysis.facts, TOP_KERNELS)
    total = sum(k.total_us for k in rows) or 1.0
    steps = max(1, len(analysis.facts.steps))
    rows = [k for k in rows if k.total_us >= PURPOSE_LINE_MIN_SHARE * total and k.purpose != "memset"]
    # kernels whose short names collide (template instances of multi_tensor_apply_kernel) say their op
    short = Counter(kernel_short_name(k.name) for k in rows)
    for k in rows:
        name = kernel_short_name(k.name)
        if short[name] > 1 and k.op:
            name += f" ({word('from', lang)} {k.op})"
        rate = ""
        if k.mean_us >= RATE_MIN_MEAN_US:
            if k.bound == "compute" and k.tflops:
                rate = f"{k.tflops:.0f} TFLOP/s" if k.tflops >= 10 else f"{k.tflops:.2f} TFLOP/s"
            elif k.tbps:
                rate = f"{k.tbps:.2f} TB/s" if k.tbps >= 0.1 else f"{k.tbps * 1000:.1f} GB/s"
            if rate and k.peak_share:
                rate += f", {100 * k.peak_share:.0f}% {word('of peak', lang)}"
        parts.append(f"{name} {word(k.purpose, lang)} {fmt_ns(k.total_us * 1000 / steps)}"
                     + (f" ({rate})" if rate else ""))
    return "; ".join(parts)


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
    from pista.i18n import word

    return impact_words(f, lambda key: word(key, lang))


def impact_words(f: Finding, label: Callable[[str], str]) -> str:
    """The impact line's words, the labels in the caller's language: the prediction without the profiler
    first where the engine replayed one (it ranks the findings), the profiled figure beside it."""
    unit, of = ("once", "of the window") if f.impact.once else ("per step", "of the step")
    if f.impact.unprofiled_us is not None and f.impact.unprofiled_share is not None:
        return (f"{fmt_ns(f.impact.unprofiled_us * 1000)} {label(unit)} {label('without the profiler')}, "
                f"{100 * f.impact.unprofiled_share:.1f}% {label(of)} ({label('as profiled')}: "
                f"{fmt_ns(f.impact.us * 1000)}, {100 * f.impact.share:.1f}%)")
    return f"{fmt_ns(f.impact.us * 1000)} {label(unit)}, {100 * f.impact.share:.1f}% {label(of)}"


def _finding(console: Console, f: Finding, origin_us: float, lang: str = "en") -> None:
    from pista.i18n import lane_label, word

    def w(key: str) -> str:
        return word(key, lang)

    style = SEVERITY_STYLE.get(f.severity.value, "")
    console.print(f"\n[{style}]{w(f.severity.value.upper()):8s}[/] [bold]{safe_markup(f.rule)}[/]: "
                  f"{safe_markup(f.title)}")
    console.print(f"  {safe_markup(f.message)}")
    console.print(f"  [dim]{w('impact')}: {impact_text(f, lang)}: {safe_markup(f.basis)}[/]")
    for e in f.evidence[:MAX_EVIDENCE]:
        step = f"{w('step')} {e.step}" if e.step is not None else w("no step")
        note = f"  ({safe_markup(e.note)})" if e.note else ""
        if e.stack:
            note += f" [dim]{w('in')} {safe_markup(e.stack[0])}[/]"
        console.print(f"  [dim]-[/] {safe_markup(w(e.name)[:70])}  "
                      f"[dim]{safe_markup(lane_label(e.lane, lang))}, {step}, "
                      f"{w('at')} +{(e.ts_us - origin_us) / 1000:.3f} ms, {w('dur')} {fmt_ns(e.dur_us * 1000)}[/]{note}")
    if len(f.evidence) > MAX_EVIDENCE:
        console.print(f"  [dim]... {len(f.evidence) - MAX_EVIDENCE} {w('more')}[/]")
    console.print(f"  [green]{w('fix')}:[/] {safe_markup(f.advice)}")
