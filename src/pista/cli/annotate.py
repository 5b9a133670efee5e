"""Write a copy of the trace with pista's findings added as markers (a "pista findings" track with a
span per piece of evidence), to open in Perfetto (ui.perfetto.dev) or chrome://tracing. The input is
never modified; the output is gzipped when its name ends in .gz."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("-o", "--output", help="where to write (default: ./NAME.pista.json.gz; - for standard "
                                               "output, plain JSON)")
    parser.add_argument("--lang", default="en", help="language of the markers' text (en, es)")


def run(args: argparse.Namespace) -> int:
    from pista.cli.common import STDIN, default_output, print_notices, read_stdin, write_output
    from pista.findings import analyze
    from pista.i18n import check_lang, localize
    from pista.render import annotated
    from pista.render.controls import sanitize
    from pista.trace.facts import derive
    from pista.trace.load import decode_trace, read_bytes

    lang = check_lang(args.lang)
    data, notices = read_stdin() if args.trace == STDIN else read_bytes(args.trace)
    trace = decode_trace(data, args.trace, notices)  # as `pista analyze` reads it, with its notices
    print_notices(args.trace, trace.notices)
    analysis = localize(analyze(derive(trace)), lang)
    out = Path(args.output) if args.output else default_output(args.trace, ".pista.json.gz")
    copy_notices: list[str] = []
    payload = annotated.render(data, analysis, gz=out.name.endswith(".gz"), source=args.trace,
                               notices=copy_notices)
    print_notices(args.trace, copy_notices)
    write_output(out, payload, inputs=(args.trace,))
    where = "standard output" if args.output == STDIN else out
    print(sanitize(f"pista: wrote {where}: {len(analysis.findings)} findings as markers"), file=sys.stderr)
    return 0
