# /// script
# requires-python = ">=3.10"
# dependencies = ["pista", "torch==2.13.0"]
#
# [tool.uv.sources]
# pista = { path = "..", editable = true }
# ///
"""The seed experiment: fn(x, w, b) = torch.add(torch.matmul(x, w), b) under torch.profiler.

    uv run examples/01_matmul_add.py --size 64                      # overhead-bound
    uv run examples/01_matmul_add.py --size 4096 --warmup --compile  # compute-bound, one addmm

bf16 on cuda (fp32 on the CPU), record_function("matmul_add") around each call, warm-up calls
outside the profiler, schedule(wait=1, warmup=1, active=3), torch's table, then pista's verdict.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import record_function

import pista
from pista.render import terminal


def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.add(torch.matmul(x, w), b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--warmup", type=int, nargs="?", const=10, default=0, help="un-profiled calls (bare: 10)")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--sync", action="store_true", help="torch.cuda.synchronize() at each step end")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    device = "cuda" if args.device != "cpu" and torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    x = torch.randn(args.size, args.size, device=device, dtype=dtype)
    w = torch.randn(args.size, args.size, device=device, dtype=dtype)
    b = torch.randn(args.size, device=device, dtype=dtype)
    run = torch.compile(fn) if args.compile else fn

    for _ in range(args.warmup):  # outside the profiler: cuBLAS heuristics, the compile itself
        run(x, w, b)
    if device == "cuda":
        torch.cuda.synchronize()

    label = f"mm{args.size}" + ("_compile" if args.compile else "")
    with pista.profile(args.out, device=device, label=label, sync_steps=args.sync) as p:  # wait=1, warmup=1, active=3
        for _ in range(p.total_steps):
            with record_function("matmul_add"):
                run(x, w, b)
            p.step()

    print(p.table())
    print(terminal.render(pista.analyze(p), show_table=False))
    print(f"trace: {p.trace_path}")


if __name__ == "__main__":
    main()
