"""Write a self-contained HTML report of a trace: the verdict, the findings with their evidence, a
timeline of the CPU and GPU lanes with the findings pinned, kernel-duration distributions, step
widths and the rebuilt table. One file, no network needed to open it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pista.render.controls import sanitize_line

# `pista report --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista report runs/bert/trace.json.gz                  # ./bert.report.html
  pista report trace.json.gz -o report.html --lang es
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("-o", "--output", help="the HTML file to write (default: ./NAME.report.html, NAME the "
                                               "trace's, or its folder's for a trace.json.gz; a file that was there "
                                               "is replaced, and the line that says where it wrote says so)")
    parser.add_argument("--peaks", metavar="FILE", help="the card's peak TFLOP/s and TB/s as JSON (pista.efficiency."
                                                        "load_peaks), over the built-in table")
    parser.add_argument("--lang", default="en", help="language of the findings (en, es)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.analysis import analyze
    from pista.cli.common import (
        apply_peaks,
        default_output,
        open_trace,
        refuse_input,
        replaced_note,
        write_output,
    )
    from pista.i18n import check_lang
    from pista.render import html

    lang = check_lang(args.lang)
    out = Path(args.output) if args.output else default_output(args.trace, ".report.html")
    refuse_input(out, args.peaks, "peaks file")  # (the trace is checked where the page is written)
    apply_peaks(args.peaks)
    analysis = analyze(open_trace(args.trace))
    page = html.render(analysis, lang=lang)
    replaced = replaced_note(out)
    write_output(out, page, inputs=(args.trace,))
    # the name as given may hold control characters or a newline: written out, like every notice
    print(f"pista: wrote {sanitize_line(out)} ({len(page.encode(errors='surrogatepass')) / 1e6:.2f} MB){replaced}",
          file=sys.stderr)
    return 0
