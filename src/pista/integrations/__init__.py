"""Callbacks that profile a few steps of a training loop with pista's defaults and diagnose them.

    from pista.integrations.hf import PistaCallback          # transformers: pip install 'pista[hf]'
    trainer = Trainer(..., callbacks=[PistaCallback(start_step=2, active=3)])

    from pista.integrations.lightning import PistaCallback   # Lightning: pip install 'pista[lightning]'
    trainer = L.Trainer(..., callbacks=[PistaCallback()])

Steps are counted from 0 in the run the callback sees (a resumed run counts from where it resumed):
steps 0 .. start_step-2 run outside the profiler, step start_step-1 is the profiler's own warm-up
(torch.profiler's `warmup=1`, as `pista run`), steps start_step .. start_step+active-1 are recorded.
For transformers a step is one optimizer step (`on_step_end`, gradient accumulation included); for
Lightning one training batch (`on_train_batch_end`), as Lightning's own profilers count. When the
last active step ends the profiler stops and OUT gets `trace.json.gz`, `table.txt` (torch's
`key_averages().table()`), `analysis.json` (as `pista analyze --format json`) and `analysis.txt` (as
`pista analyze -v` into a file); one line on stderr says where, with the steps both as the run counts
them and as the trace numbers them (ProfilerStep#N counts from the profiler's start). With several processes each
writes under OUT/rank-N.

This module imports neither transformers nor Lightning (nor torch); the two submodules import
their framework and fail with an ImportError naming the extra to install. Nothing here stops
training: an error of pista's (starting the profiler, exporting, analysing) becomes a warning and
profiling ends for that run.
"""

from __future__ import annotations

from typing import Any

from pista.integrations._profiler import PistaWarning, StepProfiler


def __getattr__(name: str) -> Any:
    # Aliases importing their framework only when asked for.
    if name == "PistaTrainerCallback":
        # an optional extra: transformers loads on use
        from pista.integrations.hf import PistaCallback

        return PistaCallback
    if name == "PistaLightningCallback":
        # an optional extra: lightning loads on use
        from pista.integrations.lightning import PistaCallback as LightningCallback

        return LightningCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["PistaTrainerCallback", "PistaLightningCallback", "PistaWarning", "StepProfiler"]
