"""Memory from `profile_memory=True` traces: the `[memory]` instant events torch records at each
allocation and free (args `Bytes`, `Total Allocated`, `Total Reserved`, `Device Type`, `Device Id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import msgspec
import numpy as np

from pista.trace.facts import Facts, per_facts

MEMORY_EVENT = "[memory]"
# c10::DeviceType values torch writes in `Device Type`
DEVICE_TYPES = {0: "cpu", 1: "cuda", 13: "mps", 18: "privateuse1", 20: "xpu"}
# Which of them torch's table counts as "CPU Mem" (CPU, MKLDNN, IDEEP) and as device memory
# (CUDA, HIP, XPU, PrivateUse1): torch.autograd.profiler's _cpu_memory_usage/_device_memory_usage.
CPU_MEMORY_TYPES = (0, 3, 5)
DEVICE_MEMORY_TYPES = (1, 6, 18, 20)


# No device holds this many bytes (256 TiB): a [memory] event's size or total past it is no size, and
# the event is read as unreadable (its columns are int64, and their sums must not wrap: 2^64 was
# OverflowError, exit 3, in every verb).
MAX_MEMORY_BYTES = 2**48
_Bytes = Annotated[int, msgspec.Meta(ge=-MAX_MEMORY_BYTES, le=MAX_MEMORY_BYTES)]
# c10's device types and indices are small numbers; past this one is none.
MAX_DEVICE_NUMBER = 2**31
_DeviceNumber = Annotated[int, msgspec.Meta(ge=-1, lt=MAX_DEVICE_NUMBER)]


class _MemoryArgs(msgspec.Struct, gc=False):
    bytes: _Bytes = msgspec.field(name="Bytes", default=0)
    allocated: _Bytes = msgspec.field(name="Total Allocated", default=-1)
    reserved: _Bytes = msgspec.field(name="Total Reserved", default=-1)
    device_type: _DeviceNumber = msgspec.field(name="Device Type", default=-1)
    device_id: _DeviceNumber = msgspec.field(name="Device Id", default=-1)


@dataclass(frozen=True)
class MemoryTimeline:
    """One device's `[memory]` events in time order."""

    device: str  # "cuda:0", "cpu"
    ts: np.ndarray  # ns
    delta: np.ndarray  # bytes: + allocated, - freed
    allocated: np.ndarray  # bytes allocated after the event
    reserved: np.ndarray  # bytes reserved after the event (-1 where not recorded)

    @property
    def peak_allocated(self) -> int:
        return int(self.allocated.max()) if self.allocated.size else 0

    @property
    def peak_reserved(self) -> int:
        return int(self.reserved.max()) if self.reserved.size else 0


def timelines(facts: Facts) -> list[MemoryTimeline]:
    """Per device, its memory events (none when the trace was recorded without profile_memory)."""
    rows = memory_rows(facts)
    out = []
    for name in sorted(set(rows["device"].tolist()), key=lambda d: (d == "cpu", d)):
        m = rows["device"] == name
        out.append(MemoryTimeline(str(name), rows["ts_ns"][m], rows["bytes"][m], rows["allocated_bytes"][m],
                                  rows["reserved_bytes"][m]))
    return out


@per_facts
def memory_rows(facts: Facts) -> dict[str, np.ndarray]:
    """Every [memory] event as columns (pista sql's `memory` table): idx, ts_ns, device, bytes,
    allocated_bytes, reserved_bytes, device_type (c10's number); empty columns without profile_memory."""
    trace = facts.trace
    try:
        name_id = trace.names.index(MEMORY_EVENT)
    except ValueError:
        return _no_rows()
    idx = np.flatnonzero(trace.name == name_id)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    rows = trace.decode_args(idx.tolist(), _MemoryArgs)
    kept = [(k, r) for k, r in enumerate(rows) if r is not None and r.allocated >= 0]
    if not kept:
        return _no_rows()
    keep = [k for k, _ in kept]
    return {"idx": idx[keep].astype(np.int64), "ts_ns": trace.ts[idx[keep]].astype(np.int64),
            **_arg_columns([r for _, r in kept])}


def _no_rows() -> dict[str, np.ndarray]:
    """memory_rows' columns, empty."""
    return {"idx": np.empty(0, np.int64), "ts_ns": np.empty(0, np.int64), "device": np.empty(0, dtype=object),
            "bytes": np.empty(0, np.int64), "allocated_bytes": np.empty(0, np.int64),
            "reserved_bytes": np.empty(0, np.int64), "device_type": np.empty(0, np.int64)}


def _arg_columns(args: list[_MemoryArgs]) -> dict[str, np.ndarray]:
    return {
        "device": np.array([_device(a) for a in args], dtype=object),
        "bytes": np.array([a.bytes for a in args], dtype=np.int64),
        "allocated_bytes": np.array([a.allocated for a in args], dtype=np.int64),
        "reserved_bytes": np.array([a.reserved for a in args], dtype=np.int64),
        "device_type": np.array([a.device_type for a in args], dtype=np.int64),
    }


def _device(a: _MemoryArgs) -> str:
    return "cpu" if a.device_type == 0 else f"{DEVICE_TYPES.get(a.device_type, str(a.device_type))}:{a.device_id}"


def summary(facts: Facts) -> list[dict[str, object]]:
    """`summary.memory`: per device, its peaks in bytes."""
    return [{"device": t.device, "peak_allocated_bytes": t.peak_allocated, "peak_reserved_bytes": t.peak_reserved}
            for t in timelines(facts)]


def allocated_at_step_ends(facts: Facts, timeline: MemoryTimeline) -> list[tuple[int, int]]:
    """(step number, bytes allocated at the step's end) for the steps the timeline reaches."""
    out = []
    for step in facts.steps:
        k = int(np.searchsorted(timeline.ts, step.end, side="right")) - 1
        if k >= 0 and timeline.ts[k] >= facts.steps[0].start:
            out.append((step.number, int(timeline.allocated[k])))
    return out
