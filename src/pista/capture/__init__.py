"""Capture: run work under torch.profiler with sane defaults and write a trace pista can read.

This package is the only part of pista that imports torch, and only inside functions, so that
`import pista` and `pista analyze` never pay for it.

- `session`: `pista.profile(...)` (a profiler session with a schedule, atomic export, Ctrl-C safety)
  and `pista.step()`.
- `workloads`: the built-in experiments of `pista run` (matmul_add, linear, mlp, transformer).
- `runner`: one `pista run`: warm-up, the profiled steps, and the run folder.
"""

from __future__ import annotations

import os
from typing import Any

from pista.errors import CaptureError


def import_torch() -> Any:
    """torch, or a one-line error saying how to get it."""
    # kineto prints USDT/STAGE lines on every profiler start and stop (torch 2.13) unless told
    # otherwise; 6 is above its highest level. A value the user set wins.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    try:
        # torch: the capture extra, imported only to capture
        import torch
    except ImportError as err:
        raise CaptureError("capture needs PyTorch: pip install 'pista[capture]' (or any torch build)") from err
    return torch
