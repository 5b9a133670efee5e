"""Profile a workload at several sizes and show where it turns from overhead-bound to compute-bound.

Each size is one `pista run` (warmed up: --warmup defaults to 10 calls here) into OUT/size_N/;
the table lists Self CPU total, Self CUDA total and pista's verdict per size, and OUT/sweep.json
keeps the points. `--html FILE` writes the sweep as an HTML page.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from pista.cli.run import DEFAULT_WARMUP_CALLS, WORKLOADS, add_capture_arguments, config_from
from pista.errors import EXIT_INTERRUPTED, UsageError
from pista.render.controls import sanitize_line

# `pista sweep --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista sweep matmul_add --sizes 64,256,1024,4096 --html sweep.html
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--sizes", required=True, help="comma-separated sizes, e.g. 64,256,1024,4096")
    add_capture_arguments(parser, sizes=False)
    parser.set_defaults(warmup=DEFAULT_WARMUP_CALLS)
    parser.add_argument("-o", "--output", "--out", dest="out", default=None, metavar="DIR", help="sweep folder (default pista-runs/sweep-...)")
    parser.add_argument("--html", default=None, metavar="FILE", help="also write the sweep as HTML")


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise UsageError(f"--sizes {text}: give integers separated by commas") from err
    if not sizes or min(sizes) < 1:
        raise UsageError(f"--sizes {text}: give at least one positive size")
    return sizes


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pathlib import Path

    from pista.capture.runner import capture, finish
    from pista.capture.session import default_run_dir
    from pista.cli.common import write_output

    sizes = parse_sizes(args.sizes)
    out = Path(args.out) if args.out else default_run_dir(f"sweep-{args.workload}")
    points: list[dict] = []
    interrupted = False
    for size in sizes:
        print(f"pista: sweep {args.workload} size {size}", file=sys.stderr, flush=True)
        result = capture(config_from(args, args.workload, size, str(out / f"size_{size}")))
        if result.interrupted:
            _keep_interrupted(result)
            interrupted = True
            break
        points.append(_point(size, finish(result).summary, result.trace_path))
    write_output(out / "sweep.json", json.dumps({"workload": args.workload, "points": points}, indent=1) + "\n")
    sys.stdout.write(render_points(args.workload, points))
    sys.stdout.write(f"saved {out}/ (sweep.json, size_N/)\n")
    if args.html and points:
        _write_html(args.html, points)
    return EXIT_INTERRUPTED if interrupted else 0


def _keep_interrupted(result) -> None:  # noqa: ANN001 - a capture's result
    """An interrupted size: what it traced is kept and analysed (if anything), and where it went said."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.capture.runner import finish

    if result.trace_path is not None:
        finish(result)
    print(result.saved_line(), file=sys.stderr)


def _point(size: int, s, trace_path) -> dict:  # noqa: ANN001 - the analysis' summary, the trace's path
    """sweep.json's point for one size."""
    return {"size": size, "self_cpu_total_us": s.self_cpu_total_us, "self_device_total_us": s.self_device_total_us,
            "verdict": s.verdict, "gpu_busy_share": s.gpu_busy_share, "trace": str(trace_path)}


def render_points(workload: str, points: list[dict]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import short_figures

    with short_figures():
        return _points(workload, points)


def _points(workload: str, points: list[dict]) -> str:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n._fmt import num
    from pista.i18n._fmt import t as format_time

    lines = [f"{'size':>6}  {'Self CPU total':>14}  {'Self CUDA total':>15}  {'CUDA/CPU':>8}  {'GPU busy':>8}  verdict"]
    for p in points:
        cpu, dev = p["self_cpu_total_us"], p["self_device_total_us"]
        ratio = num(dev / cpu, 2) if cpu else "-"
        busy = "-" if p["gpu_busy_share"] is None else f"{num(100 * p['gpu_busy_share'], 1)}%"
        lines.append(f"{p['size']:>6}  {format_time(cpu):>14}  {format_time(dev):>15}  {ratio:>8}  {busy:>8}  "
                     f"{p['verdict']}")
    lines.append(turning_point(workload, points))
    return "\n".join(lines) + "\n"


def turning_point(workload: str, points: list[dict]) -> str:
    """One sentence: between which sizes the verdict turns compute-bound."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.render.sweep import verdict_turn

    if not points:
        return "no size completed"
    verdicts = [p["verdict"] for p in points]
    if all(v == "cpu-only" for v in verdicts):
        return "CPU only: no GPU work, so no turn from overhead-bound to compute-bound to find"
    turn = verdict_turn(points)
    if turn is not None:
        before, after = turn
        return (f"{workload} turns compute-bound between size {before['size']} ({before['verdict']}) "
                f"and size {after['size']}")
    if verdicts[0] == "compute-bound":
        return f"{workload} is compute-bound already at size {points[0]['size']}"
    return f"{workload} does not turn compute-bound up to size {points[-1]['size']}"


def _write_html(path: str, points: list[dict]) -> None:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import write_output

    try:
        sweep_render = importlib.import_module("pista.render.sweep")
    except ModuleNotFoundError as err:
        if err.name != "pista.render.sweep":
            raise
        print("pista: notice: --html needs pista.render.sweep, which this build lacks; skipped", file=sys.stderr)
        return
    write_output(path, sweep_render.render(points))
    print(f"wrote {sanitize_line(path)}", file=sys.stderr)
