"""Run your script under torch.profiler and diagnose it.

Steps are marked by the script calling `pista.step()` at the end of each step, or by
`--function NAME`: each return of that function ends a step. The schedule, the outputs and
Ctrl-C behave as in `pista run`: OUT/{trace.json.gz, table.txt, analysis.json, run.json}.
Options go before the script; everything after it is the script's own arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pista.errors import EXIT_INTERRUPTED, UsageError

if TYPE_CHECKING:
    from pista.analysis import Analysis
    from pista.capture.session import Session

# `pista profile --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista profile train.py --epochs 1                     # the script calls pista.step() per step
  pista profile --function train_step --with-stack train.py
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.run import add_device_and_schedule

    parser.add_argument("--function", metavar="NAME", default=None,
                        help="a function in the script (NAME or Class.method); each return ends a step")
    add_device_and_schedule(parser)
    parser.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR", help="run folder (default pista-runs/SCRIPT-TIMESTAMP)")
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("script", help="the Python script to run as __main__")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n import check_lang

    args.lang = check_lang(args.lang)  # before the script runs, not after it
    script = Path(args.script)
    if not script.is_file():
        raise UsageError(f"{script}: no such script")
    out, session = _session(args, script)
    interrupted, exit_code, error = _run_script(args, script, session)
    files, analysis = _outputs(session, out, interrupted)
    _write_record(args, script, session, out, files, analysis, (interrupted, exit_code, error))
    if interrupted:
        _say_interrupted(session)
        return EXIT_INTERRUPTED
    if session.trace_path is None:
        return _no_trace(args, session, exit_code)
    _warn_short_run(session)
    _print_reading(args, session, analysis, out, files)
    if error:
        print(f"pista: the script failed ({error}); the trace holds the steps before that", file=sys.stderr)
    return exit_code


def _session(args: argparse.Namespace, script: Path) -> tuple[Path, Session]:
    """The run's folder (-o, else one named after the script) and the profiler session the flags set up."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.session import Session, default_run_dir

    out = Path(args.out) if args.out else default_run_dir(script.stem)
    return out, Session(out, device=args.device, wait=args.wait, warmup=args.warmup_steps, active=args.active,
                        repeat=args.repeat, sync_steps=args.sync_steps, sort_by=args.sort_by,
                        row_limit=args.row_limit, label=script.stem, with_stack=args.with_stack,
                        profile_memory=args.memory)


def _no_trace(args: argparse.Namespace, session: Session, exit_code: int) -> int:
    """Why the script left no trace, on stderr; its exit code, else 2."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.script import no_trace_reason

    print(f"pista: error: no trace: {no_trace_reason(session, args.function)}", file=sys.stderr)
    return exit_code or 2


def _run_script(args: argparse.Namespace, script: Path, session: Session) -> tuple[bool, int, str | None]:
    """(interrupted, the script's exit code, its error)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.script import run_script

    try:
        result = run_script(str(script), list(args.script_args), session, function=args.function)
    except KeyboardInterrupt:
        return True, EXIT_INTERRUPTED, None
    return False, result.exit_code, result.error


def _outputs(session: Session, out: Path, interrupted: bool) -> tuple[dict[str, str], Analysis | None]:
    """The files the run wrote, and the analysis of its trace (None when interrupted or without a trace)."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import write_output

    files: dict[str, str] = {}
    if session.trace_path is None:
        return files, None
    files["trace"] = str(session.trace_path)
    files["table"] = str(out / "table.txt")
    if interrupted:
        return files, None
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.analysis import analyze
    from pista.render import json as json_render

    analysis = analyze(session.trace_path)
    write_output(out / "analysis.json", json_render.render(analysis))
    files["analysis"] = str(out / "analysis.json")
    return files, analysis


def _write_record(args: argparse.Namespace, script: Path, session: Session, out: Path, files: dict[str, str],
                  analysis: Analysis | None, outcome: tuple[bool, int, str | None]) -> None:
    """run.json: the command, the schedule, the versions, how the script ended, the files."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.runner import versions
    from pista.cli.common import write_output

    interrupted, exit_code, error = outcome
    record = {"command": sys.argv, "script": str(script), "script_args": list(args.script_args),
              "function": args.function, "schedule": session.schedule, "device": session.device,
              "versions": versions(session.device or "cpu"), "steps_done": session.steps_done,
              "active_steps_done": session.active_steps_done, "profiled_s": round(session.wall_s, 4),
              "interrupted": interrupted, "script_exit_code": exit_code, "script_error": error,
              "torch_self_cpu_total_us": session.self_cpu_total_us, "files": files,
              "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if analysis is not None:
        record["verdict"] = analysis.summary.verdict
    out.mkdir(parents=True, exist_ok=True)
    write_output(out / "run.json", json.dumps(record, indent=1) + "\n")


def _say_interrupted(session: Session) -> None:
    if session.trace_path is None:
        print(f"pista: interrupted after {session.steps_done} step(s); no active step had completed, "
              "nothing saved", file=sys.stderr)
    else:
        print(f"pista: interrupted after {session.steps_done} step(s); saved the partial trace of "
              f"{session.active_steps_done} active step(s) to {session.trace_path}", file=sys.stderr)


def _warn_short_run(session: Session) -> None:
    """A script that ended before the schedule's last step."""
    total = session.total_steps
    if total is not None and session.steps_done < total:
        sched = session.schedule
        print(f"pista: warning: the script ended after {session.steps_done} step(s), fewer than the {total} the "
              f"schedule needs (wait={sched['wait']}, warmup={sched['warmup']}, active={sched['active']}): the trace "
              f"holds {session.active_steps_done} complete active step(s) and the script's tail after the last "
              "pista.step(); run more steps for a steady reading", file=sys.stderr)


def _print_reading(args: argparse.Namespace, session: Session, analysis: Analysis | None, out: Path,
                   files: dict[str, str]) -> None:
    """torch's table, the reading and the files saved, on stdout."""
    assert analysis is not None  # a trace, not interrupted: analyzed
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import capture_table, output_style
    from pista.render import terminal

    sys.stdout.write(capture_table(session, analysis))
    sys.stdout.write("\n")
    color, width = output_style(args.color)
    sys.stdout.write(terminal.render(analysis, color=color, width=width, show_table=False, lang=args.lang))
    sys.stdout.write(f"\nsaved {out}/: {', '.join(sorted(Path(p).name for p in files.values()))}, run.json\n")
