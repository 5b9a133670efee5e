"""Diagnose a trace: the verdict (overhead-bound, compute-bound, balanced, input-bound, start-up, cpu-only) and the
findings, each with its evidence (events, lane, step, ts, dur) and the advice."""

from __future__ import annotations

import argparse
import os
import sys

from pista.errors import UsageError

# `pista analyze --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista analyze runs/bert/trace.json.gz                  # the top fix, where the time goes, the findings
  pista analyze trace.json.gz -v | less                   # every finding whole
  pista analyze trace.json.gz --format json | jq .summary.top_fix
  pista analyze logs/                                     # a folder of per-rank traces, or of cycles
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz), or a folder of "
                                      "per-rank traces of one distributed job")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--rule", action="append", dest="rules", metavar="ID",
                        help="run only this rule (repeatable)")
    parser.add_argument("--select", metavar="IDS", help="only these rules (comma-separated; over [tool.pista])")
    parser.add_argument("--ignore", metavar="IDS", help="leave these rules out (comma-separated)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="each finding in full: the whole message, how its impact was estimated, more evidence, "
                             "the advice (by default a finding shows a few lines; JSON and the HTML report hold all)")
    table = parser.add_mutually_exclusive_group()
    table.add_argument("--table", action="store_true",
                       help="append torch's key_averages() table, as torch prints it (about 200 columns; "
                            "`pista table TRACE` prints it alone, with its own options)")
    table.add_argument("--no-table", action="store_true", help="no table (the default; kept for older scripts)")
    parser.add_argument("--peaks", metavar="FILE", help="the card's peak TFLOP/s and TB/s as JSON (pista.efficiency."
                                                        "load_peaks), over the built-in table")
    parser.add_argument("--lang", default="en", help="language of findings (en, es)")
    parser.add_argument("--replay", action=argparse.BooleanOptionalAction, default=None,
                        help="impacts from the engine's replay of the steps with each fix applied (pista whatif's "
                             "model), causes before symptoms, each µs claimed once, ranked without the profiler "
                             "(the default); --no-replay: each rule's own estimate (PISTA_REPLAY=0 does the same)")
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                        help="colour the text output (default: when stdout is a terminal)")
    dist = parser.add_argument_group("a folder of per-rank traces")
    dist.add_argument("--engine", choices=("local", "dask"), default="local",
                      help="where ranks are parsed: a local process pool (default) or a Dask cluster")
    dist.add_argument("--scheduler", metavar="ADDR", help="the Dask scheduler's address (with --engine dask)")
    dist.add_argument("--workers", type=int, metavar="N",
                      help="local processes (default and most: one per usable core, and per rank)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista import config
    from pista.analysis import analyze
    from pista.cli.common import apply_peaks, open_trace, output_style

    apply_peaks(args.peaks)
    settings = config.load(",".join(args.rules) if args.rules else args.select, args.ignore)
    config.apply_thresholds(settings)
    args.rules = settings.rules()
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n import check_lang

    args.lang = check_lang(args.lang)
    if os.path.isdir(args.trace):
        single = _single_trace(args.trace, args.lang)
        if single is None:
            return _run_folder(args)
        args.trace = single
    analysis = analyze(open_trace(args.trace), rules=args.rules, replay=args.replay)
    if args.format == "json":
        # start-up: only when the verb runs, not for its parser (pista.cli)
        from pista.render import json as renderer

        sys.stdout.write(renderer.render(analysis, lang=args.lang))
    else:
        # start-up: only when the verb runs, not for its parser (pista.cli)
        from pista.render import terminal

        color, width = output_style(args.color)
        sys.stdout.write(terminal.render(analysis, color=color, width=width, show_table=args.table,
                                         lang=args.lang, verbose=args.verbose))
    return 0


def _single_trace(folder: str, lang: str | None) -> str | None:
    """The folder's one trace file (tensorboard_trace_handler's folder after one cycle), read as that
    trace: one file is no job of ranks, nor cycles. None where it holds several, or its one file is a
    rank of a distributed job (it says so: distributedInfo's rank, or rank-N in its name)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import print_notices
    from pista.cycles import read_header
    from pista.distributed.rank import trace_files
    from pista.finding import Record
    from pista.i18n import note_text

    notices: list[Record] = []
    files = trace_files(folder, notices)
    if len(files) != 1:
        return None
    header = read_header(files[0])
    if header.rank is not None or header.name_rank is not None:
        return None
    print_notices(folder, [note_text(n, lang or "en") for n in notices])
    return str(files[0])


def _run_folder(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.distributed import analyze_ranks
    from pista.distributed import render as renderer

    if _run_cycles(args):
        return 0
    if args.table or args.no_table:
        raise UsageError(f"--{'table' if args.table else 'no-table'} is for one trace; a folder's report has the "
                         "per-rank table, not the op table")
    result = analyze_ranks(args.trace, engine=args.engine, workers=args.workers, scheduler=args.scheduler,
                           rules=args.rules, lang=args.lang)
    _write_report(renderer, result, args)
    return 0


def _run_cycles(args: argparse.Namespace) -> bool:
    """A folder of one process's profiler cycles (tensorboard_trace_handler): one analysis per file,
    in time order, and what changed between them. False: the folder is ranks."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cycles import analyze_cycles, cycle_files
    from pista.i18n import note_text
    from pista.notices import CyclesOptionsIgnored
    from pista.render import cycles as renderer

    headers = cycle_files(args.trace)
    if headers is None:
        return False
    result = analyze_cycles(headers, source=args.trace, rules=args.rules, lang=args.lang)
    if args.engine != "local" or args.scheduler or args.workers is not None:
        result.notices.append(note_text(CyclesOptionsIgnored(), args.lang))
    _write_report(renderer, result, args)
    return True


def _write_report(renderer, result, args: argparse.Namespace) -> None:  # noqa: ANN001 - a report module, its result
    """A folder's report (ranks' or cycles'), as JSON or as text for the terminal."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import output_style

    if args.format == "json":
        sys.stdout.write(renderer.render_json(result))
    else:
        color, width = output_style(args.color)
        sys.stdout.write(renderer.render_text(result, color=color, width=width, lang=args.lang))
