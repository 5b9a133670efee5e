"""Big trace files: read the `traceEvents` array in blocks, decode each block's complete events into
numpy columns, and keep no Python object per event.

A vectorised scan (quotes, braces, escapes; numpy over each block) finds where every top-level
event starts and ends. Each run of complete events is decoded by msgspec straight into the few
fields analysis reads; of the rest only the place of every ARGS_BLOCK-th event is kept, so
`trace.args(i)` finds its event again in the file, and reads its `args`, when asked. Plain files are split in two at
an event boundary and read by two processes at once.

Any surprise (a malformed event, a field of the wrong type, a cut-off file) makes `load_streamed`
return None, and the in-memory loader, with its lenient paths and salvage, takes the file instead.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import itertools
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, BinaryIO, NamedTuple

import msgspec
import numpy as np
from msgspec import Raw, Struct

from pista import forked
from pista.allocator import give_back_freed_memory
from pista.trace import load, origin
from pista.trace.model import (
    CATEGORY_ALIASES,
    NARROW_COLUMNS,
    NO_ID,
    PH_METADATA,
    Trace,
    narrow,
    no_ids,
    split_flows,
)

GZIP_MAGIC = b"\x1f\x8b"
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
# Bytes read and scanned at a time: big enough that numpy's per-call cost vanishes, small enough
# that the block's copies and decoded events stay small. On big_gpt_eager_20steps, 4 MB -> 1 MB
# blocks took the two processes' summed PSS from 1.71x to 1.47x the JSON, and the read from 0.21
# to 0.20 s (1 GB: 4.2 s either way).
BLOCK_BYTES = 1 << 20
# Blocks' arrays of one column joined into one as the read goes: each block's are small (a few KB),
# and thousands of them left the heap full of holes once joined at the end (a 305 MiB copy of
# big_gpt_eager_20steps: 70 MiB of freed memory the process kept, 1.8x the columns at the peak).
JOIN_BLOCKS = 32
# How far into the file to look for the "traceEvents" key (Kineto writes it after a short header).
HEAD_BYTES = 4 << 20
# Below this a second process costs more (fork, sending columns back) than it saves.
PARALLEL_MIN_BYTES = 24 << 20
# The share of the bytes this process reads when a child reads the rest: the child also pickles
# its columns and sends them back (on big_gpt_eager_20steps, 0.03 s of its 0.26 s at a 50% split).
FIRST_PART_SHARE = 0.53
# How far past the split point to look for an event boundary to split at.
SPLIT_SEARCH_BYTES = 4 << 20
# One event (or the gap between two) may be this big on the streamed path; a bigger one (no real
# event comes near: Kineto's biggest are a few MB) goes to the in-memory loader.
MAX_EVENT_BYTES = 256 << 20
# A separator between events longer than this (Kineto's is ",\n  ") is padding: such files go to the
# exact scan, which is linear, instead of a per-byte check of the separator.
MAX_SEPARATOR_BYTES = 64
# Redraw the progress bar at most this often.
PROGRESS_EVERY_S = 0.1
# A read that lasts this long shows a progress bar (on stderr, when it is a terminal); reads of files
# under PROGRESS_MIN_BYTES end sooner than that (the 64 MB trace reads in ~0.3 s on 2 cores).
PROGRESS_AFTER_S = 1.0
PROGRESS_MIN_BYTES = 32 << 20

# bytes.translate table: the characters the scan cares about -> small codes, all else -> 0
_QUOTE, _OPEN, _CLOSE, _ARRAY_END, _BACKSLASH = 1, 2, 3, 4, 5
_TABLE = bytearray(256)
for _char, _code in ((b'"', _QUOTE), (b"{", _OPEN), (b"}", _CLOSE), (b"]", _ARRAY_END), (b"\\", _BACKSLASH)):
    _TABLE[_char[0]] = _code
_TABLE = bytes(_TABLE)
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_SPACES = re.compile(rb"[ \t\r\n]*")
_WHITESPACE = b" \t\r\n"
_OPEN_BRACE, _CLOSE_BRACE = ord("{"), ord("}")
_KEY = b'"traceEvents"'


class Unstreamable(Exception):
    """The file is not the plain shape the streamed path handles; the in-memory loader takes it."""



# An id the in-memory loader reads as a number. Past int64 it notes and drops it: such a run goes there.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _IdArgs(Struct, gc=False):
    """The ids the in-memory loader reads from args, read the same way."""

    external_id: int = msgspec.field(name="External id", default=NO_ID)
    # Kineto before 2021-04 wrote the GPU side's link to its op in lower case
    external_id_old: int = msgspec.field(name="external id", default=NO_ID)
    correlation: int = NO_ID
    # checked here, so a read that leaves their columns out still sends the same files to that loader
    stream: _Int64 = NO_ID
    device: _Int64 = NO_ID


class _Event(Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = load.NO_TS
    dur: float = 0.0
    id: int | str | None = NO_ID
    args: _IdArgs = msgspec.field(default_factory=_IdArgs)


class _ArgsOnly(Struct, gc=False):
    args: Raw = Raw(b"null")


_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[Raw])
_ARGS_ONLY_DECODER = msgspec.json.Decoder(_ArgsOnly)
READ_WINDOW = 1 << 20  # bytes read at a time by OffsetArgs.decode_args
# Events per block of OffsetArgs: 24 bytes for the block, 2 per event (an offset and a length per
# event took 12: 46 MiB of a 1 GB trace's 4 M events). A block of big_gpt_eager_20steps spans ~18 KB.
ARGS_BLOCK = 64
# What may follow an event before the next one: JSON whitespace and the comma.
_SEPARATOR_BYTES = b", \t\r\n"


@functools.cache
def _wrapped_decoder(struct: type) -> msgspec.json.Decoder:
    wrapper = msgspec.defstruct("ArgsOf" + struct.__name__, [("args", struct | None, None)], gc=False)
    return msgspec.json.Decoder(wrapper)


_TS, _DUR = attrgetter("ts"), attrgetter("dur")


class _Reading(NamedTuple):
    """What a read turns events into: the numbers at once (one attrgetter, one structured array), or
    where an id is odd (a string, a null, past int64) the args ids at once and the `odd` ones apart;
    `args_ids` are the args columns kept as they are."""

    numbers: attrgetter
    dtype: np.dtype
    id_numbers: attrgetter
    id_dtype: np.dtype
    odd: tuple[tuple[str, attrgetter], ...]
    args_ids: tuple[str, ...]


def _reading(ids: tuple[str, ...], args_ids: tuple[str, ...]) -> _Reading:
    """`ids`: the event's own id columns (pid, tid, and the flow id's column, flow_id, if read)."""
    fields = {"pid": "pid", "tid": "tid", "flow_id": "id"}
    args = (*args_ids, "external_id", "external_id_old")  # the old spelling merged into external_id
    numbers = ("ts", "dur", *(fields[c] for c in ids), *(f"args.{a}" for a in args))
    dtype = np.dtype([("ts", np.float64), ("dur", np.float64), *((c, np.int64) for c in (*ids, *args))])
    return _Reading(attrgetter(*numbers), dtype, attrgetter(*(f"args.{a}" for a in args)),
                    np.dtype([(a, np.int64) for a in args]), tuple((c, attrgetter(fields[c])) for c in ids),
                    args_ids)


_FULL_READING = _reading(("pid", "tid", "flow_id"), ("correlation", "stream", "device"))
# the columns a read for the rules alone leaves out (a constant NO_ID view in their place): only
# `pista sql`'s events view shows them (a third less time turning events into numbers)
EVENTS_VIEW_ONLY = ("flow_id", "stream", "device")
_RULES_READING = _reading(("pid", "tid"), ("correlation",))
_NAME_CAT_PH = attrgetter("name", "cat", "ph")


# -- lazily read args -------------------------------------------------------------------------


class OffsetArgs:
    """`trace.raw_args` for a streamed trace: event i's `args` as raw JSON, read back from the file.
    Events are kept in blocks of ARGS_BLOCK: a block's first row and byte range, and each event's
    start within its block (2 bytes where every block is under 64 KiB, else 4). An event ends where
    the next one starts, less the separator (its block's end for the last). A gzipped file is
    unpacked once, into an unlinked temp file, on the first read."""

    def __init__(self, path: str, blocks: np.ndarray, within: np.ndarray, gzipped: bool,
                 preread: dict[int, bytes] | None = None) -> None:
        self.path = path
        self.blocks = blocks  # int64 (n, 3): first row, offset of its "{", offset past its last "}"
        self.within = within  # per event: its "{" less its block's
        self.gzipped = gzipped
        self.preread = preread or {}
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return int(self.within.shape[0])

    @property
    def events_end(self) -> int:
        """Offset just past the last event of the array (0 without events)."""
        return int(self.blocks[-1, 2]) if len(self.blocks) else 0

    def hold(self) -> None:
        """Open the file now: the reads back then need it no longer by name (a copy that is about to be
        deleted, standard input's). A gzipped one is unpacked now, as the first read would."""
        self._handle()

    def _handle(self) -> BinaryIO:
        if self._file is None:
            if self.gzipped:
                import tempfile

                unpacked = tempfile.TemporaryFile(prefix="pista-")  # noqa: SIM115 - kept open
                with gzip.open(self.path, "rb") as source:
                    while block := source.read(BLOCK_BYTES):
                        unpacked.write(block)
                unpacked.flush()
                self._file = unpacked
            else:
                self._file = open(self.path, "rb")  # noqa: SIM115 - kept open for later reads
        return self._file

    def _spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """File offsets of the rows' "{" and of where their next event starts (their block's end for
        a block's last): the event and, after it, only the separator."""
        block = np.searchsorted(self.blocks[:, 0], rows, side="right") - 1
        base = self.blocks[block, 1]
        start = base + self.within[rows]
        nxt = np.minimum(rows + 1, len(self) - 1)
        last = (rows + 1 == len(self)) | (np.searchsorted(self.blocks[:, 0], nxt, side="right") - 1 != block)
        end = np.where(last, self.blocks[block, 2], base + self.within[nxt])
        return start, end

    def event_bytes(self, i: int) -> bytes:
        i = int(i)
        if i in self.preread:
            return self.preread[i]
        start, end = (int(x[0]) for x in self._spans(np.asarray([i])))
        # pread, not mmap: mapped pages would count towards the process's resident memory
        return os.pread(self._handle().fileno(), end - start, start).rstrip(_SEPARATOR_BYTES)

    def decode_args(self, indices: Any, struct: type) -> list[Any]:
        """Trace.decode_args for a streamed trace: events in file order, read in windows of
        READ_WINDOW bytes, each decoded once into {"args": struct}."""
        decode = _wrapped_decoder(struct).decode
        idx = np.asarray(indices, dtype=np.int64)
        out: list[Any] = [None] * idx.size
        if idx.size == 0:
            return out
        order = np.argsort(idx, kind="stable")
        starts, ends = self._spans(idx[order])
        handle = self._handle().fileno()
        slot_of, start_of, end_of = order.tolist(), starts.tolist(), ends.tolist()
        errors = (msgspec.DecodeError, msgspec.ValidationError)
        pos = 0
        while pos < order.size:
            window_start = start_of[pos]
            # the events that start inside the window (at least one), read in one call
            stop = max(pos + 1, int(np.searchsorted(starts, window_start + READ_WINDOW, side="left")))
            data = os.pread(handle, int(ends[pos:stop].max()) - window_start, window_start)
            for k in range(pos, stop):
                raw = data[start_of[k] - window_start:end_of[k] - window_start].rstrip(_SEPARATOR_BYTES)
                try:
                    out[slot_of[k]] = decode(raw).args
                except errors:
                    continue
            pos = stop
        return out

    def __getitem__(self, i: int) -> Raw | None:
        try:
            args = _ARGS_ONLY_DECODER.decode(self.event_bytes(i)).args
        except (msgspec.DecodeError, msgspec.ValidationError, OSError):
            return None
        return None if bytes(args) == b"null" else args

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_file": None}

    def __del__(self) -> None:
        if self._file is not None:
            self._file.close()


# -- scanning ------------------------------------------------------------------------------


@dataclass
class _ScanState:
    """Where the scan stands at a block boundary."""

    in_string: int = 0  # 1 inside a string
    escape_next: bool = False  # the block ended on an unescaped backslash
    depth: int = 0  # brace depth below the traceEvents array (1 inside an event)
    ended: bool = False  # the array's closing ']' was seen
    end_offset: int = -1  # its offset


def _scan_block(buf: bytes, base: int, state: _ScanState) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of the event-opening '{' and event-closing '}' in `buf` (absolute: base + i)."""
    codes = np.frombuffer(buf.translate(_TABLE), dtype=np.uint8)
    pos = np.flatnonzero(codes)
    kind = codes[pos]
    has_backslash = state.escape_next or buf.find(b"\\") >= 0
    if has_backslash:
        pos, kind = _drop_escaped(pos, kind, len(buf), state)
    is_quote = kind == _QUOTE
    inside = (np.cumsum(is_quote, dtype=np.int64) + state.in_string) & 1
    structural = ~is_quote & (inside == 0)
    s_pos, s_kind = pos[structural], kind[structural]
    quotes = int(np.count_nonzero(is_quote))
    delta = np.zeros(s_pos.size, dtype=np.int64)
    delta[s_kind == _OPEN] = 1
    delta[s_kind == _CLOSE] = -1
    depth_after = np.cumsum(delta) + state.depth
    array_end = np.flatnonzero((s_kind == _ARRAY_END) & (depth_after == 0))
    if array_end.size:
        cut = int(array_end[0])
        state.ended = True
        state.end_offset = base + int(s_pos[cut])
        s_pos, s_kind, depth_after = s_pos[:cut], s_kind[:cut], depth_after[:cut]
    if depth_after.size and int(depth_after.min()) < 0:
        raise Unstreamable("unbalanced braces in traceEvents")
    starts = s_pos[(s_kind == _OPEN) & (depth_after == 1)] + base
    ends = s_pos[(s_kind == _CLOSE) & (depth_after == 0)] + base
    if not state.ended:
        state.in_string = (state.in_string + quotes) & 1
        state.depth = int(depth_after[-1]) if depth_after.size else state.depth
    return starts, ends


def _drop_escaped(pos: np.ndarray, kind: np.ndarray, size: int,
                  state: _ScanState) -> tuple[np.ndarray, np.ndarray]:
    """Remove backslashes and the characters they escape (rare in traces: a loop will do)."""
    escaped = []
    skip = 0 if state.escape_next else -1
    if state.escape_next:
        escaped.append(0)
    for p in pos[kind == _BACKSLASH].tolist():
        if p == skip:
            continue
        skip = p + 1
        escaped.append(p + 1)
    state.escape_next = skip == size
    keep = (kind != _BACKSLASH) & ~np.isin(pos, np.asarray(escaped, dtype=pos.dtype))
    return pos[keep], kind[keep]


# -- decoding into columns -----------------------------------------------------------------


@dataclass
class _Part:
    """The columns of a run of events, with names, categories and odd ids still local to it."""

    names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    columns: dict[str, list[np.ndarray]] = field(default_factory=dict)
    odd_ids: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)  # column -> [(row, value)]
    unjoined: dict[str, int] = field(default_factory=dict)  # column -> its trailing blocks' arrays
    preread: dict[int, bytes] = field(default_factory=dict)  # metadata events' bytes, by row
    count: int = 0
    timed: int = 0  # events with a phase and a ts: a list with none is no trace
    end_offset: int = -1  # file offset of the array's ']', once seen
    separator: bytes | None = None  # what Kineto put between events, once learnt
    events_view: bool = True  # off: the EVENTS_VIEW_ONLY columns are not read

    def add(self, name: str, column: np.ndarray) -> None:
        # narrowed block by block, so the blocks held until the end take what the trace will
        parts = self.columns.setdefault(name, [])
        parts.append(narrow(column) if name in NARROW_COLUMNS else column)
        unjoined = self.unjoined[name] = self.unjoined.get(name, 0) + 1
        if unjoined == JOIN_BLOCKS:  # the last JOIN_BLOCKS blocks' arrays become one
            parts[-JOIN_BLOCKS:] = [np.concatenate(parts[-JOIN_BLOCKS:])]
            self.unjoined[name] = 0


class _Interner:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def remap(self, local: list[str]) -> np.ndarray:
        ids = self.ids
        return np.fromiter((ids.setdefault(s, len(ids)) for s in local), dtype=np.int64, count=len(local))


def _decode_run(segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray, part: _Part,
                names: _Interner, cats: _Interner) -> None:
    """Decode `segment`, '[' + complete events and the commas between them + ']', into `part`;
    segment[k] is the file's byte origin + k; starts/ends: the events' first and last bytes."""
    events = _EVENTS_DECODER.decode(segment)
    n = len(events)
    if n != starts.size:
        raise _CountMismatch("event count differs from the scan")
    row0 = part.count
    reading = _FULL_READING if part.events_view else _RULES_READING
    try:
        numbers = np.fromiter(map(reading.numbers, events), dtype=reading.dtype, count=n)
        if n and min(int(numbers[column].min()) for column, _ in reading.odd) == INT64_MIN:
            raise OverflowError
        for column, _ in reading.odd:
            part.add(column, numbers[column].copy())
        ts_us, dur_us = numbers["ts"], numbers["dur"]
    except (ValueError, TypeError, OverflowError):
        # a string or null pid/tid/id, or an id past int64, somewhere in this run
        numbers = np.fromiter(map(reading.id_numbers, events), dtype=reading.id_dtype, count=n)
        for column, getter in reading.odd:
            part.add(column, _int_column(tuple(map(getter, events)), row0, part.odd_ids.setdefault(column, [])))
        ts_us = np.fromiter(map(_TS, events), dtype=np.float64, count=n)
        dur_us = np.fromiter(map(_DUR, events), dtype=np.float64, count=n)
    no_ts = np.isnan(ts_us)
    ts_us[no_ts] = 0.0  # as the in-memory loader reads an event without ts
    if load.bad_times(ts_us, dur_us).any():
        raise Unstreamable("events with bad times: the in-memory loader skips and counts them")
    part.add("ts", np.rint(ts_us * 1000.0).astype(np.int64))
    part.add("dur", np.rint(dur_us * 1000.0).astype(np.int64))
    external_id = numbers["external_id"].copy()
    old_style = (external_id == NO_ID) & (numbers["external_id_old"] != NO_ID)
    external_id[old_style] = numbers["external_id_old"][old_style]
    part.add("external_id", external_id)
    for column in reading.args_ids:
        part.add(column, numbers[column].copy())
    del numbers
    ph_col = _string_columns(events, part, names, cats)
    del events
    part.add("ph", ph_col)
    part.timed += int(np.count_nonzero((ph_col != 0) & ~no_ts))
    first = np.arange(0, n, ARGS_BLOCK)
    last = np.minimum(first + ARGS_BLOCK, n) - 1
    part.add("block", np.column_stack((first + row0, starts[first], ends[last] + 1)).astype(np.int64))
    within = starts - np.repeat(starts[first], last - first + 1)
    part.add("within", within.astype(np.uint32) if within.max(initial=0) <= np.iinfo(np.uint32).max else within)
    # metadata events name the lanes: keep their few bytes so that needs no trip back to the file
    for row in np.flatnonzero(ph_col == PH_METADATA).tolist():
        part.preread[row0 + row] = bytes(segment[int(starts[row]) - origin : int(ends[row]) - origin + 1])
    part.count += n


def _string_columns(events: list[_Event], part: _Part, names: _Interner, cats: _Interner) -> np.ndarray:
    """Add the name and cat columns; return the ph codes. A run holds few distinct (name, cat, ph)
    (194 in big_gpt_eager_20steps' 191 k events), so each event costs one dict lookup, in C."""
    local: defaultdict[tuple[str, str, str], int] = defaultdict(itertools.count().__next__)
    kind = np.fromiter(map(local.__getitem__, map(_NAME_CAT_PH, events)), dtype=np.int32, count=len(events))
    triples = list(local)
    part.add("name", names.remap([name for name, _, _ in triples]).astype(np.int32)[kind])
    cat_ids = cats.remap([CATEGORY_ALIASES.get(cat, cat) for _, cat, _ in triples])
    if len(cats.ids) > load.MAX_CATEGORIES:
        raise Unstreamable("more categories than int16 ids: the in-memory loader words that error")
    part.add("cat", cat_ids.astype(np.int16)[kind])
    codes = [ord(ph[0]) if ph and ph[0] < "\x80" else 0 for _, _, ph in triples]
    return np.array(codes, dtype=np.uint8)[kind]


def _int_column(values: tuple[Any, ...], row0: int, odd: list[tuple[int, Any]]) -> np.ndarray:
    """int64 column; strings, nulls and out-of-range ints are noted in `odd` and resolved later,
    in file order, the way the in-memory loader numbers them."""
    column = np.empty(len(values), dtype=np.int64)
    for k, v in enumerate(values):
        if type(v) is int and -INT64_MAX <= v <= INT64_MAX:
            column[k] = v
        else:
            column[k] = NO_ID
            odd.append((row0 + k, v))
    return column


def _event_offsets(segment: bytearray, origin: int, part: _Part) -> tuple[np.ndarray, np.ndarray] | None:
    """First and last byte (file offsets) of each event in `segment`, from msgspec's raw slices:
    their lengths, and the separator between them when it is the same everywhere (as Kineto
    writes it). None when it is not: the exact scan decides then."""
    raws = _RAW_LIST_DECODER.decode(segment)
    n = len(raws)
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    del raws
    first = _SPACES.match(segment, 1).end()  # type: ignore[union-attr]
    separator = b""
    if n > 1:
        after = first + int(lengths[0])
        following = segment.find(b"{", after, after + MAX_SEPARATOR_BYTES + 1)
        separator = bytes(segment[after:following])
        if following < 0 or separator.strip(_WHITESPACE) != b",":
            return None
    step = lengths + len(separator)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = first
    np.cumsum(step[:-1], out=starts[1:])
    starts[1:] += first
    ends = starts + lengths - 1
    codes = np.frombuffer(segment, dtype=np.uint8)
    if int(ends[-1]) != codes.size - 2:  # the run's last "}", before the "]" _segment added
        return None  # the separator is not the same everywhere (", " and ","): the scan decides
    if not ((codes[starts] == _OPEN_BRACE).all() and (codes[ends] == _CLOSE_BRACE).all()):
        return None
    for k, byte in enumerate(separator):
        if not (codes[ends[:-1] + 1 + k] == byte).all():
            return None
    if separator:
        part.separator = separator
    return starts + origin, ends + origin


def _separator_offsets(segment: bytearray, origin: int,
                       separator: bytes | None) -> tuple[np.ndarray, np.ndarray] | None:
    """First and last byte (file offsets) of each event in `segment`, found by the separator
    between events alone, when it holds a newline (Kineto's "},\n  {"): a JSON string cannot
    hold a raw newline, so only a nested object laid out exactly like an event could look like
    one, and the event count msgspec decodes catches that. None for other separators."""
    if not separator or b"\n" not in separator:
        return None
    codes = np.frombuffer(segment, dtype=np.uint8)
    first = _SPACES.match(segment, 1).end()  # type: ignore[union-attr]
    if first >= len(segment) or segment[first] != _OPEN_BRACE:
        return None
    width = len(separator) + 1  # the "}" and the separator before an event's "{"
    opening = np.flatnonzero(codes[first + width:] == _OPEN_BRACE) + first + width
    follows = codes[opening - width] == _CLOSE_BRACE
    for k, byte in enumerate(separator):
        follows &= codes[opening - len(separator) + k] == byte
    starts = np.concatenate(([first], opening[follows]))
    last = len(segment) - 2  # _segment put the run's last "}" right before the closing "]"
    if codes[last] != _CLOSE_BRACE:
        return None
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:] - width
    ends[-1] = last
    return starts + origin, ends + origin


def _exact_offsets(piece: bytes | memoryview, origin: int) -> tuple[np.ndarray, np.ndarray, _ScanState]:
    """The exact scan of `piece`, which starts between two events (or right after the '[')."""
    state = _ScanState()
    view = memoryview(piece)
    found = []
    # a block at a time: a long run of quotes and braces (a name of "},{" * 10**7) must not make
    # index arrays the size of the whole piece
    for at in range(0, max(len(view), 1), BLOCK_BYTES):
        found.append(_scan_block(bytes(view[at : at + BLOCK_BYTES]), origin + at, state))
        if state.ended:
            break
    return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]), state


def _segment(piece: bytes | memoryview, after_event: bool) -> bytearray:
    """'[' + piece + ']', with the comma before the first event blanked (offsets stay put). A piece
    after an event must start with that comma, one at the array's start (or a split) must not."""
    segment = bytearray(b"[")
    segment += piece
    segment += b"]"
    k = _SPACES.match(segment, 1).end()  # type: ignore[union-attr]  # matches the empty string too
    if k >= len(segment) - 1:
        return segment  # whitespace only: no event here
    has_comma = segment[k] == ord(",")
    if has_comma != after_event:
        raise Unstreamable("a missing or extra comma between events: the in-memory loader reads around it")
    if has_comma:
        segment[k] = ord(" ")
    return segment


def _last_boundary(window: bytes, separator: bytes | None) -> int:
    """Index of a '}' that looks like the end of the window's last complete event, or -1."""
    if separator:
        at = window.rfind(b"}" + separator + b"{")
        if at >= 0:
            return at
    lo = max(0, len(window) - (1 << 20))
    while True:
        last = None
        for last in _BOUNDARY.finditer(window, lo):  # noqa: B007 - the last match is the one
            pass
        if last is not None:
            return last.start()
        if lo == 0:
            return -1
        lo = 0


def _take(window: bytes, cut: int, origin: int, part: _Part, names: _Interner, cats: _Interner,
          exact: bool = False) -> int:
    """Decode the complete events in window[:cut + 1]; returns where they really end (the cut, or
    less when the exact scan finds the cut inside an event; -1: none). At the array's ']' it sets
    part.end_offset."""
    piece = memoryview(window)[: cut + 1]
    segment = _segment(piece, part.count > 0)
    offsets = None
    if not exact:
        offsets = _separator_offsets(segment, origin - 1, part.separator)
        if offsets is not None:
            try:
                _decode_run(segment, origin - 1, offsets[0], offsets[1], part, names, cats)
                return cut
            except (_CountMismatch, msgspec.DecodeError):
                offsets = None  # a nested object laid out like an event: ask msgspec instead
        try:
            offsets = _event_offsets(segment, origin - 1, part)
        except msgspec.DecodeError:
            offsets = None
    if offsets is None:
        starts, ends, state = _exact_offsets(piece, origin)
        if state.ended:
            part.end_offset = state.end_offset
            cut = state.end_offset - origin - 1
        elif state.depth or state.in_string or state.escape_next:
            cut = int(ends[-1]) - origin if ends.size else -1  # a look-alike boundary inside a string
        if ends.size == 0:
            return cut if state.ended else -1
        segment = _segment(memoryview(window)[: int(ends[-1]) - origin + 1], part.count > 0)
        offsets = (starts[: ends.size], ends)
    _decode_run(segment, origin - 1, offsets[0], offsets[1], part, names, cats)
    return cut


def _read_range(path: str, start: int, stop: int | None, gzipped: bool, names: _Interner,
                cats: _Interner, progress: Any = None, events_view: bool = True) -> _Part:
    """Decode the events in bytes [start, stop) of the (unpacked) file, start being just after the
    array's '[' or between two events; stop None: on to the array's end."""
    part = _Part(events_view=events_view)
    carry = b""  # the bytes after the last complete event
    origin = start  # file offset of carry[0]
    run: _LongRun | None = None  # the carry, once it outgrows a block
    limit = load.max_unpacked() if gzipped else None
    opener = gzip.open if gzipped else open
    with opener(path, "rb") as handle:
        raw = handle.fileobj if gzipped else handle  # type: ignore[attr-defined]
        handle.seek(start)
        offset = start
        while True:
            want = BLOCK_BYTES if stop is None else min(BLOCK_BYTES, stop - offset)
            buf = handle.read(want) if want > 0 else b""
            offset += len(buf)
            if limit is not None and offset > limit:
                raise load.too_big(path, limit)
            if progress is not None:
                progress(raw.tell() if gzipped else offset)
            if run is not None:
                if buf and not run.add(buf):
                    continue  # still inside one event (or between two): nothing to decode yet
                carry, origin, run = run.joined(), run.origin, None
                window = carry
                cut = -1 if not buf else _take_run_end(window, origin, part, names, cats)
            else:
                window = carry + buf if carry else buf
                cut = -1
                if buf and (cut := _last_boundary(window, part.separator)) >= 0:
                    cut = _take(window, cut, origin, part, names, cats)
            if not buf:
                _finish(window, origin, stop is not None, part, names, cats)
                return part
            if part.end_offset >= 0:
                if stop is not None:
                    # the array cannot end before a split made past it: the scan was misled
                    # (damage that unbalances quotes or brackets); the careful loader decides
                    raise Unstreamable("the event array ends before the split point")
                return part
            carry = window[cut + 1 :]
            origin += cut + 1
            if len(carry) > BLOCK_BYTES:
                run = _LongRun(carry, origin, part.count > 0)


class _LongRun:
    """Bytes after the last complete event that outgrew a block (one huge event, or a wide gap
    between two): kept as a list of blocks and scanned once, each block as it comes, until an event
    or the array ends. Searching the whole run again for each new block was quadratic (a 100 MB
    name took a minute). A gap of whitespace is kept as its comma alone."""

    def __init__(self, carry: bytes, origin: int, after_event: bool) -> None:
        self.blocks: list[bytes] = []
        self.origin = origin  # file offset of the run's first byte
        self.size = 0
        self.state = _ScanState()
        self.last_end = -1  # file offset of the last event-closing '}' seen
        self.in_gap = True  # no event started yet: only whitespace and commas so far
        self.commas = 0
        self.after_event = after_event
        self.add(carry)

    def add(self, buf: bytes) -> bool:
        """Take the next block; whether the run is done (an event or the array ended in it)."""
        if self.done:  # (the carry it began with held the end): the rest is not scanned
            self.blocks.append(buf)
            self.size += len(buf)
            return True
        starts, ends = _scan_block(buf, self.origin + self.size, self.state)
        self.blocks.append(buf)
        self.size += len(buf)
        if ends.size:
            self.last_end = int(ends[-1])
        if self.in_gap:
            self.in_gap = not (starts.size or self.state.depth or self.state.in_string or self.state.ended
                               or buf.translate(None, b" \t\r\n,"))
            self.commas += buf.count(b",")
            if self.in_gap and self.commas <= int(self.after_event):
                self._squeeze()
        if self.size > MAX_EVENT_BYTES:
            raise Unstreamable("an event bigger than MAX_EVENT_BYTES: the in-memory loader decides")
        return self.done

    @property
    def done(self) -> bool:
        return self.last_end >= 0 or self.state.ended

    def _squeeze(self) -> None:
        """Keep the gap as its comma: JSON reads `,` as it reads `,` + whitespace, and the bytes
        that follow keep their true file offsets."""
        kept = b"," * self.commas
        self.origin += self.size - len(kept)
        self.blocks, self.size = [kept], len(kept)

    def joined(self) -> bytes:
        return b"".join(self.blocks)


def _take_run_end(window: bytes, origin: int, part: _Part, names: _Interner, cats: _Interner) -> int:
    """Decode a finished long run's complete events, found by the exact scan; returns the cut."""
    starts, ends, state = _exact_offsets(window, origin)
    if state.ended:
        return _take_to_array_end(window, origin, ends, state, part, names, cats)
    return _take(window, int(ends[-1]) - origin, origin, part, names, cats, exact=True)


def _finish(window: bytes, origin: int, bounded: bool, part: _Part, names: _Interner,
            cats: _Interner) -> None:
    """The range's last bytes: complete events, then (unbounded) the array's ']'."""
    starts, ends, state = _exact_offsets(window, origin)
    if bounded:
        if state.ended or state.depth or state.in_string or state.escape_next:
            raise _FakeSplit
        _check_tail(window, origin, ends, len(window), part)
        if ends.size:
            _take(window, int(ends[-1]) - origin, origin, part, names, cats, exact=True)
        return
    if not state.ended:
        raise Unstreamable("the traceEvents array never closes (cut-off file)")
    _take_to_array_end(window, origin, ends, state, part, names, cats)


def _take_to_array_end(window: bytes, origin: int, ends: np.ndarray, state: _ScanState, part: _Part,
                       names: _Interner, cats: _Interner) -> int:
    """Decode the events up to the array's ']' (the exact scan found it), and mark the end."""
    _check_tail(window, origin, ends, state.end_offset - origin, part)
    cut = _take(window, state.end_offset - origin - 1, origin, part, names, cats, exact=True)
    part.end_offset = state.end_offset
    return cut


def _check_tail(window: bytes, origin: int, ends: np.ndarray, stop: int, part: _Part) -> None:
    """What follows the last complete event, up to window[stop], is read by no decode: it must be
    whitespace and at most the comma after an event (a string or number there is an entry the
    in-memory loader counts as skipped)."""
    after_event = bool(ends.size) or part.count > 0
    rest = window[(int(ends[-1]) - origin + 1 if ends.size else 0) : stop]
    if rest.translate(None, b" \t\r\n,") or rest.count(b",") > int(after_event):
        raise Unstreamable("an entry that is not an event object after the last event")


class _CountMismatch(Unstreamable):
    """The offsets found for a run do not match the events msgspec decoded from it."""


class _FakeSplit(Exception):
    """The guessed split point of a parallel read was not between two events."""


# -- the whole file ------------------------------------------------------------------------


def load_streamed(path: str | os.PathLike[str], workers: int | None = None, events_view: bool = True) -> Trace | None:
    """The trace, read in blocks; None where the file needs the in-memory loader's care. Without
    `events_view` the EVENTS_VIEW_ONLY columns are left unread: each a constant NO_ID."""
    source = str(path)
    try:
        return _load(source, workers, events_view)
    except (Unstreamable, msgspec.DecodeError, msgspec.ValidationError, OverflowError, ValueError,
            EOFError, OSError, RecursionError):
        return None


def unpacked_size(path: str | os.PathLike[str]) -> int:
    """The JSON's size in bytes: the file's, or for gzip the size its trailer records."""
    p = Path(path)
    size = p.stat().st_size
    with open(p, "rb") as handle:
        if handle.read(2) != GZIP_MAGIC:
            return size
        if size < 18:
            return 0
        handle.seek(-4, os.SEEK_END)
        recorded = int.from_bytes(handle.read(4), "little")
    # the trailer holds the size mod 2**32: add back the wraps a compression ratio of ~10 implies
    wraps = max(0, (size * 10 - recorded) >> 32)
    return recorded + (wraps << 32)


def _load(source: str, workers: int | None, events_view: bool) -> Trace:
    with open(source, "rb") as handle:
        gzipped = handle.read(2) == GZIP_MAGIC
    opener = gzip.open if gzipped else open
    with opener(source, "rb") as handle:
        head = handle.read(HEAD_BYTES)
    prefix, array_start = _find_array(head)
    total = unpacked_size(source) if not gzipped else os.path.getsize(source)
    progress = _progress_bar(source, unpacked_size(source), total)
    try:
        if workers is None:
            workers = 2 if forked.usable_cores() >= 2 else 1
        read = None
        if not gzipped and workers > 1 and total >= PARALLEL_MIN_BYTES:
            read = _read_parallel(source, array_start, total, progress, events_view)
        if read is None:
            names, cats = _Interner(), _Interner()
            parts = [_read_range(source, array_start, None, gzipped, names, cats, progress, events_view)]
        else:
            parts, names, cats = read
    finally:
        if progress is not None:
            progress(None)
    end_offset = parts[-1].end_offset
    if end_offset < 0:
        raise Unstreamable("the traceEvents array never closes (cut-off file)")
    with opener(source, "rb") as handle:
        handle.seek(end_offset + 1)
        tail = _read_tail(handle, source) if gzipped else handle.read()
    meta, notices = _document_tail(prefix, tail, sum(p.count for p in parts))
    size = end_offset + 1 + len(tail)
    trace = _assemble(source, parts, names, cats, meta, gzipped, size)
    trace.notices[:0] = notices  # the in-memory reader's salvage notices come before the others
    del parts
    give_back_freed_memory()
    return trace


def _read_tail(handle: BinaryIO, source: str) -> bytes:
    """The rest of a gzip stream, in blocks, within the unpacked-size limit."""
    limit = load.max_unpacked()
    blocks, at = [], handle.tell()
    while block := handle.read(BLOCK_BYTES):
        at += len(block)
        if at > limit:
            raise load.too_big(source, limit)
        blocks.append(block)
    return b"".join(blocks)


def _find_array(head: bytes) -> tuple[bytes | None, int]:
    """(the document before the "traceEvents" key, or None for a bare list; offset after its '[')."""
    stripped = len(head) - len(head.lstrip())
    if head[stripped : stripped + 1] == b"[":
        return None, stripped + 1
    if head[stripped : stripped + 1] != b"{":
        raise Unstreamable("not a JSON object")
    key = head.find(_KEY)
    if key < 0:
        raise Unstreamable("no traceEvents key near the start")
    rest = head[key + len(_KEY) :]
    colon = len(rest) - len(rest.lstrip())
    if rest[colon : colon + 1] != b":":
        raise Unstreamable("traceEvents is not a key")
    after = rest[colon + 1 :]
    bracket = colon + 1 + len(after) - len(after.lstrip())
    if rest[bracket : bracket + 1] != b"[":
        raise Unstreamable("traceEvents is not a list")
    try:
        load._LOOSE_DECODER.decode(head[:key] + b'"traceEvents":[]}')
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        # the key found is inside a nested object or a string (a decoy): the in-memory loader reads
        # the top-level one
        raise Unstreamable("the first traceEvents key is not the document's") from None
    return head[:key], key + len(_KEY) + bracket + 1


def _document_tail(prefix: bytes | None, tail: bytes, events: int) -> tuple[dict[str, Any], list[str]]:
    """The metadata (the keys before the event list and those after its ']', `tail`), and what the
    in-memory reader's salvage says of a tail that is no JSON: junk after the document's end, or
    keys cut off mid-write. Such a file was left to that reader, whole in memory (a 560 MB trace
    with 12 bytes of junk at the end took 2 GiB, the clean one 210 MiB)."""
    if prefix is not None:
        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return _metadata(prefix, tail), []
    elif not tail.strip():
        return {}, []
    if _KEY in tail or load._EVENT_START.search(tail) or load._utf8_error(tail) is not None \
            or load._bare_token_hints(b"]" + tail):
        # a second list; what may be more events (the scan took a `[]` among them for the list's
        # end); bytes the in-memory reader repairs before it salvages: its own to read
        raise Unstreamable("a tail the in-memory reader repairs or reads its own way")
    extra, closed, ignored = load._tail_metadata(b"]" + tail, 0, prefix is not None)
    meta = load._prefix_metadata(prefix) if prefix is not None else {}
    meta.update(extra)
    if not closed:
        return meta, [f"the file is cut off mid-write after its event list: all {events} events read, the keys "
                      "after the list are lost"]
    return meta, [f"ignored {ignored} byte(s) of junk after the end of the trace"] if ignored else []


def _metadata(prefix: bytes, tail: bytes) -> dict[str, Any]:
    doc = load._LOOSE_DECODER.decode(prefix + b'"traceEvents":[]' + tail)
    if bytes(doc.traceEvents) != b"[]":
        # a second "traceEvents" key after the list: the in-memory loader's decode takes the last
        raise Unstreamable("two traceEvents keys")
    return load._metadata(doc)


def _read_parallel(source: str, array_start: int, total: int, progress: Any,
                   events_view: bool) -> tuple[list[_Part], _Interner, _Interner] | None:
    """Split at an event boundary a little past the middle: a child reads the second part while this
    process reads the first. The split is only a guess until the first part ends there cleanly; None
    when it does not (the caller reads the file in one go then)."""
    mid = array_start + int((total - array_start) * FIRST_PART_SHARE)
    with open(source, "rb") as handle:
        handle.seek(mid)
        window = handle.read(SPLIT_SEARCH_BYTES)
    match = _BOUNDARY.search(window)
    if match is None:
        return None
    split = mid + match.end() - 1  # the '{' of the event after the boundary
    child = forked.fork_call(_child_read, source, split, events_view)
    if child is None:
        return None  # no second process here: read in one go
    names, cats = _Interner(), _Interner()
    try:
        first = _read_range(source, array_start, split, False, names, cats,
                            progress and (lambda at: progress(array_start + int((at - array_start) / FIRST_PART_SHARE))),
                            events_view)
    except _FakeSplit:
        child.cancel()
        return None
    except BaseException:
        child.cancel()
        raise
    try:
        second, local_names, local_cats = child.result()
    except forked.ChildFailed:
        # the child died (killed for memory, a signal): read its part here, so a damaged second
        # part still fails as itself and a sound one costs only time
        second = _read_range(source, split, None, False, names, cats, events_view=events_view)
        return [first, second], names, cats
    _localise(second, names.remap(local_names), cats.remap(local_cats))
    return [first, second], names, cats


def _child_read(source: str, split: int, events_view: bool) -> tuple[_Part, list[str], list[str]]:
    names, cats = _Interner(), _Interner()
    part = _read_range(source, split, None, False, names, cats, events_view=events_view)
    return part, list(names.ids), list(cats.ids)


def _localise(part: _Part, name_map: np.ndarray, cat_map: np.ndarray) -> None:
    part.columns["name"] = [name_map[c] for c in part.columns.get("name", [])]
    part.columns["cat"] = [cat_map[c] for c in part.columns.get("cat", [])]


def _assemble(source: str, parts: list[_Part], names: _Interner, cats: _Interner, meta: dict[str, Any],
              gzipped: bool, size: int) -> Trace:
    def column(name: str, dtype: Any) -> np.ndarray:
        # one concatenation over every block, each block's array let go as soon as it is copied
        arrays = [a for p in parts for a in p.columns.pop(name, [])]
        joined = np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype or np.int64)
        del arrays
        give_back_freed_memory()
        if name in NARROW_COLUMNS and not any(p.odd_ids.get(name) for p in parts):
            return joined  # narrowed blocks, joined: int64 only where some block needed it
        return joined if dtype is None else joined.astype(dtype, copy=False)

    if len(cats.ids) > load.MAX_CATEGORIES or not sum(p.timed for p in parts):
        raise Unstreamable("too many categories, or no event with a phase and a ts: the in-memory loader "
                           "words that error")
    if load.absurd_steps(list(names.ids)):
        raise Unstreamable("ProfilerStep numbers past int64: the in-memory loader skips those events")
    string_ids: dict[str, int] = {}
    columns = {}
    for name, dtype in (("ph", np.uint8), ("cat", np.int16), ("name", np.int32), ("pid", np.int64),
                        ("tid", np.int64), ("flow_id", np.int64), ("ts", np.int64), ("dur", np.int64),
                        ("external_id", np.int64), ("correlation", np.int64), ("stream", np.int64),
                        ("device", np.int64)):
        columns[name] = column(name, dtype)
    if not parts[0].events_view:
        for name in EVENTS_VIEW_ONLY:
            columns[name] = no_ids(columns["ts"].size)
    # odd ids in the in-memory loader's order: all pids, then tids, then flow ids
    for name in ("pid", "tid", "flow_id"):
        row0 = 0
        for p in parts:
            for row, value in p.odd_ids.get(name, []):
                columns[name][row0 + row] = _numeric(value, string_ids, name == "flow_id")
            row0 += p.count
    if not columns["ts"].size:
        raise Unstreamable("no events: the in-memory loader words that error")
    if load.overlong(columns["dur"]) is not None:
        raise Unstreamable("durations that sum past int64's range: the in-memory loader skips the longest")
    foreign = load.foreign_device_notice(list(cats.ids), columns["cat"])
    preread: dict[int, bytes] = {}
    row0 = 0
    for p in parts:
        preread.update({row0 + row: data for row, data in p.preread.items()})
        row0 += p.count
    row0 = 0
    for p in parts:  # each part numbered its blocks' rows from 0
        p.columns["block"] = [block + (row0, 0, 0) for block in p.columns.get("block", [])]
        row0 += p.count
    blocks = column("block", np.int64).reshape(-1, 3)
    within = column("within", None)  # uint32, int64 past its range
    if not blocks.size or (blocks[:, 2] - blocks[:, 1]).max() <= np.iinfo(np.uint16).max:
        within = within.astype(np.uint16)
    raw_args = OffsetArgs(source, blocks, within, gzipped, preread)
    flows = split_flows(columns)
    give_back_freed_memory()
    trace = Trace(
        source=source,
        names=list(names.ids),
        categories=list(cats.ids),
        **columns,
        raw_args=raw_args,  # type: ignore[arg-type]
        metadata=meta,
        string_ids=string_ids,
        notices=[foreign] if foreign else [],
        flows=flows,
    )
    trace.size_bytes = size
    load._read_lane_names(trace)
    origin.settle(trace)
    return trace


def _numeric(value: Any, string_ids: dict[str, int], is_flow: bool) -> int:
    """The in-memory loader's numbering of string (and null) pids, tids and flow ids."""
    if value is None and is_flow:
        return NO_ID
    if isinstance(value, int):
        if -INT64_MAX <= value <= INT64_MAX:
            return value
        if is_flow:
            return NO_ID
        raise Unstreamable("a pid/tid past int64: the in-memory loader notes those")
    if not isinstance(value, str):
        raise Unstreamable("a null pid/tid")
    number = load.text_number(value)
    if number is not None:
        return number
    if value not in string_ids:
        string_ids[value] = -1000 - len(string_ids)
    return string_ids[value]


# -- progress ------------------------------------------------------------------------------


def _progress_bar(source: str, json_size: int, total: int) -> Any:
    """A callable taking the bytes read so far (None: done), or None when no bar is wanted."""
    if json_size < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    # no refresh thread (auto_refresh off): the read forks, and a thread holding the console's
    # lock at that moment would leave the child waiting on it; stderr, so stdout stays the output
    bar = Progress(TextColumn("reading {task.description}"), BarColumn(), DownloadColumn(),
                   TimeRemainingColumn(), transient=True, console=Console(stderr=True), auto_refresh=False)
    task = bar.add_task(Path(source).name, total=total)
    started = [False]
    last_drawn = [time.monotonic()]
    begun = last_drawn[0]

    def update(at: int | None) -> None:
        if at is None:
            if started[0]:
                bar.stop()
            return
        bar.update(task, completed=min(at, total))
        now = time.monotonic()
        if not started[0] and now - begun >= PROGRESS_AFTER_S:
            bar.start()
            started[0] = True
        if started[0] and now - last_drawn[0] >= PROGRESS_EVERY_S:
            last_drawn[0] = now
            bar.refresh()

    return update
