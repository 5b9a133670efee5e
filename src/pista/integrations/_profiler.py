"""The loop-independent part of pista's training callbacks (`StepProfiler`, what both show of it, the
ImportError a submodule raises without its framework): the frameworks' submodules (hf, lightning) import it
from here, and the package `pista.integrations` re-exports it; neither imports the package itself."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from pista.errors import UsageError

DEFAULT_START_STEP = 2  # two steps outside the profiler: the first (allocations, lazy init) is cold
DEFAULT_ACTIVE = 3  # pista's default schedule records 3 steps


class PistaWarning(RuntimeWarning):
    """pista could not profile or analyse a training run; training went on."""


def _count(value: Any, name: str, least: int) -> int:
    """`value`, an int (no boolean) of at least `least`; else a usage error naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(f"{name}={value!r}: must be an int >= {least}")
    return value


class StepProfiler:
    """The loop-independent part of the callbacks: counts steps, opens a `pista.profile` session
    for the window, and writes the analysis when it closes. Every entry point is guarded: an
    exception becomes a `PistaWarning` and disables profiling for the rest of the run."""

    def __init__(self, out: str | os.PathLike[str] | None, start_step: int, active: int,
                 with_stack: bool, profile_memory: bool, lang: str, label: str) -> None:
        # start-up: a training script imports this package before it trains
        from pista.i18n import check_lang

        self.start_step = _count(start_step, "start_step", 0)
        self.active = _count(active, "active", 1)
        self.out = None if out is None else Path(out)
        self.with_stack = with_stack
        self.profile_memory = profile_memory
        self.lang = check_lang(lang)
        self.label = label
        self.reset()

    def reset(self) -> None:
        """A new training run: nothing profiled yet. A session a crashed run left open (transformers
        has no hook for a failed `train()`) is stopped first."""
        if getattr(self, "session", None) is not None:
            self._abandon()
        self.steps_seen = 0
        self.session: Any = None
        self.done = False
        self.out_dir: Path | None = None
        self.trace_path: Path | None = None
        self.analysis: Any = None

    @property
    def last_step(self) -> int:
        return self.start_step + self.active - 1

    # -- the hooks ------------------------------------------------------------------------------

    def step_begin(self, device: str, rank: int = 0, world_size: int = 1) -> None:
        """At the start of a step: open the session at the step before the window (its warm-up)."""
        if self.done or self.session is not None:
            return
        if self.steps_seen == max(self.start_step - 1, 0):
            self._guard(self._start, device, rank, world_size)

    def step_end(self) -> None:
        """At the end of a step (after the optimizer): one profiler step; close after the window."""
        self.steps_seen += 1
        session = self.session
        if session is None:
            return
        self._guard(session.step)
        if self.session is not None and session.steps_done >= session.total_steps:
            self._guard(self._finish, None)

    def end(self, exception: BaseException | None = None) -> None:
        """Training ended (or failed): close a session still open, keeping the steps it recorded."""
        if self.session is not None:
            self._guard(self._finish, exception)
        elif not self.done and exception is None:
            self.done = True
            warnings.warn(f"pista: training ended after {self.steps_seen} step(s), before step "
                          f"{self.start_step}: nothing was profiled (lower start_step)", PistaWarning, stacklevel=3)

    # -- internals ------------------------------------------------------------------------------

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as err:  # never let pista break training
            self._abandon()
            warnings.warn(f"pista: {type(err).__name__}: {err}; profiling stopped, training continues",
                          PistaWarning, stacklevel=4)

    def _abandon(self) -> None:
        self.done = True
        session, self.session = self.session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.__exit__(None, None, None)

    def _start(self, device: str, rank: int, world_size: int) -> None:
        # start-up: a training script imports this package before it trains
        from pista.capture.session import Session, default_run_dir

        out = self.out if self.out is not None else default_run_dir(self.label)
        if world_size > 1:
            out = out / f"rank-{rank}"
        self.out_dir = out
        session = Session(out, device="cuda" if device == "cuda" else "cpu", wait=0,
                          warmup=1 if self.start_step > 0 else 0, active=self.active, repeat=1,
                          with_stack=self.with_stack, profile_memory=self.profile_memory, label=self.label)
        session.__enter__()
        self.session = session

    def _finish(self, exception: BaseException | None) -> None:
        session, self.session = self.session, None
        self.done = True
        session.__exit__(None, None, None)
        recorded = session.active_steps_done
        self.trace_path = session.trace_path
        if self.trace_path is None:
            why = f"{type(exception).__name__} in training" if exception is not None else "training ended"
            warnings.warn(f"pista: {why} before profiled step {self.start_step} completed: nothing was "
                          "recorded", PistaWarning, stacklevel=4)
            return
        # start-up: the analysis (~200 modules) only once the trace is written
        from pista.analysis import analyze
        from pista.cli.common import write_output
        from pista.render import json as json_render
        from pista.render import terminal

        steps = _training_steps(self.start_step, recorded)
        partial = "" if recorded >= self.active else f" (training ended after {recorded} of {self.active})"
        try:
            analysis = analyze(session)
            out = self.trace_path.parent
            write_output(out / "analysis.json", json_render.render(analysis, lang=self.lang))
            # a file: every finding whole, one logical line per line (as `pista analyze -v > file`)
            write_output(out / "analysis.txt", terminal.render(analysis, width=None, verbose=True, lang=self.lang))
        except Exception as err:  # the trace is saved; say so and go on
            warnings.warn(f"pista: profiled {steps} to {self.trace_path}, but the analysis failed: "
                          f"{type(err).__name__}: {err}; training continues", PistaWarning, stacklevel=4)
            return
        self.analysis = analysis
        steps += _trace_steps(analysis.summary.step_numbers)
        print(f"pista: profiled {steps}{partial} -> {self.trace_path}; {analysis.summary.verdict}, "
              f"{len(analysis.findings)} finding(s): {out / 'analysis.txt'}", file=sys.stderr, flush=True)


def _training_steps(first: int, recorded: int) -> str:
    """The training steps profiled, in words ("training steps 5-7")."""
    return f"training step {first}" if recorded == 1 else f"training steps {first}-{first + recorded - 1}"


def _trace_steps(numbers: list[int]) -> str:
    """How the trace numbers the steps the callback counted ("ProfilerStep#1-#3"): torch counts from
    the profiler's start, the callback from the run's, and a user reads both."""
    if not numbers:
        return ""
    span = f"#{numbers[0]}" if len(numbers) == 1 else f"#{numbers[0]}-#{numbers[-1]}"
    return f" (ProfilerStep{span} in the trace)"


class ProfiledRun:
    """What both callbacks show of their StepProfiler (`self.profiler`)."""

    profiler: StepProfiler

    @property
    def out_dir(self) -> Any:
        """Where this run's files went (None until profiling started)."""
        return self.profiler.out_dir

    @property
    def trace_path(self) -> Any:
        return self.profiler.trace_path

    @property
    def analysis(self) -> Any:
        """The `pista.analysis.Analysis` of the profiled steps (None until written)."""
        return self.profiler.analysis


def missing(extra: str, package: str, err: ImportError) -> ImportError:
    """The ImportError a submodule raises when its framework is not installed."""
    return ImportError(f"pista.integrations.{extra} needs {package}: pip install 'pista[{extra}]' ({err})")
