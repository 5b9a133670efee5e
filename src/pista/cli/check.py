"""A CI gate: exit 1 when a finding at or above --fail-on is present, or when the median step time
regressed by more than --max-regression percent against --baseline; else 3 when a rule failed on the trace
(pista.isolation: what it would have found is unknown, so the check does not pass); 0 otherwise; 2 for bad
input.
The markdown output fits a GitHub job summary (`>> $GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from pista.errors import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, UsageError
from pista.render.controls import sanitize_line

# `pista check --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista check trace.json.gz --fail-on warning             # exit 1 on a warning or worse
  pista check new.json.gz --baseline old.json.gz --max-regression 5
  pista check trace.json.gz --format markdown >> "$GITHUB_STEP_SUMMARY"
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("--fail-on", choices=("info", "warning", "critical"), default=None,
                        help="the lowest severity that fails the check (default: warning, or [tool.pista] fail-on)")
    parser.add_argument("--baseline", metavar="OLD", help="a trace of the same workload to compare step times with")
    parser.add_argument("--max-regression", type=float, metavar="PCT", default=None,
                        help="fail when the median step is more than PCT%% slower than the baseline's")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--select", metavar="IDS", help="only these rules (comma-separated ids)")
    parser.add_argument("--ignore", metavar="IDS", help="leave these rules out (comma-separated ids)")
    parser.add_argument("--peaks", metavar="FILE", help="the card's peak TFLOP/s and TB/s as JSON (pista.efficiency."
                                                        "load_peaks), over the built-in table")
    parser.add_argument("--lang", default="en", help="language of findings (en, es)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista import config
    from pista._version import __version__
    from pista.analysis import analyze
    from pista.cli.common import apply_peaks, open_trace
    from pista.i18n import check_lang, localize
    from pista.policy import SEVERITY_ORDER
    from pista.schema import JSON_SCHEMA_VERSION

    lang = check_lang(args.lang)
    _check_regression_args(args)
    apply_peaks(args.peaks)
    settings = config.load(args.select, args.ignore, args.fail_on)
    config.apply_thresholds(settings)
    analysis = localize(analyze(open_trace(args.trace), rules=settings.rules()), lang)
    gate = SEVERITY_ORDER.index(settings.fail_on)
    failing = [f for f in analysis.findings if f.severity is not None and SEVERITY_ORDER.index(f.severity.value) >= gate]
    regression = _regression(args, analysis.summary.step_us)
    failed = bool(failing) or bool(regression and regression["failed"])
    # a rule that raised (pista.isolation) may have hidden a finding that fails the gate: the check does not pass
    rules_failed = [{"rule": r.rule, "stage": r.stage, "error": r.error} for r in analysis.failures]
    result = {
        "schema_version": JSON_SCHEMA_VERSION, "pista_version": __version__, "trace": args.trace,
        "passed": not failed and not rules_failed, "fail_on": settings.fail_on, "step_us": analysis.summary.step_us,
        "failing": [_brief(f) for f in failing], "findings": [_brief(f) for f in analysis.findings],
        "regression": regression, "rules_failed": rules_failed,
    }
    out = {"json": _json, "markdown": _markdown, "text": _text}[args.format](result)
    sys.stdout.write(out)
    return exit_code(failed, bool(rules_failed))


def exit_code(failed: bool, rules_failed: bool) -> int:
    """1 when a finding or the regression fails the gate; else 3 (pista's bug) when a rule failed on the trace,
    since what it would have found is unknown; else 0."""
    if failed:
        return EXIT_FINDINGS
    return EXIT_INTERNAL if rules_failed else EXIT_OK


def _check_regression_args(args: argparse.Namespace) -> None:
    if args.max_regression is not None and args.baseline is None:
        raise UsageError("--max-regression needs --baseline OLD")
    if args.max_regression is not None and not 0 <= args.max_regression < math.inf:  # nan fails it too
        # a nan limit let every regression pass the gate (no comparison with nan is true)
        raise UsageError(f"--max-regression {args.max_regression:g}: give a percentage of 0 or more")


def _regression(args: argparse.Namespace, after: float) -> dict[str, Any] | None:
    """The median step against the baseline's (None without --baseline)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.analysis import analyze
    from pista.cli.common import open_trace

    if args.baseline is None:
        return None
    before = analyze(open_trace(args.baseline), rules=[]).summary.step_us
    change = 100.0 * (after - before) / before if before > 0 else 0.0
    limit = args.max_regression
    return {"baseline": args.baseline, "baseline_step_us": before, "step_us": after,
            "change_percent": change, "max_regression_percent": limit,
            "failed": limit is not None and change > limit}


def _brief(f: Any) -> dict[str, Any]:
    return {"rule": f.rule, "severity": f.severity.value, "title": f.title, "impact_us": f.impact.us,
            "impact_share": f.impact.share, "impact_once": f.impact.once, "fix": f.fix_here}


def _json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, allow_nan=False) + "\n"


def _verdict_line(result: dict[str, Any], quote: Callable[[object], str]) -> str:
    """pista's own words and numbers; the exception's text of a rule that failed, which may hold the trace's,
    through `quote` (the format's escape)."""
    parts = [f"{len(result['failing'])} finding(s) at or above {result['fail_on']}"]
    parts += [f"rule {r['rule']} failed on this trace ({quote(r['error'])}), so the check cannot pass"
              for r in result["rules_failed"]]
    if result["regression"] is not None:
        parts.append(_regression_part(result["regression"]))
    return ("FAILED: " if not result["passed"] else "passed: ") + "; ".join(parts)


def _regression_part(reg: dict[str, Any]) -> str:
    """The median step against the baseline's, with its change and the limit if one is set."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import num, t

    change = reg["change_percent"]
    return (f"median step {t(reg['step_us'])} vs {t(reg['baseline_step_us'])} in the baseline "
            f"({'+' if change >= 0 else ''}{num(change, 1)}%"
            + (f", limit +{reg['max_regression_percent']:g}%)" if reg["max_regression_percent"] is not None
               else ")"))


def _text(result: dict[str, Any]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import short_figures

    with short_figures():
        return _text_lines(result)


def _text_lines(result: dict[str, Any]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import pct, t

    lines = [f"pista check {sanitize_line(result['trace'])}: {_verdict_line(result, sanitize_line)}"]
    for f in result["findings"]:
        mark = "x" if f in result["failing"] else "-"
        lines.append(f"  {mark} {f['severity']:8s} {f['rule']}: {sanitize_line(f['title'])} "
                     f"({t(f['impact_us'])}{' once' if f['impact_once'] else '/step'}, "
                     f"{pct(f['impact_share'])}{' of the window' if f['impact_once'] else ''})")
    return "\n".join(lines) + "\n"


# ASCII punctuation: CommonMark shows any of it as itself behind a backslash. Escaped, a trace's text
# makes no link, image, HTML tag, emphasis or table cell in a job summary; and with ':', '.' and
# '@' escaped, no GFM autolink (http://..., www...., a@b.c) either.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: object) -> str:
    """Trace text as Markdown that shows as the text: sanitized on one line, punctuation escaped."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", sanitize_line(text))


def markdown_code(text: object) -> str:
    """Trace text as a Markdown code span (nothing in one is a link or markup): fenced with more
    backticks than any run inside, padded where it starts or ends with one."""
    text = sanitize_line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _markdown(result: dict[str, Any]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import short_figures

    with short_figures():
        return _markdown_lines(result)


def _markdown_lines(result: dict[str, Any]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import num, pct

    cell = markdown_text
    icon = "✅" if result["passed"] else "❌"
    lines = [f"### {icon} pista check: {markdown_code(result['trace'])}", "", _verdict_line(result, markdown_code), ""]
    if result["findings"]:
        lines += ["| | severity | rule | what | µs per step (once: in all) | share of the step (once: of the window) | fix |",
                  "|---|---|---|---|---:|---:|---|"]
        for f in result["findings"]:
            mark = "❌" if f in result["failing"] else ""
            lines.append(f"| {mark} | {f['severity']} | `{f['rule']}` | {cell(f['title'])} | {num(f['impact_us'], 1)}{' once' if f['impact_once'] else ''} | "
                         f"{pct(f['impact_share'])} | {cell(f['fix'])} |")
    return "\n".join(lines) + "\n"
