"""The memory-growth rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
memory-growth`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/memory_growth.ftl."""

from __future__ import annotations

import msgspec
import numpy as np

from pista.findings import Context, Evidence, Finding, Impact, Record, Severity
from pista.memory import MAX_DEVICE_NUMBER, MAX_MEMORY_BYTES, allocated_at_step_ends, timelines
from pista.trace.facts import Facts

ID = "memory-growth"
# Growth per step that counts: gpu/memory_leak grows 75.5 MB per step, gpu/memory_steady 512 bytes
# (the detached loss scalars it keeps); 1 MiB and 1% of the peak separate them by orders of magnitude.
MIN_GROWTH_BYTES = 1 << 20
MIN_GROWTH_OF_PEAK = 0.01
MIN_STEPS = 3  # growth in every one of at least this many step ends (two points are a coincidence)
CRITICAL_STEPS_TO_OOM = 10_000  # a day of 10-step-per-second training
EVIDENCE_OPS = 5


class MemoryGrowth(Record):
    device: str
    steps: int
    first_bytes: int  # allocated at the end of the first profiled step
    last_bytes: int
    growth_bytes_per_step: float
    capacity_bytes: int  # the device's memory (deviceProperties), 0 where unknown
    steps_to_oom: float | None  # at this rate, None where the capacity is unknown
    top_op: str  # the op that allocated most of what is still held


class Held(Record):
    """Note on an op whose allocations in the last step are still held at the end of the window."""

    bytes: int


class _Alloc(msgspec.Struct, gc=False):
    bytes: int = msgspec.field(name="Bytes", default=0)
    addr: int = msgspec.field(name="Addr", default=-1)


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if len(facts.steps) < MIN_STEPS:
        return []
    out = []
    for line in timelines(facts):
        ends = allocated_at_step_ends(facts, line)
        values = np.array([b for _, b in ends], dtype=np.float64)
        if len(ends) >= MIN_STEPS and _grows(values, line.peak_allocated):
            out.append(_finding(facts, line.device, values))
    return out


def _grows(values: np.ndarray, peak: float) -> bool:
    """Whether the allocated bytes at the steps' ends grow every step, by at least MIN_GROWTH_BYTES and
    MIN_GROWTH_OF_PEAK of the peak a step on average."""
    growth = np.diff(values)
    return not (growth <= 0).any() and float(growth.mean()) >= max(MIN_GROWTH_BYTES, MIN_GROWTH_OF_PEAK * peak)


def _finding(facts: Facts, device: str, values: np.ndarray) -> Finding:
    per_step = float(np.diff(values).mean())
    held = _held_by_op(facts, device)
    capacity = _capacity(facts, device)
    to_oom = (capacity - values[-1]) / per_step if capacity else None
    record = MemoryGrowth(device=device, steps=int(values.size), first_bytes=int(values[0]),
                          last_bytes=int(values[-1]), growth_bytes_per_step=per_step, capacity_bytes=capacity,
                          steps_to_oom=None if to_oom is None else float(to_oom), top_op=held[0][0] if held else "")
    severity = Severity.CRITICAL if to_oom is not None and to_oom < CRITICAL_STEPS_TO_OOM else Severity.WARNING
    evidence = [Evidence.of(facts, op, Held(size)) for _, op, size in held[:EVIDENCE_OPS]]
    return Finding(ID, record, Impact.none(), evidence, severity)


def _capacity(facts, device: str) -> int:
    if not device.startswith("cuda:"):
        return 0
    wanted = int(device.split(":")[1])
    for props in facts.trace.device_properties:
        # the header is input: an id or a size as text, a list or past any device reads as unknown
        # (int() of them was ValueError or TypeError: exit 3)
        if _whole(props.get("id"), MAX_DEVICE_NUMBER) == wanted:
            return _whole(props.get("totalGlobalMem"), MAX_MEMORY_BYTES) or 0
    return 0


def _whole(value: object, most: int) -> int | None:
    """`value` where it is a whole number from 0 to `most`, else None."""
    return value if type(value) is int and 0 <= value <= most else None


def _held_by_op(facts, device: str) -> list[tuple[str, int, int]]:
    """(op name, op event, bytes) for the last step's allocations still held at the window's end,
    per allocating op (the op the [memory] event nests in), largest first."""
    trace = facts.trace
    try:
        name_id = trace.names.index("[memory]")
    except ValueError:
        return []
    idx = np.flatnonzero(trace.name == name_id)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    rows = trace.decode_args(idx.tolist(), _Alloc)
    last = facts.steps[-1]
    live: dict[int, tuple[int, int]] = {}  # addr -> (event, bytes) allocated in the last step
    for i, row in zip(idx.tolist(), rows, strict=True):
        if row is None or row.addr < 0:
            continue
        if row.bytes > 0 and last.start <= trace.ts[i] < last.end:
            live[row.addr] = (i, row.bytes)
        elif row.bytes < 0:
            live.pop(row.addr, None)
    ops = np.flatnonzero(trace.category_mask({"cpu_op"}) & facts.is_host)
    by_op: dict[int, int] = {}
    for i, size in live.values():
        op = _innermost_op(facts, ops, i)
        if op >= 0:
            by_op[op] = by_op.get(op, 0) + size
    ranked = sorted(by_op.items(), key=lambda kv: -kv[1])
    return [(trace.event_name(op), op, size) for op, size in ranked]


def _innermost_op(facts, ops: np.ndarray, i: int) -> int:
    """The deepest op on event i's thread whose span holds its time (instant events do not nest)."""
    trace = facts.trace
    t = trace.ts[i]
    mask = (trace.tid[ops] == trace.tid[i]) & (trace.ts[ops] <= t) & (trace.ts[ops] + trace.dur[ops] >= t)
    cands = ops[mask]
    return int(cands[np.argmax(facts.depth[cands])]) if cands.size else -1
