"""Rebuild torch's `key_averages().table()` from a trace file alone.

Columns and sort keys follow torch: `--sort-by cuda_time_total --row-limit 25` is what
`prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)` prints.
"""

from __future__ import annotations

import argparse
import json
import sys

from pista.errors import UsageError
from pista.render.controls import sanitize

SORT_CHOICES = ("cuda_time_total", "self_cuda_time_total", "cpu_time_total", "self_cpu_time_total",
                "device_time_total", "self_device_time_total", "cpu_time", "cuda_time", "device_time", "count",
                "cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage", "self_cuda_memory_usage",
                "device_memory_usage", "self_device_memory_usage")


# --group-by-stack keeps N frames per event (N int64 columns the trace's length): no Python stack torch
# records is deeper than this, and 10^20 frames was exit 3.
MAX_GROUP_BY_STACK = 128



# `pista table --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista table trace.json.gz                               # sorted by CUDA total, as torch's default
  pista table trace.json.gz --sort-by self_cpu_time_total --row-limit 10
  pista table trace.json.gz --group-by-input-shape --format json
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a torch.profiler chrome trace (.json or .json.gz)")
    parser.add_argument("--sort-by", default=None, choices=SORT_CHOICES,
                        help="column to sort by (default: cuda_time_total, or cpu_time_total without GPU work)")
    parser.add_argument("--row-limit", type=int, default=25, help="rows to show (-1: all)")
    parser.add_argument("--group-by-input-shape", action="store_true",
                        help="one row per name and input shapes, as key_averages(group_by_input_shape=True)")
    parser.add_argument("--group-by-stack", type=int, default=0, metavar="N",
                        help="one row per name and N innermost Python frames, as key_averages(group_by_stack_n=N)"
                             " (needs a with_stack=True trace)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import open_trace
    from pista.table import build_table, render_text

    if not 0 <= args.group_by_stack <= MAX_GROUP_BY_STACK:  # before the trace is read: bad input
        raise UsageError(f"--group-by-stack {args.group_by_stack}: give 0 to {MAX_GROUP_BY_STACK} frames")
    facts = open_trace(args.trace)
    table = build_table(facts, group_by_input_shape=args.group_by_input_shape, group_by_stack_n=args.group_by_stack)
    sort_by = args.sort_by or ("cuda_time_total" if facts.has_gpu else "cpu_time_total")
    limit = args.row_limit  # below 0: every row (Table.sorted)
    if args.format == "json":
        json.dump(table.to_dict(sort_by, limit), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(sanitize(render_text(table, sort_by, limit, has_device=facts.has_gpu)))
    return 0
