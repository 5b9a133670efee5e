"""Big trace files: read the `traceEvents` array in blocks, decode each block's complete events into
numpy columns, and keep no Python object per event.

A vectorised scan (quotes, braces, escapes; numpy over each block) finds where every top-level
event starts and ends. Each run of complete events is decoded by msgspec straight into the few
fields analysis reads; of the rest only the place of every ARGS_BLOCK-th event is kept, so
`trace.args(i)` finds its event again in the file, and reads its `args`, when asked. Plain files are split in two at
an event boundary and read by two processes at once.

An event with a field of the wrong type or a bad ts/dur is skipped and counted, as the in-memory
loader does. A file damaged inside its event list (a cut-off file, a bad value) is salvaged a window
at a time by the in-memory loader's own salvage walk (salvage.SalvageWalk), its events decoded as a
clean file's are. Any other surprise (bytes that loader mends first, an entry that is no event, an
odd id) makes `load_streamed` return None, and the in-memory loader takes the file instead.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import gzip
import io
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import msgspec
import numpy as np
from msgspec import Raw, Struct

from pista import forked
from pista.allocator import give_back_freed_memory
from pista.trace import core, origin, salvage
from pista.trace.model import (
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
_QUOTE, _OPEN, _CLOSE, _ARRAY_END, _BACKSLASH, _ARRAY_START = 1, 2, 3, 4, 5, 6
_CODES = bytearray(256)
for _char, _code in ((b'"', _QUOTE), (b"{", _OPEN), (b"}", _CLOSE), (b"]", _ARRAY_END), (b"\\", _BACKSLASH),
                     (b"[", _ARRAY_START)):
    _CODES[_char[0]] = _code
_TABLE = bytes(_CODES)
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_SPACES = re.compile(rb"[ \t\r\n]*")
_WHITESPACE = b" \t\r\n"
_OPEN_BRACE, _CLOSE_BRACE = ord("{"), ord("}")
_KEY = b'"traceEvents"'


class Unstreamable(Exception):
    """The file is not the plain shape the streamed path handles; the in-memory loader takes it."""


class _Damaged(Unstreamable):
    """The file is no valid JSON: the in-memory loader would salvage it, and so does the streamed
    salvage (_load_salvaged), walking it as that loader does. Raised only where a valid file cannot
    lead: the scan that finds the events is exact on valid JSON from the start of the list (or from
    an event's end, once read), so what it finds there that does not decode, balance or close is
    damage, not a shape this reader does not know."""


_Event = core.IdEvent  # the decoded event: its args' ids read in the same decode


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
def _wrapped_decoder(struct: type) -> msgspec.json.Decoder[Any]:
    wrapper = msgspec.defstruct("ArgsOf" + struct.__name__, [("args", struct | None, None)], gc=False)
    return msgspec.json.Decoder(wrapper)


_TS, _DUR = attrgetter("ts"), attrgetter("dur")


class _Reading(NamedTuple):
    """What a read turns events into: the numbers at once (one attrgetter, one structured array), or
    where an id is odd (a string, a null, past int64) the args ids at once and the `odd` ones apart;
    `args_ids` are the args columns kept as they are."""

    numbers: attrgetter[Any]
    dtype: np.dtype
    id_numbers: attrgetter[Any]
    id_dtype: np.dtype
    odd: tuple[tuple[str, attrgetter[Any]], ...]
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
                # start-up: tempfile (11 modules) only for a gzipped file read back
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
    # a '[' between events: a list among them, whose ']' the scan takes for the array's (it counts
    # braces alone), so what it finds after it is no sign of damage
    lists: bool = False

    def inside_event(self) -> bool:
        """Whether the scan stands inside an event or a string (or just after a backslash)."""
        return bool(self.depth or self.in_string or self.escape_next)


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
    if not state.lists and ((s_kind == _ARRAY_START) & (depth_after == 0)).any():
        state.lists = True
    if depth_after.size and int(depth_after.min()) < 0:
        raise _Damaged("unbalanced braces in traceEvents")
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
    lists: bool = False  # the exact scan met a list among the events (_ScanState.lists)
    count: int = 0  # events kept
    bad_times: int = 0  # events read but skipped for their ts/dur, as the in-memory loader skips them
    skipped: int = 0  # entries skipped unread (a field of the wrong type)
    first_skip: tuple[int, str] | None = None  # the first skipped one's entry number (in the part) and why
    timed: int = 0  # events with a phase and a ts: a list with none is no trace
    end_offset: int = -1  # file offset of the array's ']', once seen
    separator: bytes | None = None  # what Kineto put between events, once learnt
    events_view: bool = True  # off: the EVENTS_VIEW_ONLY columns are not read

    def entries(self) -> int:
        """The list's entries read so far: kept, skipped for their times, skipped unread."""
        return self.count + self.bad_times + self.skipped

    def skip(self, entry: int, err: BaseException) -> None:
        self.skipped += 1
        if self.first_skip is None:
            self.first_skip = (entry, core.describe(err))

    def add(self, name: str, column: np.ndarray) -> None:
        # narrowed block by block, so the blocks held until the end take what the trace will
        parts = self.columns.setdefault(name, [])
        parts.append(narrow(column) if name in NARROW_COLUMNS else column)
        unjoined = self.unjoined[name] = self.unjoined.get(name, 0) + 1
        if unjoined == JOIN_BLOCKS:  # the last JOIN_BLOCKS blocks' arrays become one
            parts[-JOIN_BLOCKS:] = [np.concatenate(parts[-JOIN_BLOCKS:])]
            self.unjoined[name] = 0


_Interner = core.Interner


def _decode_run(segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray, part: _Part,
                names: _Interner, cats: _Interner) -> None:
    """Decode `segment`, '[' + complete events and the commas between them + ']', into `part`;
    segment[k] is the file's byte origin + k; starts/ends: the events' first and last bytes."""
    events = _EVENTS_DECODER.decode(segment)
    if len(events) != starts.size:
        raise _CountMismatch("event count differs from the scan")
    _add_events(events, segment, origin, starts, ends, part, names, cats)


def _add_events(events: list[_Event], segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray,
                part: _Part, names: _Interner, cats: _Interner, apart: np.ndarray | None = None) -> None:
    """The decoded `events` of `segment` into `part`; `apart`: per event, whether an entry that was
    skipped lies between it and the one before (its args are read back in a block of their own)."""
    n = len(events)
    if not n:
        return
    row0 = part.count
    reading = _FULL_READING if part.events_view else _RULES_READING
    numbers, ts_us, dur_us, odd = _numbers(events, reading)
    no_ts = np.isnan(ts_us)
    ts_us[no_ts] = 0.0  # as the in-memory loader reads an event without ts
    bad = core.bad_times(ts_us, dur_us)
    if bad.any():
        _skip_bad_times(events, segment, origin, starts, ends, part, names, cats, apart, bad, no_ts)
        return
    for column, getter in reading.odd:
        part.add(column, _int_column(tuple(map(getter, events)), row0, part.odd_ids.setdefault(column, []))
                 if odd else numbers[column].copy())
    part.add("ts", np.rint(ts_us * 1000.0).astype(np.int64))
    part.add("dur", np.rint(dur_us * 1000.0).astype(np.int64))
    part.add("external_id", _external_ids(numbers))
    for column in reading.args_ids:
        part.add(column, numbers[column].copy())
    del numbers
    ph_col = _string_columns(events, part, names, cats)
    del events
    part.add("ph", ph_col)
    part.timed += int(np.count_nonzero((ph_col != 0) & ~no_ts))
    block, within = _args_blocks(starts, ends, apart, row0)
    part.add("block", block)
    part.add("within", within.astype(np.uint32) if within.max(initial=0) <= np.iinfo(np.uint32).max else within)
    _keep_metadata_bytes(segment, origin, starts, ends, ph_col, part)
    part.count += n


def _numbers(events: list[_Event], reading: _Reading) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The events' numbers (`reading`'s columns), their ts and dur in µs, and whether their own ids
    are odd: then the numbers hold the args ids alone, and the ids are read one by one."""
    n = len(events)
    try:
        numbers = np.fromiter(map(reading.numbers, events), dtype=reading.dtype, count=n)
        if min(int(numbers[column].min()) for column, _ in reading.odd) == INT64_MIN:
            raise OverflowError
        return numbers, numbers["ts"], numbers["dur"], False
    except (ValueError, TypeError, OverflowError):
        # a string or null pid/tid/id, or an id past int64, somewhere in this run
        numbers = np.fromiter(map(reading.id_numbers, events), dtype=reading.id_dtype, count=n)
        ts_us = np.fromiter(map(_TS, events), dtype=np.float64, count=n)
        dur_us = np.fromiter(map(_DUR, events), dtype=np.float64, count=n)
        return numbers, ts_us, dur_us, True


def _external_ids(numbers: np.ndarray) -> np.ndarray:
    """args 'External id', the old spelling's where the new one is missing."""
    external_id = numbers["external_id"].copy()
    old_style = (external_id == NO_ID) & (numbers["external_id_old"] != NO_ID)
    external_id[old_style] = numbers["external_id_old"][old_style]
    return external_id


def _keep_metadata_bytes(segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray, ph_col: np.ndarray,
                         part: _Part) -> None:
    """Metadata events name the lanes: their few bytes are kept (by row), so that needs no trip back to the file."""
    row0 = part.count
    for row in np.flatnonzero(ph_col == PH_METADATA).tolist():
        part.preread[row0 + row] = bytes(segment[int(starts[row]) - origin : int(ends[row]) - origin + 1])


def _skip_bad_times(events: list[_Event], segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray,
                    part: _Part, names: _Interner, cats: _Interner, apart: np.ndarray | None, bad: np.ndarray,
                    no_ts: np.ndarray) -> None:
    """Events with a negative, non-finite or out-of-range ts/dur: counted, as the in-memory loader
    counts them (among the events with a phase and a ts too), and the rest read without them."""
    dropped = np.flatnonzero(bad).tolist()
    part.bad_times += len(dropped)
    part.timed += sum(1 for k in dropped if core.ph_code(events[k].ph) and not no_ts[k])
    keep = np.flatnonzero(~bad)
    follows = np.diff(keep, prepend=-1) == 1
    kept_apart = ~follows if apart is None else apart[keep] | ~follows
    _add_events([events[k] for k in keep.tolist()], segment, origin, starts[keep], ends[keep], part, names, cats,
                kept_apart)


def _args_blocks(starts: np.ndarray, ends: np.ndarray, apart: np.ndarray | None,
                 row0: int) -> tuple[np.ndarray, np.ndarray]:
    """OffsetArgs' blocks of the events (first row, offset of its '{', offset past the last '}'),
    ARGS_BLOCK events each and a new one after every skipped entry; each event's start within its
    block."""
    n = starts.size
    if apart is None or not apart[1:].any():
        first = np.arange(0, n, ARGS_BLOCK)
    else:
        group_first = np.flatnonzero(apart | (np.arange(n) == 0))  # runs of events that follow each other
        group = np.cumsum(np.isin(np.arange(n), group_first)) - 1
        first = np.flatnonzero((np.arange(n) - group_first[group]) % ARGS_BLOCK == 0)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1:] = n - 1
    block = np.column_stack((first + row0, starts[first], ends[last] + 1)).astype(np.int64)
    return block, starts - np.repeat(starts[first], last - first + 1)


def _string_columns(events: list[_Event], part: _Part, names: _Interner, cats: _Interner) -> np.ndarray:
    """Add the name and cat columns; return the ph codes."""
    name_col, cat_col, ph_col = core.string_columns(events, names, cats)
    if len(cats.ids) > core.MAX_CATEGORIES:
        raise Unstreamable("more categories than int16 ids: the in-memory loader words that error")
    part.add("name", name_col)
    part.add("cat", cat_col.astype(np.int16))
    return ph_col


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
    separator = _first_separator(segment, first + int(lengths[0])) if n > 1 else b""
    if separator is None:
        return None
    step = lengths + len(separator)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = first
    np.cumsum(step[:-1], out=starts[1:])
    starts[1:] += first
    ends = starts + lengths - 1
    if not _laid_out(np.frombuffer(segment, dtype=np.uint8), starts, ends, separator):
        return None
    if separator:
        part.separator = separator
    return starts + origin, ends + origin


def _first_separator(segment: bytearray, after: int) -> bytes | None:
    """What lies between the first event, which ends before `after`, and the next: None unless it is a
    comma and whitespace (within MAX_SEPARATOR_BYTES)."""
    following = segment.find(b"{", after, after + MAX_SEPARATOR_BYTES + 1)
    separator = bytes(segment[after:following])
    if following < 0 or separator.strip(_WHITESPACE) != b",":
        return None
    return separator


def _laid_out(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray, separator: bytes) -> bool:
    """Whether the events start with '{' and end with '}' at these offsets, each followed by `separator`
    (the last by the run's ']')."""
    if int(ends[-1]) != codes.size - 2:  # the run's last "}", before the "]" _segment added
        return False  # the separator is not the same everywhere (", " and ","): the scan decides
    if not ((codes[starts] == _OPEN_BRACE).all() and (codes[ends] == _CLOSE_BRACE).all()):
        return False
    return all((codes[ends[:-1] + 1 + k] == byte).all() for k, byte in enumerate(separator))


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
        # no JSON, unless the list ends there (a look-alike boundary after it)
        raise (Unstreamable if segment[k] == ord("]") else _Damaged)("a missing or extra comma between events")
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
    segment = _segment(piece, part.entries() > 0)
    offsets = None
    if not exact:
        if _took_by_separator(segment, origin, part, names, cats):
            return cut
        offsets = _raw_offsets(segment, origin, part)
    sure = True  # that what does not decode is damage
    if offsets is None:
        starts, ends, state = _exact_offsets(piece, origin)
        sure = not state.lists
        part.lists |= state.lists
        cut = _scanned_cut(state, ends, origin, cut, part)
        if ends.size == 0:
            return _nothing_complete(segment, state, cut)
        segment = _segment(memoryview(window)[: int(ends[-1]) - origin + 1], part.entries() > 0)
        offsets = (starts[: ends.size], ends)
    _decode_found(segment, origin, offsets, part, names, cats, sure)
    return cut


def _took_by_separator(segment: bytearray, origin: int, part: _Part, names: _Interner, cats: _Interner) -> bool:
    """Decode the segment's events at the offsets the separator alone gives (_separator_offsets);
    whether that worked."""
    offsets = _separator_offsets(segment, origin - 1, part.separator)
    if offsets is None:
        return False
    try:
        _decode_run(segment, origin - 1, offsets[0], offsets[1], part, names, cats)
    except (_CountMismatch, msgspec.DecodeError, msgspec.ValidationError):
        return False  # a nested object laid out like an event: ask msgspec instead
    return True


def _raw_offsets(segment: bytearray, origin: int, part: _Part) -> tuple[np.ndarray, np.ndarray] | None:
    """_event_offsets, None where msgspec finds no JSON list there either: the exact scan decides then."""
    try:
        return _event_offsets(segment, origin - 1, part)
    except msgspec.DecodeError:
        return None


def _scanned_cut(state: _ScanState, ends: np.ndarray, origin: int, cut: int, part: _Part) -> int:
    """Where the window's complete events end after the exact scan: at the array's ']' (marked in
    `part`), at the last event's end where the cut fell inside one, else the cut itself."""
    if state.ended:
        part.end_offset = state.end_offset
        return state.end_offset - origin - 1
    if state.inside_event():
        return int(ends[-1]) - origin if ends.size else -1  # a look-alike boundary inside a string
    return cut


def _nothing_complete(segment: bytearray, state: _ScanState, cut: int) -> int:
    """_take's answer where the exact scan found no complete event: the cut, at the array's end;
    else -1 (nothing yet), or damage where the first entry is no JSON."""
    if state.ended:
        return cut
    if _starts_damaged(segment):
        raise _Damaged("the first entry is no JSON")
    return -1


def _decode_found(segment: bytearray, origin: int, offsets: tuple[np.ndarray, np.ndarray], part: _Part,
                  names: _Interner, cats: _Interner, sure: bool) -> None:
    """Decode the events found at `offsets` into `part`; one by one where a field's type is refused."""
    try:
        _decode_run(segment, origin - 1, offsets[0], offsets[1], part, names, cats)
    except msgspec.ValidationError:
        _decode_leniently(segment, origin - 1, offsets[0], offsets[1], part, names, cats, sure)
    except msgspec.DecodeError as err:
        # the events the exact scan found do not decode: damage (unless a list among them misled it)
        raise (_Damaged if sure else Unstreamable)(str(err)) from None


def _starts_damaged(segment: bytearray) -> bool:
    """Whether the first entry of `segment` (from the start of the list, or an event's end) is no
    JSON, though no more than the start of one may be there: a valid file's bytes from there are a
    value, or the start of one (a file damaged there can send the scan astray, say a quote taken
    out: it found no event's end then, and would read on to MAX_EVENT_BYTES)."""
    first = _SPACES.match(segment, 1).end()  # type: ignore[union-attr]  # the comma was blanked
    try:
        msgspec.json.decode(memoryview(segment)[first:-1], type=Raw)
    except msgspec.DecodeError as err:
        text = str(err)
        return "truncated" not in text and "trailing characters" not in text
    except RecursionError:
        return False
    return False


_ONE_EVENT_DECODER = msgspec.json.Decoder(_Event)


def _decode_leniently(segment: bytearray, origin: int, starts: np.ndarray, ends: np.ndarray, part: _Part,
                      names: _Interner, cats: _Interner, sure: bool) -> None:
    """A run the typed decode refused for a field's type: each event on its own, as the in-memory
    loader reads a list with such an event (it skips that one and counts it). An event that is no
    JSON is damage (if `sure`: no list among the events misled the scan); an entry that is no object,
    or an args id of the wrong type (the in-memory loader reads that event and notes it), are that
    loader's to read."""
    if not sure:
        raise Unstreamable("a list among the events: the in-memory loader counts it")
    entry0 = part.entries()
    kept: list[_Event] = []
    rows: list[int] = []
    apart: list[bool] = []
    after_skip = False
    view = memoryview(segment)
    end = 1  # after the '['
    for k in range(starts.size):
        start = int(starts[k]) - origin
        _check_gap(view[end:start], k == 0)
        end = int(ends[k]) - origin + 1
        raw = view[start:end]
        try:
            kept.append(_ONE_EVENT_DECODER.decode(raw))
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as err:
            raise _Damaged(str(err)) from None
        else:
            rows.append(k)
            apart.append(after_skip)
            after_skip = False
            continue
        part.skip(entry0 + k, _wrong_type(raw))
        after_skip = True
    picked = np.asarray(rows, dtype=np.int64)
    _add_events(kept, segment, origin, starts[picked], ends[picked], part, names, cats, np.asarray(apart, dtype=bool))


def _wrong_type(raw: memoryview) -> msgspec.ValidationError:
    """The in-memory loader's error for an event the typed decode refused: JSON (else damage) with
    a field of the wrong type (an args id of the wrong type it reads, and notes: its own to read)."""
    try:
        msgspec.json.decode(raw, type=Raw)
    except msgspec.DecodeError as err:
        raise _Damaged(str(err)) from None  # a field of the wrong type, then no JSON
    except RecursionError:
        raise Unstreamable("nested too deeply to check") from None
    try:
        core.EVENT_DECODER.decode(raw)
    except msgspec.ValidationError as err:
        return err
    raise Unstreamable("an args id of the wrong type: the in-memory loader reads the event and notes it")


def _check_gap(gap: memoryview, first: bool) -> None:
    """Between two events of a run: a comma and whitespace (before the first: whitespace, its comma
    blanked). Anything else is damage, or entries that are no events (the in-memory loader counts
    those): JSON or not tells which."""
    if bytes(gap).translate(None, b" \t\r\n") == (b"" if first else b","):
        return
    try:
        msgspec.json.decode(b"".join((b"[" if first else b"[0", gap, b"0]")), type=Raw)
    except msgspec.DecodeError:
        raise _Damaged("no JSON between two events") from None
    except RecursionError:
        pass
    raise Unstreamable("an entry that is no event: the in-memory loader counts it")


def _read_range(path: str, start: int, stop: int | None, gzipped: bool, names: _Interner,
                cats: _Interner, progress: Any = None, events_view: bool = True) -> _Part:
    """Decode the events in bytes [start, stop) of the (unpacked) file, start being just after the
    array's '[' or between two events; stop None: on to the array's end."""
    part = _Part(events_view=events_view)
    carry = b""  # the bytes after the last complete event
    origin = start  # file offset of carry[0]
    run: _LongRun | None = None  # the carry, once it outgrows a block
    opener = gzip.open if gzipped else open
    with opener(path, "rb") as handle:
        blocks = _Blocks(path, handle, start, stop, gzipped, progress)
        while True:
            buf = blocks.next()
            if run is not None:
                if buf and not run.add(buf):
                    continue  # still inside one event (or between two): nothing to decode yet
                carry, origin, run = run.joined(), run.origin, None
                window = carry
                cut = _take_run_end(window, buf, origin, part, names, cats)
            else:
                window = carry + buf if carry else buf
                cut = _take_complete(window, buf, origin, part, names, cats)
            if not buf:
                _finish(window, origin, stop is not None, part, names, cats)
                return part
            if _array_ended(part, stop is not None):
                return part
            carry = window[cut + 1 :]
            origin += cut + 1
            if len(carry) > BLOCK_BYTES:
                run = _LongRun(carry, origin, part.entries() > 0)


def _array_ended(part: _Part, bounded: bool) -> bool:
    """Whether the array's ']' was read. A range bounded by a split cannot end there: the scan was
    misled (damage that unbalances quotes or brackets), and the careful loader decides."""
    if part.end_offset < 0:
        return False
    if bounded:
        raise Unstreamable("the event array ends before the split point")
    return True


def _take_complete(window: bytes, buf: bytes, origin: int, part: _Part, names: _Interner, cats: _Interner) -> int:
    """Decode the window's complete events; the offset in it of the last one's end (-1: none yet)."""
    if not buf:
        return -1
    cut = _last_boundary(window, part.separator)
    return _take(window, cut, origin, part, names, cats) if cut >= 0 else -1


class _Blocks:
    """The range's bytes a block at a time (b"" at its end), the unpacked size bounded for a gzipped file
    and the progress told in the file's own bytes."""

    def __init__(self, path: str, handle: Any, start: int, stop: int | None, gzipped: bool, progress: Any) -> None:
        self.path, self.handle, self.stop, self.progress = path, handle, stop, progress
        self.raw = handle.fileobj if gzipped else None
        self.limit = core.max_unpacked() if gzipped else None
        handle.seek(start)
        self.offset = start

    def next(self) -> bytes:
        want = BLOCK_BYTES if self.stop is None else min(BLOCK_BYTES, self.stop - self.offset)
        buf = self.handle.read(want) if want > 0 else b""
        self.offset += len(buf)
        _check_unpacked(self.offset, self.limit, self.path)
        if self.progress is not None:
            self.progress(self.raw.tell() if self.raw is not None else self.offset)
        return buf


def _check_unpacked(at: int, limit: int | None, source: str) -> None:
    """BadTrace where the bytes unpacked so far (`at`) pass the gzip limit (None: a plain file)."""
    if limit is not None and at > limit:
        raise core.too_big(source, limit)


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
            self._keep(buf)
            return True
        starts, ends = _scan_block(buf, self.origin + self.size, self.state)
        self._keep(buf)
        if ends.size:
            self.last_end = int(ends[-1])
        if self.in_gap:
            self._follow_gap(buf, starts)
        if self.size > MAX_EVENT_BYTES:
            raise Unstreamable("an event bigger than MAX_EVENT_BYTES: the in-memory loader decides")
        return self.done

    @property
    def done(self) -> bool:
        return self.last_end >= 0 or self.state.ended

    def _keep(self, buf: bytes) -> None:
        self.blocks.append(buf)
        self.size += len(buf)

    def _follow_gap(self, buf: bytes, starts: np.ndarray) -> None:
        """While no event has started: whether one does in `buf`, and a gap of whitespace kept as its comma."""
        self.in_gap = not (starts.size or self.state.depth or self.state.in_string or self.state.ended
                           or buf.translate(None, b" \t\r\n,"))
        self.commas += buf.count(b",")
        if self.in_gap and self.commas <= int(self.after_event):
            self._squeeze()

    def _squeeze(self) -> None:
        """Keep the gap as its comma: JSON reads `,` as it reads `,` + whitespace, and the bytes
        that follow keep their true file offsets."""
        kept = b"," * self.commas
        self.origin += self.size - len(kept)
        self.blocks, self.size = [kept], len(kept)

    def joined(self) -> bytes:
        return b"".join(self.blocks)


def _take_run_end(window: bytes, buf: bytes, origin: int, part: _Part, names: _Interner, cats: _Interner) -> int:
    """Decode a finished long run's complete events, found by the exact scan; returns the cut (-1 at
    the range's end, no block `buf` read: _finish takes the run then)."""
    if not buf:
        return -1
    starts, ends, state = _exact_offsets(window, origin)
    if state.ended:
        return _take_to_array_end(window, origin, ends, state, part, names, cats)
    return _take(window, int(ends[-1]) - origin, origin, part, names, cats, exact=True)


def _finish(window: bytes, origin: int, bounded: bool, part: _Part, names: _Interner,
            cats: _Interner) -> None:
    """The range's last bytes: complete events, then (unbounded) the array's ']'."""
    starts, ends, state = _exact_offsets(window, origin)
    if bounded:
        if state.ended or state.inside_event():
            raise _FakeSplit
        _check_tail(window, origin, ends, len(window), part, not state.lists)
        if ends.size:
            _take(window, int(ends[-1]) - origin, origin, part, names, cats, exact=True)
        return
    if not state.ended:
        raise _Damaged("the traceEvents array never closes (cut-off file)")
    _take_to_array_end(window, origin, ends, state, part, names, cats)


def _take_to_array_end(window: bytes, origin: int, ends: np.ndarray, state: _ScanState, part: _Part,
                       names: _Interner, cats: _Interner) -> int:
    """Decode the events up to the array's ']' (the exact scan found it), and mark the end."""
    _check_tail(window, origin, ends, state.end_offset - origin, part, not state.lists, closing=True)
    cut = _take(window, state.end_offset - origin - 1, origin, part, names, cats, exact=True)
    part.end_offset = state.end_offset
    return cut


def _check_tail(window: bytes, origin: int, ends: np.ndarray, stop: int, part: _Part, sure: bool,
                closing: bool = False) -> None:
    """What follows the last complete event, up to window[stop] (the list's ']' when `closing`, else
    the next event's '{'), is read by no decode: it must be whitespace and at most the comma after an
    event (a string or number there is an entry the in-memory loader counts as skipped; what is no
    JSON there, damage)."""
    after_event = bool(ends.size) or part.entries() > 0
    rest = window[(int(ends[-1]) - origin + 1 if ends.size else 0) : stop]
    if rest.translate(None, b" \t\r\n,") or rest.count(b",") > int(after_event):
        if sure:
            _check_entries_json(rest, after_event, closing)
        raise Unstreamable("an entry that is not an event object after the last event")


def _check_entries_json(rest: bytes, after_event: bool, closing: bool) -> None:
    """_Damaged where the entries after the last event (after one, if `after_event`; up to the list's
    ']' if `closing`) are no JSON."""
    try:
        msgspec.json.decode(b"".join((b"[0" if after_event else b"[", rest, b"]" if closing else b"0]")))
    except msgspec.DecodeError:
        raise _Damaged("no JSON after the last event") from None


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
        if not _cut_off_in_the_list(source):
            try:
                return _load(source, workers, events_view)
            except _Damaged:
                pass
            give_back_freed_memory()  # what the read kept before it met the damage
        return _load_salvaged(source, events_view)
    except (Unstreamable, msgspec.DecodeError, msgspec.ValidationError, OverflowError, ValueError,
            EOFError, OSError, RecursionError):
        return None


# How much of a plain file's end _cut_off_in_the_list looks at.
END_BYTES = 1 << 20


def _cut_off_in_the_list(source: str) -> bool:
    """Whether a plain file was cut off inside its event list, the usual damage (a job killed while
    it wrote its trace): then the salvage reads it at once, not after a read in blocks that finds the
    cut only at the end. It must end in no '}' or ']' (no JSON then), and a scan from the last event
    boundary in its END_BYTES must find no end to the list (junk after a whole trace: that read takes
    it, on two cores)."""
    with open(source, "rb") as handle:
        if handle.read(2) == GZIP_MAGIC:
            return False
        size = os.fstat(handle.fileno()).st_size
        window = os.pread(handle.fileno(), END_BYTES, max(0, size - END_BYTES))
    if window.rstrip()[-1:] in (b"}", b"]", b""):
        return False
    cut = _last_boundary(window, None)
    if cut < 0:
        return False
    state = _ScanState()
    try:
        _scan_block(window[window.find(b"{", cut) :], 0, state)
    except _Damaged:
        return True
    return not state.ended


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


def _file_kind(source: str) -> tuple[bool, Any]:
    """Whether the file is gzipped, and how to open it for its JSON bytes."""
    with open(source, "rb") as handle:
        gzipped = handle.read(2) == GZIP_MAGIC
    return gzipped, gzip.open if gzipped else open


def _close_bar(progress: Any) -> None:
    """Take the progress bar (if any) off the terminal."""
    if progress is not None:
        progress(None)


def _load(source: str, workers: int | None, events_view: bool) -> Trace:
    gzipped, opener = _file_kind(source)
    with opener(source, "rb") as handle:
        head = handle.read(HEAD_BYTES)
    prefix, array_start = _find_array(head)
    total = unpacked_size(source) if not gzipped else os.path.getsize(source)
    progress = _progress_bar(source, unpacked_size(source), total)
    try:
        parts, names, cats = _read_parts(source, array_start, gzipped, total, workers, progress, events_view)
    finally:
        _close_bar(progress)
    end_offset = parts[-1].end_offset
    if end_offset < 0:
        raise _Damaged("the traceEvents array never closes (cut-off file)")
    with opener(source, "rb") as handle:
        handle.seek(end_offset + 1)
        tail = _read_tail(handle, source) if gzipped else handle.read()
    meta, notices = _document_tail(prefix, tail, sum(p.count + p.bad_times for p in parts),
                                   not any(p.lists for p in parts))
    size = end_offset + 1 + len(tail)
    trace = _assemble(source, parts, names, cats, meta, gzipped, size)
    # the in-memory reader's salvage notices come before the others, then what it skipped
    trace.notices[:0] = notices + _skip_notice(parts)
    del parts
    give_back_freed_memory()
    return trace


def _read_parts(source: str, array_start: int, gzipped: bool, total: int, workers: int | None, progress: Any,
                events_view: bool) -> tuple[list[_Part], _Interner, _Interner]:
    """The event array read into parts: two at once (this process and a child) where the file is
    plain, big enough and two cores are there, else one."""
    if workers is None:
        workers = 2 if forked.usable_cores() >= 2 else 1
    if not gzipped and workers > 1 and total >= PARALLEL_MIN_BYTES:
        read = _read_parallel(source, array_start, total, progress, events_view)
        if read is not None:
            return read
    names, cats = _Interner(), _Interner()
    return [_read_range(source, array_start, None, gzipped, names, cats, progress, events_view)], names, cats


def _skip_notice(parts: list[_Part], skipped: core.Skipped | None = None) -> list[str]:
    """The in-memory loader's notice of the events it skipped: unread (`skipped` when the salvage
    walk counted them, else the parts' own tally), or for their times."""
    if skipped is None:
        skipped = core.Skipped()
        entry0 = 0
        for p in parts:
            if p.first_skip is not None and not skipped.first:
                skipped.first = f"event {entry0 + p.first_skip[0]}: {p.first_skip[1]}"
            skipped.count += p.skipped
            entry0 += p.entries()
    notices: list[str] = []
    core.skip_notice(notices, skipped, sum(p.bad_times for p in parts), sum(p.count for p in parts))
    return notices


def _read_tail(handle: io.BufferedIOBase, source: str) -> bytes:
    """The rest of a gzip stream, in blocks, within the unpacked-size limit."""
    limit = core.max_unpacked()
    blocks, at = [], handle.tell()
    while block := handle.read(BLOCK_BYTES):
        at += len(block)
        _check_unpacked(at, limit, source)
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
        core.LOOSE_DECODER.decode(head[:key] + b'"traceEvents":[]}')
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        # the key found is inside a nested object or a string (a decoy): the in-memory loader reads
        # the top-level one
        raise Unstreamable("the first traceEvents key is not the document's") from None
    return head[:key], key + len(_KEY) + bracket + 1


def _document_tail(prefix: bytes | None, tail: bytes, events: int, sure: bool) -> tuple[dict[str, Any], list[str]]:
    """The metadata (the keys before the event list and those after its ']', `tail`), and what the
    in-memory reader's salvage says of a tail that is no JSON: junk after the document's end, or
    keys cut off mid-write. Such a file was left to that reader, whole in memory (a 560 MB trace
    with 12 bytes of junk at the end took 2 GiB, the clean one 210 MiB)."""
    # a bare list with more than whitespace after it is no JSON, if its ']' is the list's (`sure`)
    damaged = prefix is None and sure
    if prefix is not None:
        try:
            return _metadata(prefix, tail), []
        except msgspec.DecodeError:
            damaged = sure
        except (msgspec.ValidationError, RecursionError):
            pass
    elif not tail.strip():
        return {}, []
    if _read_its_own_way(tail):
        raise (_Damaged if damaged else Unstreamable)("a tail the in-memory reader repairs or reads its own way")
    return _salvaged_tail(prefix, tail, events)


def _read_its_own_way(tail: bytes) -> bool:
    """Whether the in-memory reader's salvage reads the tail its own way: a second list; what may be
    more events (the scan took a `[]` among them for the list's end); bytes it repairs first."""
    return _KEY in tail or salvage._EVENT_START.search(tail) is not None or salvage._utf8_error(tail) is not None \
        or bool(salvage._bare_token_hints(b"]" + tail))


def _salvaged_tail(prefix: bytes | None, tail: bytes, events: int) -> tuple[dict[str, Any], list[str]]:
    """The metadata and notices the in-memory reader's salvage reads from a tail that is no JSON."""
    extra, closed, ignored = salvage._tail_metadata(b"]" + tail, 0, prefix is not None)
    meta = salvage._prefix_metadata(prefix) if prefix is not None else {}
    meta.update(extra)
    if not closed:
        return meta, [f"the file is cut off mid-write after its event list: all {events} events read, the keys "
                      "after the list are lost"]
    return meta, [f"ignored {ignored} byte(s) of junk after the end of the trace"] if ignored else []


def _metadata(prefix: bytes, tail: bytes) -> dict[str, Any]:
    doc = core.LOOSE_DECODER.decode(prefix + b'"traceEvents":[]' + tail)
    if bytes(doc.traceEvents) != b"[]":
        # a second "traceEvents" key after the list: the in-memory loader's decode takes the last
        raise Unstreamable("two traceEvents keys")
    return core.metadata(doc)


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
    # the maps in the columns' own widths: int64 ones made int64 blocks, copied again when joined
    name_map, cat_map = name_map.astype(np.int32), cat_map.astype(np.int16)  # past MAX_CATEGORIES _assemble refuses
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

    _check_readable(parts, names, cats)
    string_ids: dict[str, int] = {}
    columns: dict[str, Any] = {}  # ndarrays; Any: mypy matches **columns against every Trace field
    for name, dtype in (("ph", np.uint8), ("cat", np.int16), ("name", np.int32), ("pid", np.int64),
                        ("tid", np.int64), ("flow_id", np.int64), ("ts", np.int64), ("dur", np.int64),
                        ("external_id", np.int64), ("correlation", np.int64), ("stream", np.int64),
                        ("device", np.int64)):
        columns[name] = column(name, dtype)
    if not parts[0].events_view:
        for name in EVENTS_VIEW_ONLY:
            columns[name] = no_ids(columns["ts"].size)
    _number_odd_ids(parts, columns, string_ids)
    if not columns["ts"].size:
        raise Unstreamable("no events: the in-memory loader words that error")
    if core.overlong(columns["dur"]) is not None:
        raise Unstreamable("durations that sum past int64's range: the in-memory loader skips the longest")
    foreign = core.foreign_device_notice(list(cats.ids), columns["cat"])
    blocks, within = _args_index(parts, column)
    raw_args = OffsetArgs(source, blocks, within, gzipped, _joined_preread(parts))
    flows = split_flows(columns)
    give_back_freed_memory()
    trace = Trace(
        source=source,
        names=list(names.ids),
        categories=list(cats.ids),
        **columns,
        raw_args=raw_args,
        metadata=meta,
        string_ids=string_ids,
        notices=[foreign] if foreign else [],
        flows=flows,
    )
    trace.size_bytes = size
    core.read_lane_names(trace)
    origin.settle(trace)
    return trace


def _args_index(parts: list[_Part], column: Callable[[str, Any], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """OffsetArgs' blocks, their rows numbered in the whole trace, and each event's start within its
    block (uint16 where every block spans less than 64 KiB), joined by `column`."""
    row0 = 0
    for p in parts:  # each part numbered its blocks' rows from 0
        p.columns["block"] = [block + (row0, 0, 0) for block in p.columns.get("block", [])]
        row0 += p.count
    blocks = column("block", np.int64).reshape(-1, 3)
    within = column("within", None)  # uint32, int64 past its range
    if not blocks.size or (blocks[:, 2] - blocks[:, 1]).max() <= np.iinfo(np.uint16).max:
        within = within.astype(np.uint16)
    return blocks, within


def _check_readable(parts: list[_Part], names: _Interner, cats: _Interner) -> None:
    """Unstreamable where the in-memory loader words the error (too many categories, no timed event)
    or skips events (step numbers past int64)."""
    if len(cats.ids) > core.MAX_CATEGORIES or not sum(p.timed for p in parts):
        raise Unstreamable("too many categories, or no event with a phase and a ts: the in-memory loader "
                           "words that error")
    if core.absurd_steps(list(names.ids)):
        raise Unstreamable("ProfilerStep numbers past int64: the in-memory loader skips those events")


def _number_odd_ids(parts: list[_Part], columns: dict[str, Any], string_ids: dict[str, int]) -> None:
    """The parts' odd ids into the id columns, in the in-memory loader's order: all pids, then tids,
    then flow ids."""
    for name in ("pid", "tid", "flow_id"):
        row0 = 0
        for p in parts:
            for row, value in p.odd_ids.get(name, []):
                columns[name][row0 + row] = _numeric(value, string_ids, name == "flow_id")
            row0 += p.count


def _joined_preread(parts: list[_Part]) -> dict[int, bytes]:
    """The metadata events' bytes of every part, by row of the whole trace."""
    preread: dict[int, bytes] = {}
    row0 = 0
    for p in parts:
        preread.update({row0 + row: data for row, data in p.preread.items()})
        row0 += p.count
    return preread


def _numeric(value: Any, string_ids: dict[str, int], is_flow: bool) -> int:
    """The in-memory loader's numbering of string (and null) pids, tids and flow ids."""
    number = core.odd_number(value, string_ids, is_flow)
    if number is None:
        raise Unstreamable("a null pid/tid, or one past int64: the in-memory loader notes those")
    return number


# -- damaged files -----------------------------------------------------------------------------

# The streamed salvage reads the file this many bytes at a time...
SALVAGE_READ_BYTES = 4 << 20
# ...and holds at most this many of them at once (the pieces it looks ahead to, an event, the bytes
# after the list); a file that needs more goes to the in-memory loader.
SALVAGE_WINDOW_BYTES = 64 << 20
# Bytes kept before the piece being read: the separator after the last event read (Kineto's ",\n  "),
# to tell whether the next event read follows it.
SALVAGE_KEEP_BEFORE = MAX_SEPARATOR_BYTES
# The bytes before a block that the search for bare NaN/inf/N/A values sees again with it.
_TOKEN_OVERLAP = 64


class _Mended:
    """What the in-memory loader mends before it salvages (bytes that are not UTF-8, bare NaN/inf/N/A
    values), and what it reads its own way (the NULs of a zero-filled block), looked for a block of
    the file at a time, in order: the file is that loader's if any turns up. Bare values are looked
    for only with `tokens` (a gzip stream); in a plain file, only where the salvage found no JSON
    (_check_repairs): the search took a fifth of the read."""

    def __init__(self, tokens: bool) -> None:
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.tokens = tokens
        self.before = b""

    def check(self, block: bytes, final: bool = False) -> None:
        if b"\x00" in block:
            raise Unstreamable("NULs: the in-memory loader counts the zero-filled blocks")
        self._check_utf8(block, final)
        if self.tokens:
            self._check_tokens(block)

    def _check_utf8(self, block: bytes, final: bool) -> None:
        """Decoded as UTF-8, where it is not ASCII (or a character is still open)."""
        try:
            if final or not block.isascii() or self.utf8.getstate()[0]:
                self.utf8.decode(block, final)
        except UnicodeDecodeError:
            raise Unstreamable("bytes that are not UTF-8: the in-memory loader mends them") from None

    def _check_tokens(self, block: bytes) -> None:
        """Bare values, looked for across the blocks' boundaries too."""
        seen = self.before + block
        if salvage._bare_token_hints(seen):
            raise Unstreamable("bare NaN/inf/N/A values: the in-memory loader mends them")
        self.before = seen[-_TOKEN_OVERLAP:]


# Lines around the bytes the salvage found no JSON in are checked for bare values up to this many
# bytes each (one event a line, as Kineto writes, is short); longer ones (a trace on one line): the
# whole file is, as a gzip stream's is.
REPAIR_LINE_BYTES = 16 << 20


def _check_repairs(source: str, unread: list[tuple[int, int]], size: int) -> None:
    """Whether the in-memory loader's repair (bare NaN/inf/N/A values quoted, line by line) changes
    any of the file's lines that hold bytes in `unread`, the spans the salvage found no JSON in:
    elsewhere the salvage read JSON, which has no bare values and starts each line outside a string.
    A change is that loader's to make (the file is then read otherwise)."""
    with open(source, "rb") as handle:
        fd = handle.fileno()
        for start, end in unread:
            first, last = _line_start(fd, start), _line_end(fd, end, size)
            if first < 0 or last < 0 or last - first > REPAIR_LINE_BYTES:
                _check_all_tokens(handle)  # a line longer than REPAIR_LINE_BYTES
                return
            lines = os.pread(fd, last - first, first)
            if salvage._repair(lines, []) is not lines:
                raise Unstreamable("bare NaN/inf/N/A values: the in-memory loader mends them")


_LINE_STEP = 1 << 16


def _line_start(fd: int, at: int) -> int:
    """Where the line holding byte `at` starts; -1 past REPAIR_LINE_BYTES before it."""
    end = at
    while end > 0 and at - end <= REPAIR_LINE_BYTES:
        start = max(0, end - _LINE_STEP)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0 if end == 0 else -1


def _line_end(fd: int, at: int, size: int) -> int:
    """Where the line holding byte `at` ends (its newline, or the end of the file); -1 past
    REPAIR_LINE_BYTES after it."""
    start = at
    while start < size and start - at <= REPAIR_LINE_BYTES:
        newline = os.pread(fd, _LINE_STEP, start).find(b"\n")
        if newline >= 0:
            return start + newline
        start += _LINE_STEP
    return size if start >= size else -1


def _check_all_tokens(handle: io.BufferedIOBase) -> None:
    handle.seek(0)
    mended = _Mended(tokens=True)
    while block := handle.read(SALVAGE_READ_BYTES):
        mended.check(block)


class _WindowPieces(salvage._Pieces):
    """load's pieces, found in a window of the file that moves along as the salvage walk reads it:
    the window holds the bytes from the piece being read (less SALVAGE_KEEP_BEFORE) to those read
    last, SALVAGE_READ_BYTES at a time."""

    def __init__(self, handle: io.BufferedIOBase, list_at: int, mended: _Mended, progress: Any, source: str,
                 limit: int | None) -> None:
        self.handle = handle
        self.mended = mended
        self.progress = progress
        self.source = source
        self.limit = limit  # gzip: the unpacked bytes allowed
        self.data = b""
        self.base = list_at
        self.seps: list[int] = []
        self.starts: list[int] = []
        self.first = 0
        self.read_to = list_at  # offset just past the bytes read
        self.scan_from = list_at  # where the search for pieces goes on
        self.solid = list_at - 1  # the last byte read that is not whitespace
        self.keep = list_at  # the window's bytes before this are no longer needed
        self.eof = False

    def has(self, k: int) -> bool:
        while k >= self.first + len(self.starts) and not self.eof:
            self._more()
        return k < self.first + len(self.starts)

    def release(self, k: int) -> None:
        self.keep = max(self.base, self.start(k) - SALVAGE_KEEP_BEFORE)
        if k - self.first >= 4096:
            del self.seps[: k - self.first], self.starts[: k - self.first]
            self.first = k

    def last_event_end(self, start: int) -> tuple[int, int | None]:
        self.rest(start)
        return super().last_event_end(start)

    def decode_list(self, start: int, end: int) -> list[Any]:
        """The block's events decoded as a clean read decodes them (decoded once, for the columns
        too): where that decode refuses them, the walk's own decode decides, as in memory."""
        segment = b"".join((b"[", self.view(start, end), b"]"))
        try:
            return _EVENTS_DECODER.decode(segment)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            core.EVENT_LIST_DECODER.decode(segment)  # raises for the walk to read piece by piece
        raise Unstreamable("an args id of the wrong type: the in-memory loader reads the event and notes it")

    def rest(self, at: int) -> bytes:
        """The bytes from `at` to the end of the file."""
        while not self.eof:
            self._more()
        return bytes(self.view(at, self.read_to))

    def _more(self) -> None:
        block = self.handle.read(SALVAGE_READ_BYTES)
        self.read_to += len(block)
        _check_unpacked(self.read_to, self.limit, self.source)
        if self.progress is not None:
            self.progress(self.read_to)
        self.mended.check(block, final=not block)
        self.data = b"".join((memoryview(self.data)[self.keep - self.base :], block))
        self.base = self.keep
        if len(self.data) > SALVAGE_WINDOW_BYTES:
            raise Unstreamable("an event, or the bytes after the list, past SALVAGE_WINDOW_BYTES")
        self.eof = not block
        solid = len(block.rstrip())
        if solid:
            self.solid = self.read_to - len(block) + solid - 1
        end = self._scan_end()
        seps, starts = _piece_starts(self.data, self.scan_from - self.base, end - self.base)
        self.seps += (seps + self.base).tolist()
        self.starts += (starts + self.base).tolist()
        self.scan_from = end


    def _scan_end(self) -> int:
        """How far the search for pieces may go: the bytes read, less a ',' or '[' followed by whitespace
        alone at their end (it may start a piece once its '{' is read)."""
        if not self.eof and self.solid >= self.scan_from and self.data[self.solid - self.base] in b",[":
            return self.solid
        return self.read_to


# salvage._EVENT_START's whitespace (a regex's \s): the bytes a piece's '{' may follow its ',' or '[' by
_REGEX_SPACE = np.zeros(256, dtype=bool)
_REGEX_SPACE[list(b" \t\n\r\x0b\x0c")] = True
_PIECE_LOOKBACK = 8


def _piece_starts(data: bytes, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """salvage._EVENT_START's matches in data[lo:hi] (a ',' or '[', whitespace, then a '{'), as the
    offsets of the ',' or '[' and of the '{': found from the '{'s with numpy, the regex tried at each
    ',' took most of a damaged file's read."""
    codes = np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)
    braces = np.flatnonzero(codes == _OPEN_BRACE)
    before = np.full(braces.size, -1, dtype=np.int64)  # the last byte before each '{' that is no space
    open_ = np.ones(braces.size, dtype=bool)
    for back in range(1, _PIECE_LOOKBACK + 1):
        at = braces[open_] - back
        inside = at >= 0
        found = np.zeros(at.size, dtype=bool)
        found[inside] = ~_REGEX_SPACE[codes[at[inside]]]
        where = np.flatnonzero(open_)
        before[where[found]] = at[found]
        open_[where[found | ~inside]] = False
        if not open_.any():
            break
    for k in np.flatnonzero(open_).tolist():  # a long run of whitespace before the '{'
        pos = int(braces[k]) - 1
        while pos >= 0 and _REGEX_SPACE[codes[pos]]:
            pos -= 1
        before[k] = pos
    found = before >= 0
    sep, brace = before[found], braces[found]
    piece = (codes[sep] == ord(",")) | (codes[sep] == ord("["))
    return sep[piece] + lo, brace[piece] + lo


class _ColumnSink:
    """Where the streamed salvage puts the events it keeps: the runs of them that follow each other
    in the file are decoded into `part`, about BLOCK_BYTES at a time, as a clean file's are."""

    def __init__(self, pieces: _WindowPieces, part: _Part, names: _Interner, cats: _Interner, list_at: int) -> None:
        self.pieces = pieces
        self.list_at = list_at
        self.unread: list[tuple[int, int]] = []  # spans of the file found no JSON (not events, nor commas)
        self.part = part
        self.names = names
        self.cats = cats
        self.count = 0  # events kept
        self.chunks: list[bytes] = []  # the run's bytes
        self.start = self.end = -1  # its span in the file
        self.size = 0
        self.events = 0  # its events
        self.decoded: list[_Event] | None = []  # them decoded, while all are (the walk's blocks are)

    def block(self, batch: list[_Event], start: int, end: int) -> None:
        self._add(len(batch), start, end, batch)

    def event(self, event: Any, start: int, end: int) -> None:
        self._add(1, start, end, None)

    def _add(self, events: int, start: int, end: int, decoded: list[_Event] | None) -> None:
        self.count += events
        follows = self._follows(start)
        if not follows:
            self.unread.append((self._after_kept(), start))
        if self.chunks and follows:
            self.chunks.append(bytes(self.pieces.view(self.end, end)))
        else:
            self.flush()
            self.start = start
            self.chunks.append(bytes(self.pieces.view(start, end)))
        self.end = end
        self.events += events
        self.size += len(self.chunks[-1])
        self._keep_decoded(decoded)
        if self.size >= BLOCK_BYTES:
            self.flush()

    def _keep_decoded(self, decoded: list[_Event] | None) -> None:
        """The run's events decoded as they come, while all of them are (None from the first that is not)."""
        if decoded is None or self.decoded is None:
            self.decoded = None
        else:
            self.decoded.extend(decoded)

    def _after_kept(self) -> int:
        """Where the bytes after the last events kept begin (just after the list's '[' before any)."""
        return self.list_at + 1 if self.end < 0 else self.end

    def _follows(self, start: int) -> bool:
        """Whether the events from `start` follow the last ones kept with only a comma between (or
        the list's '[' with only whitespace, the first)."""
        after = self.list_at if self.end < 0 else self.end
        if not 0 < start - after <= SALVAGE_KEEP_BEFORE or after < self.pieces.base:
            return False
        gap = bytes(self.pieces.view(after, start))
        return gap[:1] == (b"[" if self.end < 0 else b",") and not gap[1:].translate(None, b" \t\r\n")

    def unread_to(self, size: int) -> list[tuple[int, int]]:
        """The spans of the file that are no JSON the salvage read, the bytes after the last events kept
        (up to `size`) included."""
        end = self._after_kept()
        return [*self.unread, (end, size)] if end < size else self.unread

    def flush(self) -> None:
        if not self.chunks:
            return
        run = b"".join(self.chunks).rstrip(b" \t\r\n")
        events, origin, decoded = self.events, self.start, self.decoded
        self.chunks, self.size, self.events, self.decoded = [], 0, 0, []
        _read_valid_run(run, origin, events, decoded, self.part, self.names, self.cats)


def _read_valid_run(run: bytes, origin: int, events: int, decoded: list[_Event] | None, part: _Part,
                    names: _Interner, cats: _Interner) -> None:
    """Read `run` into `part`: `events` events that msgspec read (file offset `origin`) and the commas
    between them, `decoded` already where the walk decoded them as a clean read does."""
    segment = bytearray(b"[")
    segment += run
    segment += b"]"
    try:
        offsets = _separator_offsets(segment, origin - 1, part.separator)
        if offsets is not None and offsets[0].size == events:
            with contextlib.suppress(_CountMismatch):  # (decoding here) a nested object laid out like an event
                _add_run(segment, origin, offsets, decoded, part, names, cats)
                return
        offsets = _event_offsets(segment, origin - 1, part)
        if offsets is None:
            starts, ends, _ = _exact_offsets(run, origin)
            offsets = (starts[: ends.size], ends)
        if offsets[0].size != events:
            raise Unstreamable("the run's events are not the salvage's")
        _add_run(segment, origin, offsets, decoded, part, names, cats)
    except msgspec.ValidationError:
        raise Unstreamable("an args id of the wrong type: the in-memory loader reads the event and notes it") from None


def _add_run(segment: bytearray, origin: int, offsets: tuple[np.ndarray, np.ndarray], decoded: list[_Event] | None,
             part: _Part, names: _Interner, cats: _Interner) -> None:
    """The run's events at `offsets` into `part`: as the walk decoded them, else decoded here."""
    if decoded is not None:
        _add_events(decoded, segment, origin - 1, offsets[0], offsets[1], part, names, cats)
    else:
        _decode_run(segment, origin - 1, offsets[0], offsets[1], part, names, cats)


def _load_salvaged(source: str, events_view: bool) -> Trace:
    """A damaged file, walked as the in-memory loader's salvage walks it (salvage.SalvageWalk) but a
    window of the file at a time, the events kept read into columns as a clean file's are: the same
    events, skipped ones and notices as that loader's, in about the memory of a clean read (a 560 MB
    trace cut off at 90% took 2.4 GiB in memory, 2.1 GB ran out of 8 GiB)."""
    gzipped, opener = _file_kind(source)
    part, names, cats = _Part(events_view=events_view), _Interner(), _Interner()
    skipped = core.Skipped()
    progress = _progress_bar(source, unpacked_size(source), unpacked_size(source))
    try:
        with opener(source, "rb") as handle:
            prefix, array_start = _find_array(handle.read(HEAD_BYTES))
            list_at = array_start - 1
            handle.seek(0)
            mended = _Mended(tokens=gzipped)
            mended.check(handle.read(list_at))
            pieces = _WindowPieces(handle, list_at, mended, progress, source,
                                   core.max_unpacked() if gzipped else None)
            sink = _ColumnSink(pieces, part, names, cats, list_at)
            walk = salvage.SalvageWalk(pieces, sink, skipped, list_at)
            walk.run()
            sink.flush()
            tail = pieces.rest(pieces.read_to if walk.tail_at is None else walk.tail_at)
            size = pieces.read_to
            unread = sink.unread_to(size)
            del pieces, sink
        if not gzipped:
            _check_repairs(source, unread, size)
    finally:
        _close_bar(progress)
    if not part.entries():
        raise Unstreamable("no events: the in-memory loader words that error")
    meta = salvage._prefix_metadata(prefix) if prefix is not None else {}
    ending = salvage.salvage_ending(tail, walk, prefix is not None, meta, walk.tail_at or 0)
    del tail
    trace = _assemble(source, [part], names, cats, meta, gzipped, size)
    trace.notices[:0] = ending.notices(part.count + part.bad_times, walk.good_end, size) + _skip_notice([part], skipped)
    del part
    give_back_freed_memory()
    return trace


# -- progress ------------------------------------------------------------------------------


def _progress_bar(source: str, json_size: int, total: int) -> Any:
    """A callable taking the bytes read so far (None: done), or None when no bar is wanted."""
    if json_size < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return None
    # rich's progress bar: ~60 modules, only for a big file on a terminal
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
