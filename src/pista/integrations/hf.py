"""A Hugging Face `transformers` `TrainerCallback` that profiles steps start_step .. start_step+active-1.

    from pista.integrations.hf import PistaCallback

    trainer = Trainer(model, args, train_dataset=ds, callbacks=[PistaCallback(out="runs/bert")])
    trainer.train()   # runs/bert/trace.json.gz, table.txt, analysis.json, analysis.txt

A step is one optimizer step: from one `on_step_end` to the next, so the recorded ProfilerStep
regions hold the data loading, forward, backward and optimizer of every micro-batch, and the
logging/saving/evaluation the Trainer does after the previous step. See `pista.integrations`.
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

try:
    from transformers import TrainerCallback
except ImportError as _err:
    raise missing("hf", "transformers", _err) from _err


class PistaCallback(ProfiledRun, TrainerCallback):
    """Profile `active` optimizer steps after `start_step` un-profiled ones, then write the trace and
    pista's analysis to `out` (default pista-runs/hf-YYYYmmdd-HHMMSS). Never stops training."""

    def __init__(self, out: str | os.PathLike[str] | None = None, start_step: int = DEFAULT_START_STEP,
                 active: int = DEFAULT_ACTIVE, with_stack: bool = False, profile_memory: bool = False,
                 lang: str = "en") -> None:
        self.profiler = StepProfiler(out, start_step, active, with_stack, profile_memory, lang, label="hf")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.profiler.reset()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.profiler.done or self.profiler.session is not None:
            return
        try:
            device = args.device.type
        except Exception:  # a backend we do not know: profile the CPU side
            device = "cpu"
        self.profiler.step_begin(device, getattr(args, "process_index", 0), getattr(args, "world_size", 1))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.profiler.step_end()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.profiler.end()
