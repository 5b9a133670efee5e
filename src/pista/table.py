"""The profiler's `key_averages()` table, rebuilt from the trace file alone.

Torch's rules, reproduced: host events nest per thread and their self time excludes children;
a kernel, copy or memset counts as device time of the op whose External id it carries, and of
every op above it; `ProfilerStep#N` rows fold into `ProfilerStep*`; GPU-side record_function
regions are rows of their own but stay out of the Self CUDA total; the profiler's overhead
activities (CUPTI buffer requests, lazy loading) count as host rows, in the Self CPU total, as
torch counts them, and are charged the kernels of the op they interrupted, as torch charges them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import msgspec
import numpy as np

from pista.memory import CPU_MEMORY_TYPES, DEVICE_MEMORY_TYPES, MEMORY_EVENT, memory_rows
from pista.opargs import op_args, sequence_numbers
from pista.query import nearest_ancestor
from pista.render.controls import sanitize_line
from pista.trace.facts import STEP_NAME, Facts, indices
from pista.trace.model import NO_ID

NAME_WIDTH = 55

SORT_KEYS = {
    "cpu_time_total": "cpu_total_us",
    "self_cpu_time_total": "self_cpu_us",
    "cuda_time_total": "device_total_us",
    "device_time_total": "device_total_us",
    "self_cuda_time_total": "self_device_us",
    "self_device_time_total": "self_device_us",
    "cpu_time": "cpu_avg_us",
    "cuda_time": "device_avg_us",
    "device_time": "device_avg_us",
    "count": "calls",
    "cpu_memory_usage": "cpu_mem",
    "self_cpu_memory_usage": "self_cpu_mem",
    "cuda_memory_usage": "device_mem",
    "device_memory_usage": "device_mem",
    "self_cuda_memory_usage": "self_device_mem",
    "self_device_memory_usage": "self_device_mem",
}
# torch's unit steps for the memory columns (profiler_util._format_memory)
_MEMORY_UNITS = ((1024 ** 3, "GB"), (1024 ** 2, "MB"), (1024, "KB"))


@dataclass(frozen=True)
class Row:
    name: str
    device_type: str  # "CPU" or "CUDA", as torch keys its rows
    calls: int
    first_ts: int  # ns; torch breaks sort ties by first appearance
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float
    # bytes allocated (less freed) during the calls, with and without their children: the [memory]
    # events of profile_memory=True traces, as torch's CPU Mem / CUDA Mem columns count them
    cpu_mem: int = 0
    self_cpu_mem: int = 0
    device_mem: int = 0
    self_device_mem: int = 0
    # grouped tables only: the calls' `Input Dims` as torch prints them, and their first Python frames
    input_shapes: str = ""
    stack: tuple[str, ...] = ()

    @property
    def cpu_avg_us(self) -> float:
        return self.cpu_total_us / self.calls if self.calls else 0.0

    @property
    def device_avg_us(self) -> float:
        return self.device_total_us / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Table:
    rows: list[Row]
    self_cpu_total_us: float
    self_device_total_us: float
    has_memory: bool = False  # the trace carries [memory] events: torch prints memory columns

    @property
    def has_device_memory(self) -> bool:
        return any(r.self_device_mem > 0 for r in self.rows)

    def sorted(self, sort_by: str = "cuda_time_total", row_limit: int | None = None) -> list[Row]:
        key = SORT_KEYS[sort_by]
        rows = sorted(self.rows, key=lambda r: r.first_ts)
        rows.sort(key=lambda r: getattr(r, key), reverse=True)
        return rows if row_limit is None or row_limit < 0 else rows[:row_limit]

    def row(self, name: str, device_type: str | None = None) -> Row | None:
        for r in self.rows:
            if r.name == name and (device_type is None or r.device_type == device_type):
                return r
        return None

    def to_dict(self, sort_by: str = "cuda_time_total", row_limit: int | None = None) -> dict:
        return {
            "self_cpu_total_us": self.self_cpu_total_us,
            "self_device_total_us": self.self_device_total_us,
            "sort_by": sort_by,
            "rows": [
                {**asdict(r), "cpu_avg_us": r.cpu_avg_us, "device_avg_us": r.device_avg_us}
                for r in self.sorted(sort_by, row_limit)
            ],
        }


# Rows summed per slice when totalling a column: bounds the copies (~24 bytes a row).
TOTAL_SLICE = 1 << 20


def build_table(facts: Facts, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> Table:
    """The table; grouped as `key_averages(group_by_input_shape=..., group_by_stack_n=...)` groups it:
    one row per name, input shapes and first N Python frames."""
    trace = facts.trace
    python = trace.category_mask({"python_function"})
    parent, self_cpu_time = _tree_without(facts, python)
    device = _self_device_times(facts)
    self_cpu_total = float(self_cpu_time[(facts.is_host | facts.is_overhead) & ~python].sum()) / 1000.0
    duplicate, dup, rep = _merge_only_children(facts, parent, python)

    row_kind = np.zeros(len(trace), dtype=np.int8)  # 0: not a row, 1: CPU row, 2: device row
    row_kind[(facts.is_host | facts.is_overhead) & ~python] = 1
    row_kind[duplicate] = 0
    row_kind[facts.is_device_work | facts.is_device_annotation] = 2

    keys = _Keys.of(facts, python, row_kind == 1, group_by_input_shape, group_by_stack_n)
    cpu = _HostTimes(facts, python, parent, self_cpu_time, device, dup, rep,
                     _memory_usage(facts, row_kind == 1, parent, dup, rep))
    rows = []
    for kind, device_type in ((1, "CPU"), (2, "CUDA")):
        sel = indices(row_kind == kind)
        if sel.size:
            rows.extend(_rows_of(facts, sel, kind, device_type, keys, cpu))
    rows.extend(_unclaimed_memory_rows(facts, row_kind == 1))

    self_device_total = float(trace.dur[facts.is_device_work].sum()) / 1000.0
    return Table(rows, self_cpu_total, self_device_total, has_memory=bool(memory_rows(facts)["idx"].size))


@dataclass(frozen=True)
class _Keys:
    """What rows are grouped by: the display name, and the input shapes and first Python frames where asked."""

    display: np.ndarray  # name id -> display name id
    display_names: list[str]
    shapes: tuple[np.ndarray, list[str]] | None  # per event a shape id, and the shapes' text
    frames: np.ndarray | None  # (stack_n, events) frame ids, -1 for none
    frame_names: list[str]
    stack_n: int

    @classmethod
    def of(cls, facts: Facts, python: np.ndarray, host_rows: np.ndarray, by_shape: bool, stack_n: int) -> _Keys:
        display, display_names = _display_names(facts.trace.names)
        shapes = _input_shapes(facts, host_rows) if by_shape else None
        frames, frame_names = _stacks(facts, python, stack_n) if stack_n > 0 else (None, [])
        return cls(display, display_names, shapes, frames, frame_names, stack_n)

    def group(self, facts: Facts, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows' unique keys and each selected event's row."""
        return _group(self.display[facts.trace.name[sel]], self.shapes[0][sel] if self.shapes is not None else None,
                      self.frames[:, sel].T if self.frames is not None else None)

    def shape_text(self, uniq: np.ndarray, size: int) -> list[str]:
        return [self.shapes[1][i] for i in uniq[:, 1]] if self.shapes is not None else [""] * size

    def stack(self, uniq: np.ndarray, size: int) -> list[tuple[str, ...]]:
        if self.frames is None:
            return [()] * size
        return [tuple(self.frame_names[f] for f in uniq[k, -self.stack_n:] if f >= 0) for k in range(size)]


@dataclass(frozen=True)
class _HostTimes:
    """What the host rows sum: self times, each host event's own device time (summed up the tree once the self
    device times are read), the same-name only children merged into their parents (`dup` into `rep`), and
    the memory columns."""

    facts: Facts
    python: np.ndarray
    parent: np.ndarray
    self_cpu_time: np.ndarray
    device: np.ndarray
    dup: np.ndarray
    rep: np.ndarray
    mem: list[np.ndarray]

    def columns(self, sel: np.ndarray, inverse: np.ndarray, size: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(self CPU, CPU total, self device, device total in µs; the four memory columns), per row."""
        trace, device = self.facts.trace, self.device
        # the dropped same-name children's self times go to the rows of the parents they went to
        moved = inverse[np.searchsorted(sel, self.rep)]
        self_cpu = _sums(self.self_cpu_time, sel, inverse, size)
        self_cpu += np.bincount(moved, weights=self.self_cpu_time[self.dup], minlength=size)
        self_device = _sums(device, sel, inverse, size)
        self_device += np.bincount(moved, weights=device[self.dup], minlength=size)
        # each event's device time now with its children's
        _add_up_the_tree(self.facts, self.python, self.parent, device)
        times = [self_cpu / 1000.0, _sums(trace.dur, sel, inverse, size) / 1000.0, self_device / 1000.0,
                 _sums(device, sel, inverse, size) / 1000.0]
        return times, [_sums(m, sel, inverse, size).astype(np.int64) for m in self.mem]


def _device_columns(facts: Facts, sel: np.ndarray, inverse: np.ndarray, size: int
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A device row's columns: no host time, no memory; its time is both self and total."""
    device_us = _sums(facts.trace.dur, sel, inverse, size) / 1000.0
    return [np.zeros(size), np.zeros(size), device_us, device_us], [np.zeros(size, dtype=np.int64)] * 4


def _rows_of(facts: Facts, sel: np.ndarray, kind: int, device_type: str, keys: _Keys, cpu: _HostTimes) -> list[Row]:
    """The rows of one kind (1: host, 2: device) from the events `sel`."""
    trace = facts.trace
    uniq, inverse = keys.group(facts, sel)
    name_of = uniq[:, 0] if uniq.ndim > 1 else uniq
    size = name_of.size
    times, memory = cpu.columns(sel, inverse, size) if kind == 1 else _device_columns(facts, sel, inverse, size)
    calls = np.bincount(inverse, minlength=size)
    first_ts = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_ts, inverse, trace.ts[sel])
    shape_text, stack = keys.shape_text(uniq, size), keys.stack(uniq, size)
    self_cpu, cpu_total, self_device, device_total = times
    cpu_mem, self_cpu_mem, device_mem, self_device_mem = memory
    return [Row(keys.display_names[name_of[k]], device_type, int(calls[k]), int(first_ts[k]),
                float(self_cpu[k]), float(cpu_total[k]), float(self_device[k]), float(device_total[k]),
                int(cpu_mem[k]), int(self_cpu_mem[k]), int(device_mem[k]), int(self_device_mem[k]),
                input_shapes=shape_text[k], stack=stack[k])
            for k in range(size)]


def _self_device_times(facts: Facts) -> np.ndarray:
    """Per host event, the device time of its own kernels (and what torch charges to a profiler
    overhead activity). One array, summed up the tree in place once the self times are read: two
    were 44 MiB of a 1 GB trace's table."""
    dur = facts.trace.dur
    device = np.zeros(len(dur), dtype=np.int64)
    owned = np.flatnonzero(facts.is_device_work & (facts.owner >= 0))
    np.add.at(device, facts.owner[owned], dur[owned])
    _add_overhead_device_time(facts, owned, device)
    return device


def _add_up_the_tree(facts: Facts, python: np.ndarray, parent: np.ndarray, device: np.ndarray) -> None:
    """Each host event's device time plus its descendants', in place, deepest first."""
    host = indices((facts.is_host | facts.is_overhead) & ~python)
    host = host[parent[host] >= 0]  # the events with a parent to add to
    # grouped by depth once: picking each level out of all events cost events x depth (quadratic
    # for a nest 100,000 deep)
    host = host[np.argsort(facts.depth[host], kind="stable")]
    host_depth = facts.depth[host]
    bounds = np.searchsorted(host_depth, np.arange(int(host_depth[-1]) + 2 if host.size else 0))
    for d in range(bounds.size - 2, 0, -1):
        level = host[bounds[d] : bounds[d + 1]]
        np.add.at(device, parent[level], device[level])


def _merge_only_children(facts: Facts, parent: np.ndarray, python: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torch drops a node that is its same-named parent's only child; the parent inherits its self
    times and kernels, so counts and totals are not doubled. (dropped mask, the dropped, the parent
    each goes to): their self times are added where the rows are summed (copies of every event's
    were 22 MiB each of a 1 GB trace's table)."""
    duplicate = _same_name_only_children(facts, parent, python)
    if not duplicate.any():
        return duplicate, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    dup = np.flatnonzero(duplicate)
    rep = parent[dup]
    # each dropped node's nearest kept ancestor, by pointer doubling over the dropped ones (`ahead`:
    # where rep sits among them, -1 once kept): climbing one level per pass was quadratic for a
    # deep chain of same-named only children
    at = np.minimum(np.searchsorted(dup, rep), dup.size - 1)
    ahead = np.where(dup[at] == rep, at, -1)
    active = indices(ahead >= 0)
    while active.size:
        via = ahead[active]
        rep[active] = rep[via]  # gathered before written: one synchronous pass
        ahead[active] = ahead[via]
        active = active[ahead[active] >= 0]
    return duplicate, dup, rep


def _group(names: np.ndarray, shapes: np.ndarray | None, frames: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Rows' groups: (unique keys, each row's group). By name alone through a lookup table; with
    shapes or frames, by the key's columns."""
    if shapes is None and frames is None:
        return _groups(names)
    columns = [names] + ([shapes] if shapes is not None else []) + ([frames] if frames is not None else [])
    uniq, inverse = np.unique(np.column_stack(columns), return_inverse=True, axis=0)
    return uniq, inverse.reshape(-1)


def _sums(values: np.ndarray, sel: np.ndarray, inverse: np.ndarray, size: int) -> np.ndarray:
    """values[sel] summed per group (`inverse`), a slice of the rows at a time, so their copies stay
    bounded. ns and bytes are integers in float64, so the sums are exact in any order."""
    if values.strides == (0,) and values.size:  # one value broadcast (no memory events: zeros)
        return float(values[0]) * np.bincount(inverse, minlength=size)
    out = np.zeros(size)
    for lo in range(0, sel.size, TOTAL_SLICE):
        out += np.bincount(inverse[lo:lo + TOTAL_SLICE], weights=values[sel[lo:lo + TOTAL_SLICE]], minlength=size)
    return out


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) for name ids (small, non-negative) through a lookup
    table, not a sort of every row: the sort's copies were ~60 MiB of a 1 GB trace's table."""
    present = np.zeros(int(keys.max(initial=-1)) + 1, dtype=bool)
    present[keys] = True
    lookup = np.cumsum(present, dtype=np.int32) - 1
    return np.flatnonzero(present), lookup[keys]


def _memory_usage(facts: Facts, is_row: np.ndarray, parent: np.ndarray, dup: np.ndarray,
                  rep: np.ndarray) -> list[np.ndarray]:
    """Per event: CPU and device bytes of the [memory] events inside its span, with and without
    its children's. Torch's rule: an op's usage is every memory record whose time falls in
    [start, end], ends included, from any thread; self is that less its children's."""
    rows = memory_rows(facts)
    n = len(facts.trace)
    if not rows["idx"].size:  # no profile_memory: four columns of zeros that take no memory
        return [np.broadcast_to(np.int64(0), (n,))] * 4
    out = []
    for types in (CPU_MEMORY_TYPES, DEVICE_MEMORY_TYPES):
        inclusive = np.zeros(n, dtype=np.int64)
        pick = np.isin(rows["device_type"], types)
        ts, nbytes = rows["ts_ns"][pick], rows["bytes"][pick]
        ops = np.flatnonzero(is_row)
        if ts.size and ops.size:
            order = np.argsort(ts, kind="stable")
            ts, cum = ts[order], np.concatenate(([0], np.cumsum(nbytes[order])))
            start = facts.trace.ts[ops]
            lo = np.searchsorted(ts, start, side="left")
            hi = np.searchsorted(ts, start + facts.trace.dur[ops], side="right")
            inclusive[ops] = cum[hi] - cum[lo]
        own = inclusive.copy()
        child = np.flatnonzero(is_row & (parent >= 0))
        np.subtract.at(own, parent[child], inclusive[child])
        np.add.at(own, rep, own[dup])  # a dropped same-name child's usage stays with its parent
        out += [inclusive, own]
    return out


def _input_shapes(facts: Facts, is_row: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per event, an id of its `Input Dims` as torch prints them (`str()` of the list: "[[64, 256],
    [256, 128]]"; "[]" without shapes), and the texts. Torch's shapes give a TensorList input no
    shape: `_foreach_add_`'s [[[2, 3], [4]], [[2, 3], [4]], []] is [[], [], []]."""
    texts: dict[str, int] = {"[]": 0}
    ids = np.zeros(len(facts.trace), dtype=np.int64)
    ops = np.flatnonzero(is_row)
    for i, args in zip(ops.tolist(), op_args(facts, ops.tolist()), strict=True):
        if args is not None and isinstance(args.dims, list):
            ids[i] = texts.setdefault(str([_tensor_shape(d) for d in args.dims]), len(texts))
    return ids, list(texts)


def _tensor_shape(dims: Any) -> Any:
    """An input's shape as torch keeps it: [] for a TensorList's (a list of lists) or a non-list."""
    return [] if not isinstance(dims, list) or any(isinstance(x, list) for x in dims) else dims


# Frames torch leaves out of an op's stack (torch.autograd.profiler_util._filter_stack_entry).
_HIDDEN_FRAMES = (("autograd/__init__", "_make_grads"), ("autograd/__init__", "backward"),
                  ("torch/tensor", "backward"), ("_internal/common_utils", "prof_callable"),
                  ("_internal/common_utils", "prof_func_call"), ("_internal/common_utils", "prof_meth_call"))


class _CallStack(msgspec.Struct, gc=False):
    text: Any = msgspec.field(name="Call stack", default=None)


def _hidden(frame: str) -> bool:
    return any(a in frame and b in frame for a, b in _HIDDEN_FRAMES)


def _stacks(facts: Facts, python: np.ndarray, n: int) -> tuple[np.ndarray, list[str]]:
    """(n, events) ids of each event's n innermost Python frames (-1 past the outermost), and the
    frame texts. Torch's stack of an event is its `Call stack` arg (written with verbose=True;
    without it torch's group_by_stack_n groups nothing, so pista falls back to the enclosing
    python_function events); a runtime call has its op's, a kernel its launch's, a GPU-side
    annotation that of the first kernel inside it on its stream."""
    texts: dict[str, int] = {}
    out = np.full((n, len(facts.trace)), -1, dtype=np.int64)
    has = _call_stacks(facts, n, texts, out)
    if not has.any():
        out = _python_stacks(facts, python, n)
        _backward_stacks(facts, out)
        return out, facts.trace.names
    # an event without its own stack takes its nearest host ancestor's: that of the nearest one that
    # has a stack, is no host event, or is a root (a pass per depth over all of them was quadratic)
    inherits = (facts.is_host | facts.is_overhead) & ~has & (facts.parent >= 0)
    host = np.flatnonzero(inherits)
    out[:, host] = out[:, nearest_ancestor(facts, ~inherits, inclusive=False)[host]]
    work = np.flatnonzero(facts.is_device_work & (facts.launcher >= 0))
    out[:, work] = out[:, facts.launcher[work]]
    _annotation_stacks(facts, out)
    _backward_stacks(facts, out)
    return out, list(texts)


def _call_stacks(facts: Facts, n: int, texts: dict[str, int], out: np.ndarray) -> np.ndarray:
    host = np.flatnonzero(facts.is_host | facts.is_overhead)
    has = np.zeros(len(facts.trace), dtype=bool)
    for i, args in zip(host.tolist(), facts.trace.decode_args(host.tolist(), _CallStack), strict=True):
        if args is None or not isinstance(args.text, str):
            continue
        for k, frame in enumerate(_shown_frames(args.text)[:n]):
            out[k, i] = texts.setdefault(frame, len(texts))
        has[i] = True
    return has


def _shown_frames(stack: str) -> list[str]:
    """The frames of a `Call stack` arg, innermost first, less those torch leaves out."""
    return [f for f in stack.split(";") if f and not _hidden(f)]


EVALUATE = "autograd::engine::evaluate_function: "


def _backward_stacks(facts: Facts, out: np.ndarray) -> None:
    """Torch's _set_backward_stacktraces: an autograd node's call (`AddmmBackward0`, run inside
    `autograd::engine::evaluate_function: AddmmBackward0`) and every host event under it take the
    stack of the first forward event with the node's sequence number: the line that built it."""
    trace, parent = facts.trace, facts.parent
    names = trace.names
    node_name = {k: names.index(EVALUATE + name) for k, name in enumerate(names) if EVALUATE + name in names}
    if not node_name:
        return
    host = np.flatnonzero(facts.is_host | facts.is_overhead)
    evaluate = np.full(len(names), -1, dtype=np.int64)
    for k, v in node_name.items():
        evaluate[k] = v
    up = parent[host]
    is_node = np.zeros(len(trace), dtype=bool)
    is_node[host] = (up >= 0) & (evaluate[trace.name[host]] == trace.name[np.maximum(up, 0)])
    # each host event's nearest node at or above it, a tree level at a time (climbing each event
    # on its own cost the sum of all depths)
    node = nearest_ancestor(facts, is_node, inclusive=True)
    # int64 (SEQ_NONE, SEQ_ODD below 0 where absent or no int64): the numbers are input, and one past
    # 2^63 put in this column was OverflowError
    seq = np.full(len(trace), -1, dtype=np.int64)
    seq[host] = sequence_numbers(facts, host.tolist())
    forward = host[(node[host] < 0) & (seq[host] >= 0)]
    forward = forward[np.lexsort((-(trace.ts[forward] + trace.dur[forward]), trace.ts[forward]))]
    first: dict[int, int] = {}
    for i in forward.tolist():
        first.setdefault(int(seq[i]), i)
    backward = host[node[host] >= 0]
    source = np.array([first.get(int(seq[node[i]]), -1) for i in backward.tolist()], dtype=np.int64)
    out[:, backward] = np.where(source >= 0, out[:, np.maximum(source, 0)], -1)


def _annotation_stacks(facts: Facts, out: np.ndarray) -> None:
    trace = facts.trace
    work = np.flatnonzero(facts.is_device_work)
    for i in np.flatnonzero(facts.is_device_annotation).tolist():
        lane = work[(trace.pid[work] == trace.pid[i]) & (trace.tid[work] == trace.tid[i])
                    & (trace.ts[work] >= trace.ts[i]) & (trace.ts[work] < trace.ts[i] + trace.dur[i])]
        if lane.size:
            out[:, i] = out[:, lane[np.argmin(trace.ts[lane])]]


def _python_stacks(facts: Facts, python: np.ndarray, n: int) -> np.ndarray:
    """The enclosing python_function frames' name ids, innermost first."""
    names = facts.trace.names
    hidden = np.array([_hidden(name) for name in names], dtype=bool)
    frame = python & ~hidden[facts.trace.name] if len(names) else python
    # nearest enclosing frame of each event, a tree level at a time (hopping every event up one
    # level per pass cost events x depth: minutes for a nest 100,000 deep)
    above = nearest_ancestor(facts, frame, inclusive=False)
    out = np.full((n, len(facts.trace)), -1, dtype=np.int64)
    at = above
    for k in range(n):
        has = at >= 0
        out[k, has] = facts.trace.name[at[has]]
        at = np.where(has, above[np.maximum(at, 0)], -1)
    return out


def _unclaimed_memory_rows(facts: Facts, is_row: np.ndarray) -> list[Row]:
    """Torch lists the memory events that fall in no op's span as rows named [memory]."""
    rows = memory_rows(facts)
    if rows["idx"].size == 0:
        return []
    trace = facts.trace
    ops = np.flatnonzero(is_row)
    start = np.sort(trace.ts[ops])
    # an event is claimed when some op starts at or before it and ends at or after it
    end_before = np.maximum.accumulate((trace.ts[ops] + trace.dur[ops])[np.argsort(trace.ts[ops], kind="stable")])
    k = np.searchsorted(start, rows["ts_ns"], side="right") - 1
    claimed = (k >= 0) & (end_before[np.maximum(k, 0)] >= rows["ts_ns"]) if ops.size else np.zeros(k.size, bool)
    free = ~claimed
    if not free.any():
        return []
    cpu = np.isin(rows["device_type"], CPU_MEMORY_TYPES) & free
    dev = np.isin(rows["device_type"], DEVICE_MEMORY_TYPES) & free
    cpu_bytes, dev_bytes = int(rows["bytes"][cpu].sum()), int(rows["bytes"][dev].sum())
    return [Row(MEMORY_EVENT, "CPU", int(free.sum()), int(rows["ts_ns"][free].min()), 0.0, 0.0, 0.0, 0.0,
                cpu_bytes, cpu_bytes, dev_bytes, dev_bytes)]


def _add_overhead_device_time(facts: Facts, owned: np.ndarray, self_device: np.ndarray) -> None:
    """Add to self_device the device time torch charges to each profiler-overhead activity (CUPTI
    buffer requests, lazy loading): that of the kernels carrying the External id of the op it
    interrupted.

    Torch keys an activity's kernels by correlation id, and an overhead activity takes the id of
    the host op running around it; so its kernels are counted twice, on the op and on the
    overhead row, and up the tree from both. The Self CUDA total counts device events only.
    """
    trace = facts.trace
    overhead = np.flatnonzero(facts.is_overhead & (facts.parent >= 0))
    if overhead.size == 0 or owned.size == 0:
        return
    # the nearest enclosing host event that carries an External id
    anchor = facts.parent[overhead]
    while True:
        missing = (anchor >= 0) & (trace.external_id[np.maximum(anchor, 0)] == NO_ID)
        if not missing.any():
            break
        anchor = np.where(missing, facts.parent[np.maximum(anchor, 0)], anchor)
    has_anchor = anchor >= 0
    overhead, anchor = overhead[has_anchor], anchor[has_anchor]
    ids, per_id = np.unique(trace.external_id[owned], return_inverse=True)
    time_per_id = np.bincount(per_id, weights=trace.dur[owned], minlength=ids.size).astype(np.int64)
    wanted = trace.external_id[anchor]
    at = np.clip(np.searchsorted(ids, wanted), 0, ids.size - 1)
    found = ids[at] == wanted
    self_device[overhead[found]] += time_per_id[at[found]]  # each overhead event once


def _tree_without(facts: Facts, python: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The op tree as torch's table builds it from a with_stack=True profile: python_function frames
    are not nodes, so an op's parent is its nearest other ancestor and a region's self time is its
    duration less its nearest other descendants' (gpu/host_sync_item_stack: 4.152 ms as torch prints,
    not the 4.878 ms the frames' own self times add). Without frames: facts' own tree."""
    if not python.any():
        return facts.parent, facts.self_time  # read-only: build_table copies it to change it
    parent = facts.parent.copy()
    hop = (parent >= 0) & python[np.maximum(parent, 0)]
    while hop.any():
        parent[hop] = facts.parent[parent[hop]]
        hop = (parent >= 0) & python[np.maximum(parent, 0)]
    dur = facts.trace.dur
    nodes = np.flatnonzero((facts.is_host | facts.is_overhead) & ~python)
    self_time = np.zeros(len(dur), dtype=np.int64)
    self_time[nodes] = np.where(facts.is_host[nodes], dur[nodes], facts.self_time[nodes])
    child = nodes[parent[nodes] >= 0]
    np.subtract.at(self_time, parent[child], dur[child])
    return parent, self_time


def _same_name_only_children(facts: Facts, parent: np.ndarray, python: np.ndarray) -> np.ndarray:
    tree = np.flatnonzero((facts.is_host | facts.is_overhead) & ~python & (parent >= 0))
    out = np.zeros(len(facts.trace), dtype=bool)
    if tree.size == 0:
        return out
    parents = parent[tree]
    # parents with more than one child, from one sort of the parents: no count per event, none of
    # np.unique's copies
    ordered = np.sort(parents)
    many = np.zeros(len(facts.trace), dtype=bool)
    many[ordered[1:][ordered[1:] == ordered[:-1]]] = True
    del ordered
    only_child = ~many[parents]
    name = facts.trace.name
    out[tree[(name[parents] == name[tree]) & only_child]] = True
    return out


def _display_names(trace_names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Map each interned name id to the id of the name its row is shown under."""
    names = list(trace_names)
    folded = np.arange(len(names), dtype=np.int32)
    step_rows = [i for i, name in enumerate(names) if STEP_NAME.match(name)]
    if step_rows:
        if "ProfilerStep*" not in names:
            names.append("ProfilerStep*")
            folded = np.append(folded, len(names) - 1)
        folded[step_rows] = names.index("ProfilerStep*")  # the names are interned: each once
    return folded, names


# -- the text table, in torch's layout ------------------------------------------------------


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    for unit, name in _MEMORY_UNITS:
        if abs(nbytes) >= unit:
            return f"{nbytes / unit:.2f} {name}"
    return f"{nbytes} B"


def format_percent(part: float, whole: float) -> str:
    return f"{(part / whole * 100.0) if whole else 0.0:.2f}%"


def _fit(name: str, width: int = NAME_WIDTH) -> str:
    # torch cuts at width - 3 characters, and already at that length
    return name if len(name) < width - 3 else name[: width - 3] + "..."


HEADERS = ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA",
           "Self CUDA %", "CUDA total", "CUDA time avg", "# of Calls")


MEMORY_HEADERS = ("CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem")
# torch's caps on the grouped tables' extra columns (profiler_util._build_table)
SHAPES_WIDTH, SOURCE_WIDTH = 80, 75


def render_text(table: Table, sort_by: str = "cuda_time_total", row_limit: int | None = 25,
                has_device: bool = True) -> str:
    layout = _Layout.of(table, has_device)
    rule = "".join("-" * w + "  " for w in layout.widths)
    out = [rule, layout.line(list(layout.headers)), rule]
    for r in table.sorted(sort_by, row_limit):
        out += layout.row_lines(r, table.self_cpu_total_us, table.self_device_total_us)
    out.append(rule)
    out.append(f"Self CPU time total: {format_time(table.self_cpu_total_us)}")
    if has_device:
        out.append(f"Self CUDA time total: {format_time(table.self_device_total_us)}")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class _Layout:
    """The text table's columns, as torch lays them out: headers, widths, alignment (">" right, "<" left)."""

    headers: tuple[str, ...]
    widths: list[int]
    align: list[str]
    has_device: bool
    memory: int  # memory columns shown (0, 2 or 4)
    shapes: bool
    stack: bool

    @classmethod
    def of(cls, table: Table, has_device: bool) -> _Layout:
        memory = _memory_headers(table, has_device)
        headers = (HEADERS[:10] if has_device else HEADERS[:6]) + memory + HEADERS[10:]
        # torch's name column fits the longest name of all rows plus 4, up to NAME_WIDTH
        # names are shown with control characters written out, so the columns stay in line
        name_width = min(max((len(sanitize_line(r.name)) for r in table.rows), default=0) + 4, NAME_WIDTH)
        widths = [name_width] + [12] * (len(headers) - 1)
        align = [">"] * len(widths)
        extra = _extra_columns(table)
        headers += tuple(h for h, _, _ in extra)
        widths += [w for _, w, _ in extra]
        align += [a for _, _, a in extra]
        shapes, stack = "Input Shapes" in headers, "Source Location" in headers
        return cls(headers, widths, align, has_device, len(memory), shapes, stack)

    def line(self, cells: list[str]) -> str:
        # every column is followed by two spaces, the last too, as torch prints it
        return "".join((c.rjust(w) if a == ">" else c.ljust(w)) + "  "
                       for c, w, a in zip(cells, self.widths, self.align, strict=True))

    def row_lines(self, r: Row, cpu_all: float, dev_all: float) -> list[str]:
        """A row's line; with stacks, its other frames on lines of their own, then an empty line."""
        out = [self.line(self.cells(r, cpu_all, dev_all))]
        if self.stack:
            blank = [""] * len(self.widths)
            out += [self.line(blank[:-1] + [_trim_path(sanitize_line(f), self.widths[-1])]) for f in r.stack[1:]]
            out.append(self.line(blank))
        return out

    def cells(self, r: Row, cpu_all: float, dev_all: float) -> list[str]:
        cells = [_fit(sanitize_line(r.name)), format_percent(r.self_cpu_us, cpu_all), format_time(r.self_cpu_us),
                 format_percent(r.cpu_total_us, cpu_all), format_time(r.cpu_total_us), format_time(r.cpu_avg_us)]
        if self.has_device:
            cells += [format_time(r.self_device_us), format_percent(r.self_device_us, dev_all),
                      format_time(r.device_total_us), format_time(r.device_avg_us)]
        cells += [format_memory(b) for b in (r.cpu_mem, r.self_cpu_mem, r.device_mem, r.self_device_mem)][:self.memory]
        cells.append(str(r.calls))
        if self.shapes:
            cells.append(sanitize_line(r.input_shapes or "[]")[:self.widths[len(cells)]])
        if self.stack:
            cells.append(_trim_path(sanitize_line(r.stack[0]), self.widths[-1]) if r.stack else "")
        return cells


def _extra_columns(table: Table) -> list[tuple[str, int, str]]:
    """The grouped tables' columns (header, width, alignment): the calls' input shapes, their Python frames."""
    out = []
    if any(r.input_shapes not in ("", "[]") for r in table.rows):
        out.append(("Input Shapes", _shapes_width(table.rows), ">"))
    if any(r.stack for r in table.rows):
        out.append(("Source Location", _source_width(table.rows), "<"))
    return out


def _shapes_width(rows: list[Row]) -> int:
    """The Input Shapes column's width: the longest shapes plus 4, capped as torch caps it."""
    return min(max(len(r.input_shapes or "[]") for r in rows) + 4, SHAPES_WIDTH)


def _source_width(rows: list[Row]) -> int:
    """The Source Location column's width: the longest frame plus 4, capped as torch caps it."""
    return min(max(len(sanitize_line(f)) for r in rows for f in r.stack) + 4, SOURCE_WIDTH)


def _memory_headers(table: Table, has_device: bool) -> tuple[str, ...]:
    """torch adds CUDA Mem columns only when some row allocated device memory of its own."""
    if not table.has_memory:
        return ()
    return MEMORY_HEADERS if has_device and table.has_device_memory else MEMORY_HEADERS[:2]


def _trim_path(path: str, width: int) -> str:
    """torch's trim_path: a frame too long for the column keeps its end, behind '...'."""
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path
