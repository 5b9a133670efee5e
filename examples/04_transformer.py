# /// script
# requires-python = ">=3.10"
# dependencies = ["pista", "torch==2.13.0"]
#
# [tool.uv.sources]
# pista = { path = "..", editable = true }
# ///
"""A small GPT-style transformer (built in code, no weights downloaded), one training step per
profiler step, bf16 autocast and AdamW.

    uv run examples/04_transformer.py --size 512 --batch 8 --warmup

--size is the model width (64 per head), 4 layers, 256 tokens, a vocabulary of 8192.
"""

from __future__ import annotations

import argparse

import pista
from pista.capture.session import resolve_device
from pista.capture.workloads import build
from pista.render import terminal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--warmup", type=int, nargs="?", const=5, default=0)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    device = resolve_device(args.device)
    gpt = build("transformer", size=args.size, batch=args.batch, device=device, compile=args.compile)
    print(f"model: {gpt.params['params'] / 1e6:.1f} M parameters, {gpt.params['layers']} layers, "
          f"{gpt.params['heads']} heads")
    for _ in range(args.warmup):
        gpt.step()
    with pista.profile(args.out, device=device, label="transformer") as p:
        for _ in range(p.total_steps):
            gpt.step()
            p.step()

    print(p.table())
    print(terminal.render(pista.analyze(p), show_table=False))


if __name__ == "__main__":
    main()
