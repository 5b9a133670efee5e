"""Capture a built-in workload under torch.profiler and diagnose it.

Warm-up calls run outside the profiler; then `schedule(wait, warmup, active, repeat)` steps with
CPU (+ CUDA on cuda) activities and record_shapes=True. Prints torch's own key_averages() table,
then pista's diagnosis, and writes OUT/{trace.json.gz, table.txt, analysis.json, run.json}.
Without CUDA it runs on the CPU. Ctrl-C keeps the active steps already recorded (exit 130).
"""

from __future__ import annotations

import argparse
import sys

from pista.errors import EXIT_INTERRUPTED
from pista.render.controls import sanitize_line

WORKLOADS = ("matmul_add", "linear", "mlp", "transformer")  # = pista.capture.workloads.NAMES
DEFAULT_WARMUP_CALLS = 10  # = pista.capture.runner.DEFAULT_WARMUP_CALLS (no torch import here)



# `pista run --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista run matmul_add --size 64                        # overhead-bound on a GPU
  pista run matmul_add --size 4096 --warmup --compile -o runs/mm4096
"""

def add_capture_arguments(parser: argparse.ArgumentParser, sizes: bool = True) -> None:
    """Options `run` and `sweep` share: the workload's shape, the device, the schedule."""
    if sizes:
        parser.add_argument("--size", type=int, default=None, help="matrix / model width (default per workload)")
    parser.add_argument("--batch", type=int, default=None, help="rows per step (default per workload)")
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on cuda, fp32 on cpu), bf16, fp16, fp32")
    add_device_and_schedule(parser)
    parser.add_argument("--warmup", type=int, nargs="?", const=DEFAULT_WARMUP_CALLS, default=0, metavar="N",
                        help=f"un-profiled warm-up calls before profiling (bare: {DEFAULT_WARMUP_CALLS})")
    parser.add_argument("--compile", action="store_true", help="torch.compile the function / model")
    parser.add_argument("--steps", type=int, default=None,
                        help="steps to run (default: (wait + warmup-steps + active) x repeat)")


def add_device_and_schedule(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--wait", type=int, default=1, help="schedule: steps skipped first (default 1)")
    parser.add_argument("--warmup-steps", type=int, default=1,
                        help="schedule: profiler warm-up steps, traced but not kept (default 1)")
    parser.add_argument("--active", type=int, default=3, help="schedule: steps recorded (default 3)")
    parser.add_argument("--repeat", type=int, default=1, help="schedule: cycles (default 1)")
    parser.add_argument("--sync", dest="sync_steps", action="store_true",
                        help="torch.cuda.synchronize() at each step end (default: only when the profiler stops)")
    parser.add_argument("--lang", default="en", help="language of the findings (en, es)")
    parser.add_argument("--with-stack", action="store_true",
                        help="record Python stacks (with_stack=True): findings name your code; adds host time")
    parser.add_argument("--memory", action="store_true",
                        help="record allocations (profile_memory=True): peaks, memory over time, leaks")
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.table import SORT_CHOICES

    parser.add_argument("--sort-by", default=None, choices=SORT_CHOICES, metavar="KEY",
                        help="sort key of torch's table (default cuda_time_total, cpu_time_total on cpu)")
    parser.add_argument("--row-limit", type=int, default=25, help="rows of torch's table (default 25)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", choices=WORKLOADS)
    add_capture_arguments(parser)
    parser.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR",
                        help="run folder (default pista-runs/WORKLOAD-SIZE-TIMESTAMP)")
    parser.add_argument("--color", action=argparse.BooleanOptionalAction, default=None,
                        help="colour the diagnosis (default: when stdout is a terminal)")


def config_from(args: argparse.Namespace, workload: str, size: int | None, out: str | None):
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.runner import RunConfig

    return RunConfig(workload=workload, size=size, batch=args.batch, dtype=args.dtype, device=args.device,
                     warmup=args.warmup, compile=args.compile, steps=args.steps, wait=args.wait,
                     warmup_steps=args.warmup_steps, active=args.active, repeat=args.repeat,
                     sync_steps=args.sync_steps, out=out, sort_by=args.sort_by, row_limit=args.row_limit,
                     with_stack=args.with_stack, profile_memory=args.memory)


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.runner import capture, finish
    from pista.i18n import check_lang

    args.lang = check_lang(args.lang)  # before the capture, not after it
    result = capture(config_from(args, args.workload, args.size, args.out))
    if result.interrupted:
        if result.trace_path is not None:
            finish(result)
        print(result.saved_line(), file=sys.stderr)
        return EXIT_INTERRUPTED
    analysis = finish(result)
    print_result(result, analysis, args.color, args.lang)
    return 0


def cycle_line(n: int, first, later, lang: str = "en") -> str:
    """One line for a later profiler cycle: its verdict, its step against the first cycle's, its top fix."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n import localize, word
    from pista.i18n._fmt import num, short_figures, t

    later = localize(later, lang)
    a, b = first.summary.step_us, later.summary.step_us
    with short_figures():
        change = f" ({'+' if b >= a else ''}{num(100 * (b - a) / a, 1)}%)" if a > 0 else ""
        top = later.top_fix
        fix = f"; {word('Start here', lang)}: {sanitize_line(top.fix)}" if top is not None else ""
        return f"\n{word('cycle', lang)} {n}: {later.summary.verdict}, {word('median step', lang)} {t(b)}{change}{fix}\n"


def print_result(result, analysis, color: bool | None, lang: str = "en") -> None:
    """torch's table, pista's diagnosis, and where the files went."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import capture_table, output_style
    from pista.render import terminal

    sys.stdout.write(capture_table(result.session, analysis))
    sys.stdout.write("\n")
    if analysis is not None:
        use_color, width = output_style(color)
        sys.stdout.write(terminal.render(analysis, color=use_color, width=width, show_table=False, lang=lang))
        for n, later in enumerate(result.later_cycles, start=2):
            sys.stdout.write(cycle_line(n, analysis, later, lang))
    sys.stdout.write(f"\nsaved {result.out_dir}/: {', '.join(sorted(_short(p) for p in result.files.values()))}, "
                     "run.json\n")
    sys.stdout.flush()


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]
