"""One `pista run`: build the workload, warm it up outside the profiler, profile its steps, and fill
the run folder: trace.json.gz, table.txt, analysis.json, run.json.
"""

from __future__ import annotations

import contextlib
import json
import platform
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pista._version import __version__
from pista.capture import import_torch, workloads
from pista.capture.session import Session, default_run_dir, resolve_device
from pista.cli.common import write_output
from pista.errors import UsageError

LONG_CAPTURE_CALLS = 20  # above this many warm-up calls or steps (or with compile), show progress



@dataclass
class RunConfig:
    workload: str
    size: int | None = None
    batch: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    warmup: int = 0  # un-profiled calls before the profiler starts
    compile: bool = False
    steps: int | None = None  # None: what the schedule needs
    wait: int = 1
    warmup_steps: int = 1
    active: int = 3
    repeat: int = 1
    sync_steps: bool = False
    out: str | None = None
    sort_by: str | None = None
    row_limit: int = 25
    with_stack: bool = False
    profile_memory: bool = False


@dataclass
class RunResult:
    config: RunConfig
    out_dir: Path
    device: str
    params: dict[str, Any]
    session: Session
    warmup_s: float = 0.0
    interrupted: bool = False
    interrupted_in: str | None = None  # "warm-up" or "steps"
    files: dict[str, str] = field(default_factory=dict)
    later_cycles: list[Any] = field(default_factory=list)  # the Analysis of each cycle after the first

    @property
    def trace_path(self) -> Path | None:
        return self.session.trace_path

    @property
    def table_text(self) -> str | None:
        return self.session.table_text

    def saved_line(self) -> str:
        """The one line an interrupted run prints."""
        s = self.session
        if self.trace_path is None:
            where = "during warm-up" if self.interrupted_in == "warm-up" else f"after {s.steps_done} step(s)"
            return f"pista: interrupted {where}; no active step had completed, nothing saved"
        return (f"pista: interrupted after {s.steps_done} step(s); saved the partial trace of "
                f"{s.active_steps_done} active step(s) to {self.trace_path}")


def versions(device: str) -> dict[str, Any]:
    torch = import_torch()
    out: dict[str, Any] = {"pista": __version__, "torch": torch.__version__, "python": platform.python_version(),
                           "platform": platform.platform(), "cuda": torch.version.cuda}
    if device == "cuda":
        out["device_name"] = torch.cuda.get_device_name()
        out["driver_capability"] = ".".join(map(str, torch.cuda.get_device_capability()))
    return out


def capture(config: RunConfig, progress: bool | None = None) -> RunResult:
    """Run the workload under the profiler. KeyboardInterrupt is caught: the result says what was saved."""
    if config.warmup < 0:
        raise UsageError("--warmup must be >= 0")
    device = resolve_device(config.device)
    out_dir = _out_dir(config)
    workload = workloads.build(config.workload, size=config.size, batch=config.batch, dtype=config.dtype,
                               device=device, compile=config.compile)
    if progress is None:
        progress = sys.stderr.isatty()
    session = Session(out_dir, device=device, wait=config.wait, warmup=config.warmup_steps,
                      active=config.active, repeat=config.repeat, sync_steps=config.sync_steps,
                      sort_by=config.sort_by, row_limit=config.row_limit, label=config.workload,
                      with_stack=config.with_stack, profile_memory=config.profile_memory)
    steps = _steps(config, session.total_steps)
    result = RunResult(config, out_dir, device, workload.params, session)
    torch = import_torch()
    long_capture = config.compile or config.warmup > LONG_CAPTURE_CALLS or steps > LONG_CAPTURE_CALLS
    with _Progress(progress, plain_lines=long_capture) as bar:
        _warm_up_and_profile(result, workload, steps, bar, torch)
    return result


def _out_dir(config: RunConfig) -> Path:
    """--out, else a new run folder named after the workload and its size."""
    return Path(config.out) if config.out else default_run_dir(f"{config.workload}-{config.size or 'default'}")


def _warm_up_and_profile(result: RunResult, workload: Any, steps: int, bar: _Progress, torch: Any) -> None:
    """The warm-up, then the profiled steps; Ctrl-C in either is caught, and the result says in which."""
    phase = "warm-up"
    try:
        t0 = time.perf_counter()
        _warm_up(result.config, workload, bar)
        if result.device == "cuda":
            torch.cuda.synchronize()
        result.warmup_s = time.perf_counter() - t0
        phase = "steps"
        _profiled_steps(result.session, workload, steps, bar)
    except KeyboardInterrupt:
        result.interrupted, result.interrupted_in = True, phase


def _steps(config: RunConfig, schedule_steps: int | None) -> int:
    """The steps to run: --steps, else the schedule's; a usage error where they record nothing."""
    steps = config.steps if config.steps is not None else schedule_steps
    if steps is None or steps < 1:
        raise UsageError("--steps must be given (and >= 1) when --repeat is 0")
    first_recorded = config.wait + config.warmup_steps + 1
    if steps < first_recorded:
        raise UsageError(f"--steps {steps} records nothing: the schedule (--wait {config.wait}, --warmup-steps "
                         f"{config.warmup_steps}) records from step {first_recorded}; run at least "
                         f"{first_recorded} steps or lower --wait/--warmup-steps")
    return steps


def _warm_up(config: RunConfig, workload: Any, bar: _Progress) -> None:
    """The un-profiled calls before the profiler starts (--warmup)."""
    if config.warmup:
        bar.start(f"warm-up: {config.warmup} un-profiled calls"
                  + (" (the first compiles)" if config.compile else ""), config.warmup)
    for _ in range(config.warmup):
        workload.step()
        bar.advance()


def _profiled_steps(session: Session, workload: Any, steps: int, bar: _Progress) -> None:
    """The steps under the profiler's schedule; Ctrl-C stops them at the next step boundary."""
    sch = session.schedule
    bar.start(f"profiling {steps} steps (wait {sch['wait']}, warmup {sch['warmup']}, "
              f"active {sch['active']} x {sch['repeat']})", steps)
    with session, _sigint_between_steps() as interrupted:
        for _ in range(steps):
            workload.step()
            session.step()
            bar.advance()
            if interrupted():
                raise KeyboardInterrupt


@contextlib.contextmanager
def _sigint_between_steps() -> Iterator[Callable[[], bool]]:
    """Ctrl-C while profiling is taken at the next step boundary: raised inside torch's record_function
    callbacks, a KeyboardInterrupt failed torch's own assertion ("Expected record to be set") and the process
    died of SIGSEGV at exit, now and then, with nothing saved. A second Ctrl-C interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    pending: list[int] = []  # the signals taken

    def handler(signum: int, frame: Any) -> None:
        if pending:
            raise KeyboardInterrupt
        pending.append(signum)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield lambda: bool(pending)
    finally:
        signal.signal(signal.SIGINT, previous)


def finish(result: RunResult) -> Any:
    """Write table.txt, analysis.json and run.json; return the Analysis (None if nothing was saved)."""
    analysis = None
    out = result.out_dir
    if result.trace_path is not None:
        result.files["trace"] = str(result.trace_path)
        for n, extra in enumerate(result.session.traces[1:], start=2):
            result.files[f"trace_cycle{n}"] = str(extra)
        result.files["table"] = str(out / "table.txt")  # written by the session with the trace
        if not result.interrupted:
            # start-up: capture needs no analysis; it is loaded once the trace is written
            from pista.analysis import analyze
            from pista.render import json as json_render

            analysis = analyze(result.trace_path)
            write_output(out / "analysis.json", json_render.render(analysis))
            result.files["analysis"] = str(out / "analysis.json")
            # every cycle the schedule recorded (repeat > 1), not only the first
            for n, extra in enumerate(result.session.traces[1:], start=2):
                later = analyze(extra)
                write_output(out / f"analysis.cycle{n}.json", json_render.render(later))
                result.files[f"analysis_cycle{n}"] = str(out / f"analysis.cycle{n}.json")
                result.later_cycles.append(later)
    write_output(out / "run.json", json.dumps(run_record(result, analysis), indent=1) + "\n")
    return analysis


def run_record(result: RunResult, analysis: Any = None) -> dict[str, Any]:
    s = result.session
    record: dict[str, Any] = {
        "command": sys.argv,
        "config": asdict(result.config),
        "workload": result.params,
        "schedule": s.schedule,
        "device": result.device,
        "versions": versions(result.device),
        "steps_done": s.steps_done,
        "active_steps_done": s.active_steps_done,
        "warmup_s": round(result.warmup_s, 4),
        "profiled_s": round(s.wall_s, 4),
        "interrupted": result.interrupted,
        "torch_self_cpu_total_us": s.self_cpu_total_us,
        "files": result.files,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if analysis is not None:
        record["verdict"] = analysis.summary.verdict
        record["pista_self_cpu_total_us"] = analysis.summary.self_cpu_total_us
        record["pista_self_device_total_us"] = analysis.summary.self_device_total_us
    return record


class _Progress:
    """A transient rich progress bar on stderr (a terminal), else one plain line per phase when
    plain_lines, else nothing."""

    def __init__(self, enabled: bool, plain_lines: bool = False) -> None:
        self.enabled = enabled
        self.plain_lines = plain_lines
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            # rich's progress bar: ~60 modules, only while a workload runs on a terminal
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def start(self, description: str, total: int) -> None:
        if self._progress is None:
            if self.plain_lines:
                print(f"pista: {description}", file=sys.stderr, flush=True)
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)
