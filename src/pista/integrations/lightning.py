"""A Lightning `Callback` that profiles training batches start_step .. start_step+active-1.

    from pista.integrations.lightning import PistaCallback

    trainer = L.Trainer(max_steps=100, callbacks=[PistaCallback(out="runs/lit")])
    trainer.fit(model, loader)   # runs/lit/trace.json.gz, table.txt, analysis.json, analysis.txt

A step is one training batch, from one `on_train_batch_end` to the next (as Lightning's own
profilers count; with `accumulate_grad_batches=k` an optimizer step is k of them). It works with
`lightning` (`lightning.pytorch`) and with the standalone `pytorch_lightning`: where both are
installed the class derives from both `Callback`s, so either Trainer takes it. See
`pista.integrations`.
"""

from __future__ import annotations

import os
from typing import Any

from pista.integrations._profiler import (
    DEFAULT_ACTIVE,
    DEFAULT_START_STEP,
    ProfiledRun,
    StepProfiler,
    missing,
)

_bases: list[type] = []
_errors: list[ImportError] = []
try:
    from lightning.pytorch import Callback as _LightningCallback

    _bases.append(_LightningCallback)
except ImportError as _err:
    _errors.append(_err)
try:
    from pytorch_lightning import Callback as _PLCallback

    if _PLCallback not in _bases:
        _bases.append(_PLCallback)
except ImportError as _err:
    _errors.append(_err)
if not _bases:
    raise missing("lightning", "lightning (or pytorch_lightning)", _errors[0]) from _errors[0]


# lightning.pytorch.Callback, pytorch_lightning.Callback or both, found at import: mypy takes no *bases
class PistaCallback(ProfiledRun, *_bases):  # type: ignore[misc]
    """Profile `active` training batches after `start_step` un-profiled ones, then write the trace
    and pista's analysis to `out` (default pista-runs/lightning-YYYYmmdd-HHMMSS). Never stops
    training."""

    def __init__(self, out: str | os.PathLike[str] | None = None, start_step: int = DEFAULT_START_STEP,
                 active: int = DEFAULT_ACTIVE, with_stack: bool = False, profile_memory: bool = False,
                 lang: str = "en") -> None:
        super().__init__()
        self.profiler = StepProfiler(out, start_step, active, with_stack, profile_memory, lang,
                                     label="lightning")

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.profiler.reset()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        if self.profiler.done or self.profiler.session is not None:
            return
        try:
            device = trainer.strategy.root_device.type
        except Exception:  # a strategy we do not know: profile the CPU side
            device = "cpu"
        self.profiler.step_begin(device, getattr(trainer, "global_rank", 0), getattr(trainer, "world_size", 1))

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.profiler.step_end()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.profiler.end()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self.profiler.end(exception)
