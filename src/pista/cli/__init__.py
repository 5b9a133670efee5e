"""`pista VERB ...`: one module per verb, each with `add_arguments(parser)` and `run(args) -> int`.

Verb modules import their heavy dependencies inside `run`, so `pista --help` and a small
`pista analyze` start fast.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import NoReturn

from pista._version import __version__
from pista.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    PistaError,
    Terminated,
)
from pista.render.controls import sanitize, unencodable

# (verb, module, one-line help); modules that are not there yet are left out of the CLI.
VERBS = (
    ("table", "table", "rebuild torch's key_averages() table from a trace file"),
    ("analyze", "analyze", "the verdict and the findings for a trace (or a folder of per-rank traces)"),
    ("check", "check", "a CI gate: exit 1 on findings at or above a severity, or a step-time regression"),
    ("explain", "explain", "the documentation of one rule"),
    ("rules", "rules", "list the rule catalogue"),
    ("run", "run", "capture a built-in workload under torch.profiler and diagnose it"),
    ("profile", "profile", "run your script under torch.profiler and diagnose it"),
    ("sweep", "sweep", "profile a workload at several sizes: where it turns compute-bound"),
    ("report", "report", "a self-contained HTML report of a trace"),
    ("annotate", "annotate", "a copy of the trace with pista's findings as markers for Perfetto"),
    ("diff", "diff", "what changed between two traces"),
    ("sql", "sql", "query the trace's tables with SQL (DuckDB)"),
    ("whatif", "whatif", "replay the profiled steps with your edits: what a change would save"),
)


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for verbs, choices and flags (a one-line error, exit 2)."""

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            message += _did_you_mean(choice.group(1), re.findall(r"'?([\w.-]+)'?", choice.group(2)))
        unknown = re.match(r"unrecognized arguments: (\S+)", message)
        if unknown and unknown.group(1).startswith("-"):
            flags = [o for a in self._actions for o in a.option_strings]
            message += _did_you_mean(unknown.group(1).split("=")[0], flags)
        super().error(sanitize(message))  # an argument quoted back may hold control characters


def _did_you_mean(word: str, options: list[str]) -> str:
    """' (did you mean X?)' for the closest of `options`, else ''."""
    # only for a usage error's suggestion
    import difflib

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with `argv` naming a verb, that verb's alone (the others' modules
    and parsers took 10 ms of every command); the whole one for help, errors and suggestions."""
    parser = _Parser(prog="pista", description="The detective for PyTorch profiler traces.")
    parser.add_argument("--version", action="version", version=f"pista {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    named = _named_verb(sys.argv[1:] if argv is None else argv)
    for verb, module_name, help_text in VERBS:
        module = None if named and verb != named else _verb_module(module_name)
        if module is not None:
            _add_verb(sub, verb, help_text, module)
    return parser


def _add_verb(sub: argparse._SubParsersAction, verb: str, help_text: str, module: ModuleType) -> None:
    """The verb's parser: its module's arguments, docstring and examples."""
    examples = getattr(module, "EXAMPLES", "")
    p = sub.add_parser(verb, help=help_text, description=(module.__doc__ or help_text).strip(),
                       epilog=f"examples:\n{examples.rstrip()}" if examples else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # the examples' lines as written
    module.add_arguments(p)
    p.set_defaults(_run=module.run, _parser=p)


def _verb_module(module_name: str) -> ModuleType | None:
    """The verb's module, None where it is not there yet."""
    try:
        return importlib.import_module(f"pista.cli.{module_name}")
    except ModuleNotFoundError as err:
        if err.name == f"pista.cli.{module_name}":
            return None
        raise


def _named_verb(argv: Sequence[str]) -> str | None:
    """The verb argv names, if known and after nothing but the top level's own flags."""
    first = next((a for a in argv if a not in ("-h", "--help", "--version")), None)
    return first if any(first == verb for verb, _, _ in VERBS) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # the verb's own usage and suggestions, not the top-level ones
        (getattr(args, "_parser", None) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The verb, its failures each as one line and an exit code (pista.errors)."""
    try:
        with _sigterm_raises():
            return int(args._run(args) or 0)
    except PistaError as err:
        return _fail(str(err), err.exit_code)
    except KeyboardInterrupt:
        print("pista: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("pista: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        # `pista table big.json | head`: the reader left; nothing to report, and nothing more to
        # flush into the closed pipe at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:  # an output that cannot be written: no space, no permission
        return _fail(_os_error(err), EXIT_BAD_INPUT)
    except MemoryError:
        return _fail("out of memory (is the trace bigger than this machine's RAM?)", EXIT_BAD_INPUT)
    except Exception as err:  # a bug: still one line, the traceback on request
        if os.environ.get("PISTA_DEBUG"):
            raise
        return _fail(f"internal error: {type(err).__name__}: {err} (a bug in pista; set PISTA_DEBUG=1 "
                     "for the traceback)", EXIT_INTERNAL)
    finally:
        _forget_peaks()


def _os_error(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    return f"{where}{err.strerror or err}"


def _forget_peaks() -> None:
    """--peaks lasts one command (main() is also called in-process)."""
    if "pista.efficiency" in sys.modules:
        sys.modules["pista.efficiency"].use_peaks(None)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM (kill, a job scheduler's time limit) unwinds like Ctrl-C, so no output's temp file is
    left behind. Only in this process: a forked child that inherited the handler dies as it would
    have. Signal handlers can only be set from the main thread; elsewhere nothing changes."""
    # start-up: not for --help and usage errors
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != owner:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def entry() -> None:
    """The console script (and `python -m pista`): main(), then out without the interpreter's
    teardown, which frees a big trace's objects one by one (25-35 ms of a 0.55 s `pista analyze`
    on the 64 MB trace). Every output file is written and closed by then; stdout and stderr are
    flushed here. Not after capture or Dask runs: torch and distributed clean up at exit."""
    _tolerant_stdout()
    code = main()
    if any(m in sys.modules for m in ("torch", "distributed")) or sys.gettrace() or sys.getprofile():
        sys.exit(code)  # a tracer or profiler (coverage, cProfile) writes its results at exit
    _flush_and_exit(code)


def _tolerant_stdout() -> None:
    """What the stdout's encoding cannot hold is no UnicodeEncodeError (exit 3): a file name that is
    not UTF-8 (held as lone surrogates) is written as its own bytes, as a C or C.UTF-8 locale
    writes it; with an ASCII stdout (PYTHONIOENCODING=ascii, some containers) µ is written u
    and the rest as backslash escapes."""
    if getattr(sys.stdout, "errors", None) == "strict" and hasattr(sys.stdout, "reconfigure"):
        codecs.register_error("pista-stdout", unencodable)
        sys.stdout.reconfigure(errors="pista-stdout")


def _flush_and_exit(code: int) -> NoReturn:
    """Flush stdout and stderr (a failure to is the exit code where there was none) and leave at once."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`pista table big.json | head`)
        pass
    except OSError as err:  # the last of the output could not be written: no space left
        code = _fail(f"cannot write the output: {err.strerror or err}", EXIT_BAD_INPUT)
    try:
        sys.stderr.flush()
    except OSError:
        code = code or EXIT_BAD_INPUT
    finally:
        os._exit(code)


def _fail(message: str, code: int) -> int:
    """The one line every failure prints: `pista: error: ...`, newlines folded, and control
    characters (from a file's name, or text quoted from the file) written out, not acted on."""
    line = sanitize(" ".join(message.split()))
    if len(line) > 1000:
        line = line[:997] + "..."
    print(f"pista: error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    entry()
