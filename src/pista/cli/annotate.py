"""Write a copy of the trace with pista's findings added as markers (a "pista findings" track with a
span per piece of evidence), to open in Perfetto (ui.perfetto.dev) or chrome://tracing. The input is
never modified; the output is gzipped when its name ends in .gz."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pista.errors import BadTrace
from pista.render.controls import sanitize_line

if TYPE_CHECKING:
    from pista.analysis import Analysis
    from pista.trace.model import Trace



# `pista annotate --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista annotate runs/bert/trace.json.gz                # ./bert.pista.json.gz, for ui.perfetto.dev
  pista annotate trace.json.gz -o - | gzip > marked.json.gz
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("-o", "--output", help="where to write (default: ./NAME.pista.json.gz, NAME the trace's, or "
                                               "its folder's for a trace.json.gz; - for standard output, plain JSON; "
                                               "a file that was there is replaced, and the 'wrote' line says so)")
    parser.add_argument("--lang", default="en", help="language of the markers' text (en, es)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.analysis import analyze
    from pista.cli.common import STDIN, default_output, print_notices, replaced_note
    from pista.i18n import check_lang, localize
    from pista.render import annotated
    from pista.trace.facts import derive

    lang = check_lang(args.lang)
    trace, data = _read(args.trace)
    print_notices(args.trace, trace.notices)
    end = None if data is not None else annotated.events_end(trace)
    trace.drop_events_view_columns()  # the copy is of the file's own bytes: no rule reads the flow events
    analysis = localize(analyze(derive(trace)), lang)
    del trace  # the analysis keeps what it needs
    out = Path(args.output) if args.output else default_output(args.trace, ".pista.json.gz")
    copy_notices: list[str] = []
    replaced = "" if args.output == STDIN else replaced_note(out)
    _write(args, out, analysis, data, end, copy_notices)
    print_notices(args.trace, copy_notices)
    where = "standard output" if args.output == STDIN else out
    print(f"pista: wrote {sanitize_line(where)}: {len(analysis.findings)} findings as markers{replaced}",
          file=sys.stderr)
    return 0


def _read(source: str) -> tuple[Trace, bytes | None]:
    """The trace as `pista analyze` reads it (streamed when big), with its notices; and the JSON
    bytes where they had to be read whole anyway (standard input)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.allocator import map_big_arrays
    from pista.cli.common import STDIN, read_stdin
    from pista.trace.load import decode_trace, load_trace

    map_big_arrays()
    if source == STDIN:
        data, notices = read_stdin()
        return decode_trace(data, source, notices), data
    return load_trace(source, events_view=False), None  # run() lets those columns go: not read at all


def _write(args: argparse.Namespace, out: Path, analysis: Analysis, data: bytes | None, end: int | None,
           notices: list[str]) -> None:
    """A trace the streamed reader took is copied block by block; any other is annotated in memory
    (small, or damaged or foreign, where the in-memory reader's mending is needed)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import STDIN, write_output
    from pista.render import annotated
    from pista.trace.load import read_bytes

    gz = out.name.endswith(".gz")
    if end is not None:
        try:
            write_output(out, annotated.stream_copy(args.trace, end, analysis, gz, notices), inputs=(args.trace,))
            return
        except annotated.NotWhereExpected:
            if args.output == STDIN:  # part of the copy is out already
                raise BadTrace(args.trace, "cannot annotate: the events do not end where the reader found "
                                           "them; write to a file (-o) instead") from None
            notices.clear()
    if data is None:
        data, _ = read_bytes(args.trace)
    write_output(out, annotated.render_pieces(data, analysis, gz=gz, source=args.trace, notices=notices),
                 inputs=(args.trace,))
