# /// script
# requires-python = ">=3.10"
# dependencies = ["pista", "torch==2.13.0"]
#
# [tool.uv.sources]
# pista = { path = "..", editable = true }
# ///
"""One nn.Linear training step (forward, MSE loss, backward, SGD) under torch.profiler.

    uv run examples/02_linear.py --size 4096 --batch 4096 --warmup

Each step is marked with `pista.step()`, the way you would mark your own training loop.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import record_function

import pista
from pista.render import terminal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--warmup", type=int, nargs="?", const=10, default=0)
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    device = "cuda" if args.device != "cpu" and torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = torch.nn.Linear(args.size, args.size, device=device, dtype=dtype)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.size, device=device, dtype=dtype)
    y = torch.randn(args.batch, args.size, device=device, dtype=dtype)

    def train_step() -> None:
        with record_function("train_step"):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        train_step()
    with pista.profile(args.out, device=device, label="linear") as p:
        for _ in range(p.total_steps):
            train_step()
            pista.step()  # the module-level call finds the active session

    print(p.table())
    print(terminal.render(pista.analyze(p), show_table=False))


if __name__ == "__main__":
    main()
