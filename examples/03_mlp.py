# /// script
# requires-python = ">=3.10"
# dependencies = ["pista", "torch==2.13.0"]
#
# [tool.uv.sources]
# pista = { path = "..", editable = true }
# ///
"""A 4-block MLP (Linear-GELU-Linear) with AdamW under bf16 autocast, eager or compiled.

    uv run examples/03_mlp.py --warmup
    uv run examples/03_mlp.py --warmup --compile

The same experiment as `pista run mlp`; this file shows how the run is put together from
`pista.capture.workloads` and `pista.profile`.
"""

from __future__ import annotations

import argparse

import pista
from pista.capture.session import resolve_device
from pista.capture.workloads import build
from pista.render import terminal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--warmup", type=int, nargs="?", const=10, default=0)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    device = resolve_device(args.device)
    mlp = build("mlp", size=args.size, batch=args.batch, device=device, compile=args.compile)
    for _ in range(args.warmup):
        mlp.step()
    with pista.profile(args.out, device=device, label="mlp") as p:
        for _ in range(p.total_steps):
            mlp.step()
            p.step()

    print(p.table())
    print(terminal.render(pista.analyze(p), show_table=False))


if __name__ == "__main__":
    main()
