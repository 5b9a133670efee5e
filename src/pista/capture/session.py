"""`pista.profile()`: a torch.profiler session with a schedule, an atomic export and a Ctrl-C path.

    with pista.profile(out="runs/mine") as p:
        for batch in loader:
            train_step(batch)
            p.step()            # or pista.step() from anywhere inside the block
    print(p.table())
    analysis = pista.analyze(p)  # reads p.trace_path

Defaults follow the fixtures in tests/fixtures: CPU activity always, CUDA when on cuda,
record_shapes=True, `schedule(wait=1, warmup=1, active=3, repeat=1)`. No synchronize at step ends
unless `sync_steps=True` (the profiler synchronizes once when it stops): on an H200 a per-step
synchronize turned the compiled 4096 matmul_add from compute-bound (GPU busy 61%) to balanced
(48%) and drew pista's own trailing-sync warning at size 64. The first cycle gives
`OUT/trace.json.gz` and `OUT/table.txt` (torch's `key_averages().table()`); later cycles
(repeat > 1) `OUT/trace.cycleN.json.gz` and `OUT/table.cycleN.txt`. Files are written to a
temporary name and renamed, so each is either whole or absent.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pista.capture import import_torch
from pista.errors import CaptureError, UsageError

TRACE_NAME = "trace.json.gz"
DEFAULT_SCHEDULE = {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
DEFAULT_ROW_LIMIT = 25

_ACTIVE: list[Session] = []
_cpu_notice_given = False


def step() -> None:
    """End one step of the innermost active session; a no-op outside any session."""
    if _ACTIVE:
        _ACTIVE[-1].step()


def resolve_device(device: str = "auto") -> str:
    """'cuda' or 'cpu'. 'auto' falls back to the CPU with one line on stderr (once per process)."""
    torch = import_torch()
    if device not in ("auto", "cuda", "cpu"):
        raise UsageError(f"--device {device}: choose auto, cuda or cpu")
    if device == "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise CaptureError(f"--device cuda: torch {torch.__version__} sees no CUDA device here; "
                           "use --device cpu (or auto)")
    _tell_cpu_fallback()
    return "cpu"


def _tell_cpu_fallback() -> None:
    """'auto' found no CUDA device: say so on stderr, once per process."""
    global _cpu_notice_given
    if not _cpu_notice_given:
        print("pista: no CUDA device here: running on the CPU (CPU activity only)", file=sys.stderr)
        _cpu_notice_given = True


def default_run_dir(label: str) -> Path:
    """pista-runs/LABEL-YYYYmmdd-HHMMSS (with -2, -3 ... if taken)."""
    base = Path("pista-runs") / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def parse_self_cpu_total(table_text: str) -> float | None:
    """The `Self CPU time total:` line of a torch table, in µs."""
    for line in table_text.splitlines():
        if line.startswith("Self CPU time total:"):
            value = line.split(":", 1)[1].strip()
            for unit, scale in (("ms", 1e3), ("us", 1.0), ("s", 1e6)):
                if value.endswith(unit):
                    return float(value[: -len(unit)]) * scale
    return None


class Session:
    """One torch.profiler session; see the module docstring. Use `pista.profile(...)` to make one."""

    def __init__(self, out: str | os.PathLike[str] | None = None, *, device: str = "auto",
                 wait: int = 1, warmup: int = 1, active: int = 3, repeat: int = 1,
                 record_shapes: bool = True, sync_steps: bool = False, sort_by: str | None = None,
                 row_limit: int = DEFAULT_ROW_LIMIT, label: str = "profile",
                 on_step: Callable[[Session], None] | None = None, with_stack: bool = False,
                 profile_memory: bool = False) -> None:
        for name, value in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat)):
            if value < 0:
                raise UsageError(f"--{name.replace('warmup', 'warmup-steps')} {value}: must be >= 0")
        if active < 1:
            raise UsageError("--active must be at least 1: the schedule would record nothing")
        self.out_dir = Path(out) if out is not None else default_run_dir(label)
        self.requested_device = device
        self.schedule = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat}
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.profile_memory = profile_memory
        self.sync_steps = sync_steps
        self.sort_by = sort_by
        self.row_limit = row_limit
        self.on_step = on_step
        self.device: str | None = None
        self.steps_done = 0
        self.active_steps_done = 0
        self.interrupted = False
        self.traces: list[Path] = []
        self.tables: list[str] = []
        self.wall_s = 0.0
        self._prof: Any = None
        self._schedule_fn: Any = None
        self._torch: Any = None
        self._t0 = 0.0

    # -- what the run produced ---------------------------------------------------------------

    @property
    def total_steps(self) -> int | None:
        """Steps the schedule needs (None when repeat=0, i.e. it cycles for ever)."""
        s = self.schedule
        return None if s["repeat"] == 0 else (s["wait"] + s["warmup"] + s["active"]) * s["repeat"]

    @property
    def trace_path(self) -> Path | None:
        """The first cycle's trace (what `pista.analyze(session)` reads); None if nothing was saved."""
        return self.traces[0] if self.traces else None

    @property
    def table_text(self) -> str | None:
        return self.tables[0] if self.tables else None

    def table(self) -> str:
        """torch's own `key_averages().table(...)` for the first cycle, as printed at capture."""
        if not self.tables:
            raise CaptureError("no trace was recorded: the session ended before its first active step")
        return self.tables[0]

    @property
    def self_cpu_total_us(self) -> float | None:
        return parse_self_cpu_total(self.tables[0]) if self.tables else None

    # -- the session ---------------------------------------------------------------------------

    def __enter__(self) -> Session:
        torch = self._torch = import_torch()
        # torch: the capture extra, imported only to capture
        from torch.profiler import ProfilerActivity, profile, schedule

        self.device = resolve_device(self.requested_device)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        activities = [ProfilerActivity.CPU]
        if self.device == "cuda":
            activities.append(ProfilerActivity.CUDA)
        if self.sort_by is None:
            self.sort_by = "cuda_time_total" if self.device == "cuda" else "cpu_time_total"
        self._schedule_fn = schedule(**self.schedule)
        self._host = host_facts(torch)  # once, but the thread count: written into each recorded cycle
        self._prof = profile(activities=activities, record_shapes=self.record_shapes, with_stack=self.with_stack,
                             profile_memory=self.profile_memory, schedule=self._schedule_fn,
                             on_trace_ready=self._on_trace_ready)
        self._t0 = time.perf_counter()
        self._prof.__enter__()
        _ACTIVE.append(self)
        del torch
        return self

    def step(self) -> None:
        """End the current step (after a GPU synchronize if sync_steps, on cuda)."""
        if self._prof is None:
            raise CaptureError("step() outside the session: use it inside `with pista.profile() as p:`")
        if self.sync_steps and self.device == "cuda":
            self._torch.cuda.synchronize()
        recording = self._is_recording(self.steps_done)
        if recording:  # metadata sticks only while the profiler records
            self._add_host_metadata()
        with warnings.catch_warnings():
            # torch warns at each new cycle that the last one's events are cleared (acc_events=False): the
            # session has saved that cycle already (_on_trace_ready), so the warning is no news to the user
            warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
            self._prof.step()
        self.steps_done += 1
        self.active_steps_done += recording
        if self.on_step is not None:
            self.on_step(self)

    def _add_host_metadata(self) -> None:
        """The host's description into the trace, with the thread count as the step ran: a script may
        torch.set_num_threads() after the session started (an expert review's threads1.py read 2
        threads for a one-thread run)."""
        host = dict(self._host, intra_op_threads=int(self._torch.get_num_threads()))
        self._prof.add_metadata_json("pista_host", json.dumps(host))

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        self.interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        prof, self._prof = self._prof, None
        # An interrupted or failed run keeps what its completed active steps recorded; a cycle
        # with no completed step is dropped rather than saved as a fragment.
        self._drop_open_cycle = self.active_steps_done == 0 or not self._cycle_has_completed_step()
        try:
            prof.__exit__(None, None, None)
        finally:
            self.wall_s = time.perf_counter() - self._t0
        return False

    # -- internals ----------------------------------------------------------------------------

    _drop_open_cycle = False

    def _is_recording(self, step_index: int) -> bool:
        # torch: the capture extra, imported only to capture
        from torch.profiler import ProfilerAction

        return self._schedule_fn(step_index) in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def _cycle_has_completed_step(self) -> bool:
        """Whether the cycle still open (if any) has at least one completed active step."""
        return self.steps_done > 0 and self._is_recording(self.steps_done - 1)

    def _on_trace_ready(self, prof: Any) -> None:
        if self._prof is None and self._drop_open_cycle:
            return  # called from __exit__ for a cycle with no completed step
        cycle = len(self.traces) + 1
        suffix = "" if cycle == 1 else f".cycle{cycle}"
        table = prof.key_averages().table(sort_by=self.sort_by, row_limit=self.row_limit)
        self.traces.append(export_trace(prof, self.out_dir / f"trace{suffix}.json.gz"))
        self.tables.append(table)
        _write_text(self.out_dir / f"table{suffix}.txt", table)


def host_facts(torch: Any) -> dict[str, Any]:
    """What the trace cannot tell about the CPU and that the CPU rules need: torch's intra-op threads
    against the cores this process may use, and whether the CPU has native bf16 GEMMs
    (AVX512-BF16 or AMX), where `torch.autocast("cpu", torch.bfloat16)` pays."""
    cpu = getattr(torch, "cpu", None)

    def supported(name: str) -> bool:
        probe = getattr(cpu, name, None)
        try:
            return bool(probe()) if probe is not None else False
        except Exception:  # a private probe that changed or fails: unknown is "no"
            return False

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
    return {"intra_op_threads": int(torch.get_num_threads()), "cores": cores,
            "cpu_capability": str(getattr(torch.backends.cpu, "get_cpu_capability", lambda: "")()),
            "bf16_gemm": supported("_is_avx512_bf16_supported") or supported("_is_amx_tile_supported"),
            "amx": supported("_is_amx_tile_supported")}


def export_trace(prof: Any, target: Path) -> Path:
    """`prof.export_chrome_trace` to a temporary name beside target, then rename: whole or absent."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp.json.gz")
    try:
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _write_text(target: Path, text: str) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def profile(out: str | os.PathLike[str] | None = None, **options: Any) -> Session:
    """A `Session`; options: device, wait, warmup, active, repeat, record_shapes, sync_steps,
    sort_by, row_limit, label, on_step, with_stack, profile_memory."""
    return Session(out, **options)
