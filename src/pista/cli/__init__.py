"""`pista VERB ...`: one module per verb, each with `add_arguments(parser)` and `run(args) -> int`.

Verb modules import their heavy dependencies inside `run`, so `pista --help` and a small
`pista analyze` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pista import __version__
from pista.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, PistaError

# (verb, module, one-line help); modules that are not there yet are left out of the CLI.
VERBS = (
    ("table", "table", "rebuild torch's key_averages() table from a trace file"),
    ("analyze", "analyze", "the verdict and the findings for a trace (or a folder of per-rank traces)"),
    ("explain", "explain", "the documentation of one rule"),
    ("rules", "rules", "list the rule catalogue"),
    ("run", "run", "capture a built-in workload under torch.profiler and diagnose it"),
    ("profile", "profile", "run your script under torch.profiler and diagnose it"),
    ("sweep", "sweep", "profile a workload at several sizes: where it turns compute-bound"),
    ("report", "report", "a self-contained HTML report of a trace"),
    ("annotate", "annotate", "a copy of the trace with pista's findings as markers for Perfetto"),
    ("diff", "diff", "what changed between two traces"),
    ("sql", "sql", "query the trace's tables with SQL (DuckDB)"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pista", description="The detective for PyTorch profiler traces.")
    parser.add_argument("--version", action="version", version=f"pista {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, module_name, help_text in VERBS:
        try:
            module = importlib.import_module(f"pista.cli.{module_name}")
        except ModuleNotFoundError as err:
            if err.name == f"pista.cli.{module_name}":
                continue
            raise
        p = sub.add_parser(verb, help=help_text, description=(module.__doc__ or help_text).strip())
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args._run(args) or 0)
    except PistaError as err:
        print(f"pista: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("pista: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `pista table big.json | head`: the reader left; nothing to report
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
