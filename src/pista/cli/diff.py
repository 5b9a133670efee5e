"""Compare two traces (say eager against compiled, or small against large): the totals and the
verdict, the ops and kernels that appeared, vanished or changed, and the findings gained or lost.

When both have ProfilerStep regions but not as many (schedule active=3 against active=5), the
comparison is per step: each side's work inside its steps, divided by its own step count. Otherwise
the whole profiled windows are compared. Every output format says which."""

from __future__ import annotations

import argparse
import gc
import sys

from pista.render.controls import sanitize_line

# `pista diff --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista diff eager.json.gz compiled.json.gz
  pista diff a.json.gz b.json.gz --format html -o diff.html
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", help="the first trace (the baseline)")
    parser.add_argument("b", help="the second trace")
    parser.add_argument("--format", choices=("text", "json", "html"), default="text")
    parser.add_argument("-o", "--output", help="write here instead of stdout (html: required or stdout)")
    parser.add_argument("--lang", default="en", help="language of the findings' titles (en, es)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.analysis import analyze
    from pista.cli.common import open_trace, write_output
    from pista.diff import Digest, diff
    from pista.i18n import check_lang, localize

    lang = check_lang(args.lang)
    # A's digest, not its trace, is kept while B is read: the peak is one trace's, not two
    a = Digest.of(localize(analyze(open_trace(args.a)), lang))
    gc.collect()
    d = diff(a, localize(analyze(open_trace(args.b)), lang))
    if args.format == "html":
        # start-up: only when the verb runs, not for its parser (pista.cli)
        from pista.render import diff_html

        out = diff_html.render(d)
    else:
        # start-up: only when the verb runs, not for its parser (pista.cli)
        from pista.render import diff_text

        out = diff_text.render_json(d) if args.format == "json" else diff_text.render_text(d)
    if args.output:
        write_output(args.output, out, inputs=(args.a, args.b))
        print(f"pista: wrote {sanitize_line(args.output)}", file=sys.stderr)  # as given: may hold controls
    else:
        sys.stdout.write(out)
    return 0
