"""The columnar trace model: one numpy column per field, names and categories interned.

Times are int64 nanoseconds (chrome-trace `ts`/`dur` are float microseconds), so sums and
comparisons are exact. Missing integer fields are -1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any, Protocol, TypeVar

import msgspec
import numpy as np

NO_ID = -1
S = TypeVar("S", bound=msgspec.Struct)  # decode_args' structs
# Events by index: Python ints (`array.tolist()`) or an integer array
Indices = Sequence[int] | np.ndarray
# Events whose args one decode_args call reads in args_chunks: each decoded field points into its
# event's bytes, so a call keeps every one of its events' text alive until its answers go (~200
# bytes an event on big_gpt_eager_20steps: the ops of a 1 GB copy held ~250 MiB in one call).
DECODE_CHUNK = 1 << 12


@cache
def _decoder(struct: type) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(struct | None)

# Kineto category names, normalised: older traces spell some of them differently.
CATEGORY_ALIASES = {
    "Operator": "cpu_op",
    "operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "runtime": "cuda_runtime",
    "Driver": "cuda_driver",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "gpu_memcpy": "gpu_memcpy",
    "gpu_memset": "gpu_memset",
    "Python": "python_function",
    "python_function": "python_function",
    "User annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
}

# Work that runs on the host thread and nests into the op tree.
HOST_CATEGORIES = frozenset(
    {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function", "cpu_instant_event"}
)
# Work that runs on a device stream and counts towards "Self CUDA time total".
DEVICE_WORK_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
# record_function regions mirrored onto the GPU timeline: shown, never summed into the total.
DEVICE_ANNOTATION_CATEGORIES = frozenset({"gpu_user_annotation"})
DEVICE_CATEGORIES = DEVICE_WORK_CATEGORIES | DEVICE_ANNOTATION_CATEGORIES
# The profiler's own work (CUPTI buffers, lazy module loading), drawn on the pid -1 lane.
OVERHEAD_CATEGORIES = frozenset({"overhead"})

PH_COMPLETE = ord("X")
PH_INSTANT = ord("i")
PH_FLOW_START = ord("s")
PH_FLOW_END = ord("f")
PH_METADATA = ord("M")
PH_COUNTER = ord("C")

# The per-event columns, in the order the loaders build them.
COLUMNS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "external_id", "correlation", "stream", "device",
           "flow_id")
# args ids a flow event never carries in Kineto's traces: kept for the flows only where one does.
_ARG_IDS = ("external_id", "correlation", "stream", "device")


# Id columns kept as int32 when every value fits (pids, tids, stream and device numbers, and the ids
# Kineto counts up from 1 do, on every fixture): 28 of the 79 bytes a row took as int64.
NARROW_COLUMNS = ("pid", "tid", "external_id", "correlation", "stream", "device", "flow_id")
_INT32 = np.iinfo(np.int32)
# Trace.category_mask compares the ids one by one for up to this many categories, else gathers from a
# table (measured on the 1 GB copy of big_gpt_eager_20steps: 4 comparisons take about a third of a gather).
FEW_CATEGORIES = 4


def narrow_dtype(column: np.ndarray) -> np.dtype:
    """int32 when the int64 column's values fit, else the column's own dtype."""
    if column.dtype != np.int64 or (column.size and (column.min() < _INT32.min or column.max() > _INT32.max)):
        return column.dtype
    return np.dtype(np.int32)


def narrow(column: np.ndarray) -> np.ndarray:
    """The int64 column as int32 when its values fit (the same numbers, half the memory)."""
    dtype = narrow_dtype(column)
    return column if dtype == column.dtype else column.astype(dtype)


def _flow_rows_of(name: str, column: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The column's values at the flow events' `rows`, in as little memory as they allow."""
    taken = column.take(rows)
    # Kineto's flow events carry no args and no dur: those columns take no memory there
    taken = _unless(NO_ID, taken) if name in _ARG_IDS else _unless(0, taken) if name == "dur" else taken
    # narrowed as the streamed reader narrows it, also where a flow event does carry an id
    return narrow(taken) if name in NARROW_COLUMNS else taken


def split_flows(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Take the flow events (ph s and f) out of `columns`, in place, one column at a time, and return
    them: the same columns for those rows, and "row", their rows among all. No rule reads them (29%
    of big_gpt_eager_20steps' rows; only `pista sql` shows them), so the analysis never holds them."""
    ph = columns["ph"]
    is_flow = (ph == PH_FLOW_START) | (ph == PH_FLOW_END)
    flows = {}
    if is_flow.any():
        # the rows as indices, taken once: a boolean mask is scanned again by each column's indexing
        # (twice as slow over the 1 GB trace's 12 columns of 4 M rows)
        flows["row"] = narrow(np.flatnonzero(is_flow))
        keep = narrow(np.flatnonzero(~is_flow))
        del is_flow
        for name in COLUMNS:
            column = columns.pop(name)
            if column.strides == (0,):  # one value throughout (a column the read left out): views of it
                flows[name] = np.broadcast_to(column[:1], flows["row"].shape)
                columns[name] = np.broadcast_to(column[:1], (column.size - flows["row"].size,))
                continue
            flows[name] = _flow_rows_of(name, column, flows["row"])
            columns[name] = column.take(keep)
            del column
    # only flow events carry a flow id: with them out, the column is -1 throughout
    columns["flow_id"] = _unless(NO_ID, columns["flow_id"])
    return flows


def _unless(value: int, column: np.ndarray) -> np.ndarray:
    """The column, or a read-only view of `value` taking no memory when it holds nothing else."""
    if (column != value).any():
        return column
    return no_ids(column.size) if value == NO_ID else np.broadcast_to(np.asarray(value, column.dtype), column.shape)


def no_ids(n: int) -> np.ndarray:
    """A read-only column of n NO_IDs taking no memory: int32, the width narrow() gives it, so that
    narrowing the view leaves it one."""
    return np.broadcast_to(np.asarray(NO_ID, dtype=np.int32), (n,))


def lane_key(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per event, equal for the events of one (pid, tid) lane: the pid in the high half, the
    tid's low 32 bits in the low one; int64 whatever the columns' width, so nothing wraps in int32."""
    return pid.astype(np.int64) * (1 << 32) + (tid.astype(np.int64) & 0xFFFFFFFF)


class RawArgs(Protocol):
    """Trace.raw_args: by file row, the event's `args` as raw JSON (msgspec.Raw) or None; a list, or for
    big files a sequence reading them back from the file (pista.trace.stream.OffsetArgs)."""

    def __getitem__(self, i: int, /) -> Any: ...

    def __len__(self) -> int: ...


@dataclass(eq=False)
class Trace:
    """A loaded trace. The columns' rows are the file's events in file order, less the flow events
    (ph s/f), kept apart in `flows`; `file_rows` gives a row's place in the file."""

    source: str
    names: list[str]
    categories: list[str]
    ph: np.ndarray  # uint8: ord of the phase letter
    cat: np.ndarray  # int16 into `categories`
    name: np.ndarray  # int32 into `names`
    pid: np.ndarray  # int32 or int64 (NARROW_COLUMNS); string pids get ids from `string_pids`
    tid: np.ndarray  # likewise; string tids likewise
    ts: np.ndarray  # int64 ns
    dur: np.ndarray  # int64 ns (0 where absent)
    external_id: np.ndarray  # args["External id"], int32 or int64 like every NARROW_COLUMNS one
    correlation: np.ndarray  # args["correlation"] (None once drop_link_ids let it go)
    stream: np.ndarray  # args["stream"] (None once drop_events_view_columns let it go)
    device: np.ndarray  # args["device"] (likewise)
    flow_id: np.ndarray  # `id` of flow events
    raw_args: RawArgs  # msgspec.Raw or None, decoded on demand by `args(i)`; for big files a
    # sequence reading them back from the file (pista.trace.stream.OffsetArgs)
    metadata: dict[str, Any] = field(default_factory=dict)
    process_names: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    string_ids: dict[str, int] = field(default_factory=dict)  # "Spans" -> -1000, ...
    notices: list[str] = field(default_factory=list)
    size_bytes: int = 0
    # the flow events, out of the columns (split_flows): column -> array, and "row", their rows in
    # the file (drop_events_view_columns keeps only "before": per flow event, the columns' rows before it).
    # Row i of the columns is the file's row `file_rows(i)`; `raw_args` goes by file row.
    # None until split: the loaders split while they hold the columns, a Trace built by hand here.
    flows: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.flows is None:
            columns = {name: getattr(self, name) for name in COLUMNS}
            self.flows = split_flows(columns)
            for name, column in columns.items():
                setattr(self, name, column)
        for column in NARROW_COLUMNS:
            setattr(self, column, narrow(getattr(self, column)))

    def __len__(self) -> int:
        return int(self.ts.shape[0])

    @property
    def event_count(self) -> int:
        """Events in the file's list, the flow events included."""
        return len(self) + self.flow_count

    @property
    def flow_count(self) -> int:
        return int(self._flows_before.size) if self.flows else 0

    @cached_property
    def _flows_before(self) -> np.ndarray:
        """For each flow event, how many of the columns' rows come before it in the file."""
        flows = self.flows
        assert flows is not None  # split by __post_init__
        if "before" in flows:  # all drop_events_view_columns keeps
            return flows["before"]
        rows = flows["row"]
        return rows - np.arange(rows.size, dtype=rows.dtype)  # int32 where the rows are

    def drop_events_view_columns(self) -> None:
        """Let go of what only `pista sql`'s events view shows: the flow events' columns (keeping their
        places in the file, the file's numbering and the event count, and the span they reach) and
        the args stream and device ids, which no rule reads (a kernel's device and stream are its lane,
        pid and tid): 30 and 22 MiB of a 1 GB copy of big_gpt_eager_20steps. Those columns are None
        after, so a reader that asks for one anyway fails loudly."""
        if self.flows and "before" not in self.flows:
            _ = self.start_ns, self.end_ns  # the flows count towards the span: measured while they are here
            before = self._flows_before  # file_rows' form of their places, the one array kept
            self.flows = {"before": before}
        self.stream = self.device = None  # type: ignore[assignment]

    def drop_link_ids(self) -> None:
        """Let go of the correlation ids once derive has linked every kernel to its launch
        (facts.launcher): only `pista sql`'s views show them after that (11 MiB of a 1 GB copy of
        big_gpt_eager_20steps). None after, like the columns drop_events_view_columns lets go."""
        self.correlation = None  # type: ignore[assignment]

    def file_rows(self, indices: Any = None) -> np.ndarray:
        """The file rows (int64) of the columns' rows `indices` (every row when None)."""
        idx = np.arange(len(self), dtype=np.int64) if indices is None else np.asarray(indices, dtype=np.int64)
        if not self.flows:
            return idx
        rows: np.ndarray = idx + np.searchsorted(self._flows_before, idx, side="right")
        return rows

    def raw(self, i: int) -> Any:
        """Row i's `args` as raw JSON (msgspec.Raw), or None."""
        return self.raw_args[int(self.file_rows([i])[0]) if self.flows else i]

    # -- lookups ---------------------------------------------------------------------------
    def category_id(self, category: str) -> int:
        try:
            return self.categories.index(category)
        except ValueError:
            return -1

    def category_mask(self, categories: frozenset[str] | set[str] | tuple[str, ...], idx: Any = None) -> np.ndarray:
        """Per event (per event of idx, when given): is its category one of these? A lookup per
        event in a table of the categories (np.isin's took twice the answer's size besides it)."""
        wanted = [i for i, c in enumerate(self.categories) if c in categories]
        cat = self.cat if idx is None else self.cat[idx]
        if len(wanted) <= FEW_CATEGORIES:
            # a comparison per category: ~0.3 ms each over the 1 GB trace's 2.9 M rows, the table's
            # gather ~8 ms (it widens the int16 ids to intp first)
            mask = np.zeros(cat.shape, dtype=bool)
            for i in wanted:
                mask |= cat == i
            return mask
        table = np.zeros(len(self.categories), dtype=bool)
        table[wanted] = True
        gathered: np.ndarray = table[cat]
        return gathered

    @cached_property
    def name_array(self) -> np.ndarray:
        """Interned names as an object array, so `name_array[self.name[mask]]` is vectorised."""
        return np.asarray(self.names, dtype=object)

    def event_name(self, i: int) -> str:
        return self.names[int(self.name[i])]

    def event_category(self, i: int) -> str:
        return self.categories[int(self.cat[i])]

    def args(self, i: int) -> dict[str, Any]:
        """The event's full `args` object, decoded now (most analysis never needs it)."""
        raw = self.raw(i)
        if raw is None:
            return {}
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    def decode_args(self, indices: Indices, struct: type[S]) -> list[S | None]:
        """Events' args decoded straight into `struct` (a msgspec Struct naming only the fields wanted):
        the fast way to read a field or two of thousands of events. None where absent or mistyped."""
        if self.flows:
            indices = self.file_rows(indices).tolist()
        bulk: Callable[[Indices, type[S]], list[S | None]] | None = getattr(self.raw_args, "decode_args", None)
        if bulk is not None:  # a streamed trace reads its args back from the file in big windows
            return bulk(indices, struct)
        decode = _decoder(struct).decode
        out: list[S | None] = []
        for i in indices:
            raw = self.raw_args[i]
            try:
                out.append(None if raw is None else decode(raw))
            except (msgspec.DecodeError, msgspec.ValidationError):
                out.append(None)
        return out

    def args_chunks(self, indices: Indices, struct: type[S]) -> Iterator[tuple[Indices, list[S | None]]]:
        """decode_args, DECODE_CHUNK events at a time: (those events, their args), in order."""
        for lo in range(0, len(indices), DECODE_CHUNK):
            chunk = indices[lo:lo + DECODE_CHUNK]
            yield chunk, self.decode_args(chunk, struct)

    def lane_keys(self, idx: Any) -> np.ndarray:
        """lane_key of the events idx."""
        return lane_key(self.pid[idx], self.tid[idx])

    def lane_label(self, pid: int, tid: int) -> str:
        """A readable lane name: 'thread 457 (python3)', 'GPU 0 stream 7', 'profiler overhead'."""
        if pid == -1:
            return "profiler overhead"
        if pid in self.device_pids:
            return f"GPU {pid} stream {tid}"
        if (pid, tid) in self.thread_names:
            return self.thread_names[(pid, tid)].strip()
        return f"pid {pid} thread {tid}"

    @cached_property
    def device_pids(self) -> frozenset[int]:
        mask = self.category_mask(DEVICE_CATEGORIES)
        return frozenset(int(p) for p in np.unique(self.pid[mask]))

    @property
    def device_properties(self) -> list[dict[str, Any]]:
        props = self.metadata.get("deviceProperties")
        return [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []

    @property
    def distributed_info(self) -> dict[str, Any]:
        info = self.metadata.get("distributedInfo")
        return info if isinstance(info, dict) else {}

    @property
    def base_time_ns(self) -> int | None:
        value = self.metadata.get("baseTimeNanoseconds")
        return value if isinstance(value, int) else None

    @cached_property
    def start_ns(self) -> int:
        mask = self.ph != PH_METADATA
        starts = [int(self.ts[mask].min())] if mask.any() else []
        if self.flows:
            starts.append(int(self.flows["ts"].min()))
        return min(starts, default=0)

    @cached_property
    def end_ns(self) -> int:
        mask = self.ph != PH_METADATA
        ends = [int((self.ts[mask] + self.dur[mask]).max())] if mask.any() else []
        if self.flows:
            ends.append(int((self.flows["ts"] + self.flows["dur"]).max()))
        return max(ends, default=0)
