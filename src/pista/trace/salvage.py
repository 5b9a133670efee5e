"""Reading what a typed decode refuses: repair (bytes that are not UTF-8, the bare NaN/inf/N/A tokens
older Kineto wrote) and salvage (a file cut off mid-write or damaged in places: the event list split
at event starts, each piece decoded on its own, every complete event kept). The whole-file reader
(pista.trace.load) walks the data in memory, the streamed one (pista.trace.stream) a window of the
file at a time; both walk it with SalvageWalk, so both keep and skip the same events."""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgspec
from msgspec import Raw

from pista.errors import BadTrace
from pista.trace.core import (
    DECODE_ERRORS,
    EVENT_DECODER,
    EVENT_LIST_DECODER,
    LOOSE_DECODER,
    NESTED_TOO_DEEP,
    Event,
    Skipped,
    describe,
    metadata,
)

# a string or an args list splits one event in several).
SALVAGE_MAX_JOIN = 8
# Salvage decodes this many pieces at once while they are intact (a Python loop per event is slow).
SALVAGE_BLOCK = 512

# -- repair ----------------------------------------------------------------------------------

# A JSON string, or a bare non-JSON number token in value position (`"bw": N/A`, `"x": inf`).
_BARE_TOKEN = rb"[-+]?(?:NaN|nan|Infinity|infinity|inf|N/A)"
# found with bytes.find first: far faster than a regex over a big file
_BARE_TOKEN_TEXTS = (b"NaN", b"nan", b"inf", b"Inf", b"N/A")
_BARE_TOKEN_HINT = re.compile(rb"[:,\[]\s*" + _BARE_TOKEN + rb"\s*[,}\]]")
# A string cut off by the line's end (a file cut mid-write) matches up to there: were the closing
# quote required, each '"' of a long run of \" would start a match that fails only at the end
# (quadratic: 64 KB took 10 s).
_STRING_OR_BARE_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|([:,\[]\s*)(' + _BARE_TOKEN
                                   + rb")(?=\s*[,}\]])")


def _repair(data: bytes, notices: list[str]) -> bytes:
    """Make invalid UTF-8 and bare NaN/inf/N/A tokens readable; returns `data` itself if neither."""
    err = _utf8_error(data)
    if err is not None:
        data = _mend_utf8(data, err, notices)
    hints = _bare_token_hints(data)
    return _quote_bare_tokens(data, hints, notices) if hints else data


def _mend_utf8(data: bytes, err: UnicodeDecodeError, notices: list[str]) -> bytes:
    """`data` cut before a character the end cuts off, else with the bytes that are no UTF-8 replaced (a notice)."""
    if err.reason == "unexpected end of data" and err.end == len(data):
        return data[: err.start]  # cut off inside a multi-byte character: salvage sees the cut
    data = _utf8_replaced(data)
    notices.append(f"bytes that are not UTF-8 (first at byte {err.start}) were replaced by U+FFFD")
    return data


def _quote_bare_tokens(data: bytes, hints: list[int], notices: list[str]) -> bytes:
    """`data` with the bare values at `hints` (_bare_token_hints) quoted, with a notice; itself if none is."""
    count = 0

    def quote(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match.group(2) is None:
            return match.group(0)
        count += 1
        return match.group(1) + b'"' + match.group(2) + b'"'

    # Only the lines holding a candidate are rewritten: a JSON string never spans a newline,
    # so each line starts outside one (a trace on one line is rewritten whole).
    pieces, done = [], 0
    for at in hints:
        if at < done:
            continue
        line_start = data.rfind(b"\n", done, at) + 1 or done
        line_end = data.find(b"\n", at)
        line_end = len(data) if line_end < 0 else line_end
        pieces += [data[done:line_start], _STRING_OR_BARE_TOKEN.sub(quote, data[line_start:line_end])]
        done = line_end
    if count:
        notices.append(f"read {count} bare NaN/Infinity/N/A value(s) (not JSON; old Kineto wrote "
                       "N/A and inf) as strings")
        data = b"".join([*pieces, data[done:]])
    return data


# UTF-8 is checked and mended this many bytes at a time: decoding the whole file held it twice more
# (as text, then as bytes again).
UTF8_CHUNK = 16 << 20
# A UTF-8 character is at most this many bytes: a chunk that ends inside one takes the rest of it.
UTF8_MAX_CHAR = 4


def _utf8_chunks(data: bytes) -> Iterator[tuple[int, int]]:
    """Spans of `data` of about UTF8_CHUNK bytes that end between two characters (a span ends inside
    one only where the bytes are no UTF-8 there anyway, as a whole decode would find too)."""
    start = 0
    while start < len(data):
        end = min(start + UTF8_CHUNK, len(data))
        # continuation bytes (10xxxxxx) belong to the character before: the span takes them
        for _ in range(UTF8_MAX_CHAR - 1):
            if end < len(data) and data[end] & 0xC0 == 0x80:
                end += 1
        yield start, end
        start = end


def _utf8_error(data: bytes) -> UnicodeDecodeError | None:
    """The first UTF-8 error in `data` (offsets into it), or None; checked a chunk at a time."""
    if data.isascii():
        return None
    view = memoryview(data)
    for start, end in _utf8_chunks(data):
        try:
            codecs.utf_8_decode(view[start:end], "strict", True)  # final: a cut character is an error
        except UnicodeDecodeError as err:
            return UnicodeDecodeError("utf-8", data, start + err.start, start + err.end, err.reason)
    return None


def _utf8_replaced(data: bytes) -> bytes:
    """`data` with every byte that is no UTF-8 replaced by U+FFFD, a chunk at a time."""
    out = io.BytesIO()
    view = memoryview(data)
    for start, end in _utf8_chunks(data):
        out.write(codecs.utf_8_decode(view[start:end], "replace", True)[0].encode())
    return out.getvalue()


def _bare_token_hints(data: bytes) -> list[int]:
    """Sorted offsets of what may be a bare NaN/inf/N/A value: each occurrence of the text (found
    with bytes.find, fast) whose surroundings look like a value position."""
    hints = set()
    for token in _BARE_TOKEN_TEXTS:
        at = data.find(token)
        while at >= 0:
            window_start = max(0, at - 24)
            if _BARE_TOKEN_HINT.search(data, window_start, at + len(token) + 24):
                hints.add(at)
            at = data.find(token, at + 1)
    return sorted(hints)


# -- salvage ---------------------------------------------------------------------------------

# Where an event may start: '{' after the list's '[' or after a ','. False starts (inside strings,
# lists of objects in args) only split an event, and joining the pieces back mends that.
_EVENT_START = re.compile(rb"[\[,]\s*+(?=\{)")
_ZEROED = re.compile(rb"\x00+")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# possessive: a long run of whitespace that no ']' ends must not be tried at every split of the run
_LIST_END = re.compile(rb"\s*+(?:,\s*+)?\]")
_TRAILING_AT = re.compile(r"trailing characters \(byte (\d+)\)")


def _salvage(data: bytes, source: str, notices: list[str],
             skipped: Skipped) -> tuple[list[Event], dict[str, Any], Skipped]:
    """A file cut off mid-write or damaged in places: keep every event that decodes on its own."""
    keyed, list_at, meta = _event_list(data, source)
    sink = _EventList()
    walk = SalvageWalk(_Pieces(data, list_at), sink, skipped, list_at)
    walk.run()
    events = sink.events
    ending = salvage_ending(data, walk, keyed, meta)
    if not events:
        raise _nothing_salvaged(data, source, ending)
    notices += ending.notices(len(events), walk.good_end, len(data))
    list_end = len(data) if walk.tail_at is None else walk.tail_at  # junk after the trace has its own notice
    _note_zeroed(data, list_end, notices)
    return events, meta, skipped


def _event_list(data: bytes, source: str) -> tuple[bool, int, dict[str, Any]]:
    """Whether the list is under a "traceEvents" key, the offset of its '[', and the metadata before it;
    a BadTrace where there is no list to salvage."""
    key = _EVENTS_KEY.search(data)
    start = re.match(rb"\s*", data).end()  # type: ignore[union-attr]
    if key is not None:
        return True, key.end() - 1, _prefix_metadata(data[: key.start()])
    if data[start : start + 1] == b"[":
        return False, start, {}
    whole_error = _first_error(data)
    if whole_error == describe("Input data was truncated"):
        raise BadTrace(source, f"cut off before the first complete event ({whole_error})")
    raise BadTrace(source, f"not valid JSON ({whole_error}), and no 'traceEvents' list in it to salvage")


def _nothing_salvaged(data: bytes, source: str, ending: SalvageEnding) -> BadTrace:
    """The error of a salvage that read no event: too deep, cut off, or no JSON."""
    whole_error = _first_error(data)
    if whole_error == NESTED_TOO_DEEP:
        return BadTrace(source, f"JSON {NESTED_TOO_DEEP}; no event could be read")
    if ending.cut_off or whole_error == describe("Input data was truncated"):
        return BadTrace(source, f"cut off before the first complete event ({whole_error})")
    return BadTrace(source, f"not valid JSON ({whole_error}), and no complete event in it to salvage")


def _note_zeroed(data: bytes, list_end: int, notices: list[str]) -> None:
    """A notice of the zero-filled blocks before `list_end`, if any."""
    zeroed = [m.span() for m in _ZEROED.finditer(data, 0, list_end)]
    if zeroed:
        # a crash or power loss leaves blocks of the file zero-filled: events that lay there leave
        # nothing to count, so the skipped count above misses them
        total = sum(b - a for a, b in zeroed)
        notices.append(f"{total:,} byte(s) of the file are zeroed (NUL), in {len(zeroed)} place(s), the first "
                       f"at byte {zeroed[0][0]:,}: the events written there are lost and cannot be counted")


class SalvageEnding(NamedTuple):
    """How salvage found the end: cut off or not, whether the event list closed, junk after it."""

    cut_off: bool
    list_closed: bool
    ignored: int

    def notices(self, kept: int, good_end: int, size: int) -> list[str]:
        """What the salvage notices say (the zeroed blocks aside): `kept` events read, the last
        complete one ending at `good_end` of `size` bytes."""
        out = []
        if self.cut_off and self.list_closed:
            out.append(f"the file is cut off mid-write after its event list: all {kept} events read, "
                       "the keys after the list are lost")
        elif self.cut_off:
            out.append(f"the file is cut off mid-write (not valid JSON at the end); salvaged {kept} "
                       f"complete event(s) from its first {good_end:,} of {size:,} bytes; the event "
                       "being written and whatever followed it are lost")
        if self.ignored:
            out.append(f"ignored {self.ignored} byte(s) of junk after the end of the trace")
        return out


def salvage_ending(tail: bytes, walk: SalvageWalk, keyed: bool, meta: dict[str, Any], at: int = 0) -> SalvageEnding:
    """Read the keys after the event list into `meta`; `tail` holds the data from its byte `at` on
    (the whole data in memory, at 0; from the walk's tail_at on, streamed)."""
    tail_at = None if walk.tail_at is None else walk.tail_at - at
    extra_meta, closed, ignored = _tail_metadata(tail, tail_at, keyed)
    meta.update(extra_meta)
    list_closed = tail_at is not None and _LIST_END.match(tail, tail_at) is not None
    return SalvageEnding(walk.cut_off or (tail_at is not None and not closed), list_closed, ignored)


class _EventList:
    """Where the in-memory salvage puts the events it reads."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    @property
    def count(self) -> int:
        return len(self.events)

    def block(self, batch: list[Event], start: int, end: int) -> None:
        self.events.extend(batch)

    def event(self, event: Event, start: int, end: int) -> None:
        self.events.append(event)


class _Pieces:
    """Salvage's view of the data: its bytes and the pieces they split into (each an event, or part
    of one, from a '{' after the list's '[' or a ','). In memory: all of them, found at once; the
    streamed reader (pista.trace.stream) finds them a window of the file at a time. Offsets are the
    data's; pieces are numbered from the list's first."""

    def __init__(self, data: bytes, list_at: int) -> None:
        self.data = data
        self.base = 0  # offset of data[0]
        self.seps, self.starts = _event_starts(data, list_at)
        self.first = 0  # number of the piece at seps[0]

    def has(self, k: int) -> bool:
        """Whether piece k exists."""
        return k < self.first + len(self.starts)

    def sep(self, k: int) -> int:
        """Where piece k-1 ends: the ',' or '[' before piece k (or a block of NULs)."""
        return self.seps[k - self.first]

    def start(self, k: int) -> int:
        """Where piece k begins: its '{'."""
        return self.starts[k - self.first]

    def release(self, k: int) -> None:
        """Pieces before k are no longer read."""

    def view(self, start: int, end: int) -> memoryview:
        return memoryview(self.data)[start - self.base : end - self.base]

    def decode_list(self, start: int, end: int) -> list[Event]:
        return EVENT_LIST_DECODER.decode(b"".join((b"[", self.view(start, end), b"]")))

    def decode_one(self, start: int, end: int) -> Event:
        return EVENT_DECODER.decode(self.view(start, end))

    def object_end(self, start: int, err: BaseException) -> int | None:
        """_object_end of the object at `start` (its length), given the error decoding from there."""
        return _object_end(self.data, start - self.base, err)

    def list_ends_at(self, at: int) -> bool:
        return _LIST_END.match(self.data, at - self.base) is not None

    def last_event_end(self, start: int) -> tuple[int, int | None]:
        """_last_event_end of the last piece, which starts at `start`."""
        end, after = _last_event_end(self.data, start - self.base)
        return end + self.base, None if after is None else after + self.base


class SalvageWalk:
    """Salvage's walk over the pieces: a block of SALVAGE_BLOCK pieces decoded as one list while they
    are intact, else piece by piece, joining up to SALVAGE_MAX_JOIN pieces where one alone does not
    decode. Events go to `sink` (its block and event methods, with their byte spans), skipped ones
    to `skipped`. Both readers walk this way, so both keep and skip the same events."""

    def __init__(self, pieces: Any, sink: Any, skipped: Skipped, list_at: int) -> None:
        self.pieces = pieces
        self.sink = sink
        self.skipped = skipped
        self.good_end = list_at + 1  # where the last event read ends
        self.tail_at: int | None = None  # where the bytes after the last event begin, once it decoded
        self.cut_off = False
        # pieces that failed even joined up to the end of the data: fragments of a last event cut off
        # mid-write (not counted) unless a later piece decodes after all (then they were damage)
        self.unsure: list[BaseException | None] = []
        self.piecewise_until = 0  # a block that failed as a whole is read piece by piece up to here

    def run(self) -> None:
        i: int | None = 0
        pieces = self.pieces
        while i is not None and pieces.has(i):
            pieces.release(i)
            if i >= self.piecewise_until and pieces.has(i + SALVAGE_BLOCK):
                # the usual case, intact events: a whole block of pieces decodes as one list
                after = self._block(i)
                if after is not None:
                    i = after
                    continue
            i = self._piece(i)

    def _skip(self, errors: list[BaseException | None]) -> None:
        for error in errors:
            self.skipped.add(self.sink.count + self.skipped.count, error or "unreadable")

    def _block(self, i: int) -> int | None:
        start, end = self.pieces.start(i), self.pieces.sep(i + SALVAGE_BLOCK)
        try:
            batch = self.pieces.decode_list(start, end)
        except (msgspec.ValidationError, *DECODE_ERRORS):
            self.piecewise_until = i + SALVAGE_BLOCK
            return None
        self._skip_unsure()
        self.sink.block(batch, start, end)
        self.good_end = end
        return i + SALVAGE_BLOCK

    def _piece(self, i: int) -> int | None:
        """Read piece i, joined to the next ones if need be; the next piece to read (None: done)."""
        pieces = self.pieces
        result, j, end, after, last_error, list_ends_here = self._join(i)
        if result is None:
            return self._unread(i, j, last_error)
        self._skip_unsure()
        if isinstance(result, BaseException):
            self._skip([result])
        else:
            self.sink.event(result, pieces.start(i), end)
        self.good_end = end
        if list_ends_here:
            self.tail_at = after
            return None
        if not pieces.has(j + 1):
            self.tail_at = after
        return j + 1

    def _unread(self, i: int, j: int, last_error: BaseException | None) -> int | None:
        """Piece i, joined up to piece j, read as no event: the file's end cut it off (done), or it is
        unsure while no piece follows j, else skipped; the next piece to read."""
        pieces = self.pieces
        if not pieces.has(i + 1):
            self.cut_off = True  # the last event was being written when the file ended
            return None
        if not pieces.has(j + 1):
            self.unsure.append(last_error)
        else:
            self._skip_unsure(last_error)
        return i + 1

    def _skip_unsure(self, *errors: BaseException | None) -> None:
        """The unsure pieces were damage after all (a later piece was read): skipped, then `errors`."""
        self._skip([*self.unsure, *errors])
        self.unsure = []

    def _join(self, i: int) -> tuple[Event | BaseException | None, int, int, int | None, BaseException | None, bool]:
        """Piece i alone, else joined to the next (up to SALVAGE_MAX_JOIN pieces): (the event, or the
        error of one with a field of the wrong type, or None; the last piece joined; where the event
        ends; where the bytes after the list begin, if it is the last; the last decode error; whether
        the list ends after it)."""
        pieces = self.pieces
        start = pieces.start(i)
        result: Event | BaseException | None = None
        last_error: BaseException | None = None
        after: int | None = None
        stop = i + SALVAGE_MAX_JOIN if pieces.has(i + SALVAGE_MAX_JOIN - 1) else pieces.first + len(pieces.starts)
        for j in range(i, stop):  # noqa: B007 - j is returned
            end, after = (pieces.sep(j + 1), None) if pieces.has(j + 1) else pieces.last_event_end(start)
            try:
                result = pieces.decode_one(start, end)
            except msgspec.ValidationError as err:
                result = err  # readable JSON, a field of the wrong type
            except DECODE_ERRORS as err:
                last_error = err
                if j == i and pieces.has(j + 1):
                    last = self._last_event(start, err)
                    if last is not None:
                        return last[0], j, last[1], last[1], last_error, True
                continue
            break
        return result, j, end, after, last_error, False

    def _last_event(self, start: int, err: BaseException) -> tuple[Event | BaseException, int] | None:
        """The piece at `start` as the list's last event, where the list ends after it and objects in the
        keys that follow ("deviceProperties": [{...}] after the events) made more pieces: (the event, or
        the error of one with a field of the wrong type; where it ends); None where it is not."""
        pieces = self.pieces
        length = pieces.object_end(start, err)
        if length is None or not pieces.list_ends_at(start + length):
            return None
        end = start + length
        try:
            return pieces.decode_one(start, end), end
        except msgspec.ValidationError as inner:
            return inner, end
        except DECODE_ERRORS:
            return None


# How far back from a block of NULs to look for the comma before it (Kineto's separator is ",\n  ").
COMMA_LOOKBACK = 64
# After a block of NULs, what may come before the next event's '{': the comma may follow the block.
_AFTER_ZEROED = re.compile(rb"\s*+(?:,\s*+(?=\{))?")


def _event_starts(data: bytes, list_at: int) -> tuple[list[int], list[int]]:
    """Where each piece ends (the ',' or '[' before an event start, or a block of NULs) and where
    the next begins (its '{'). A crash zero-fills what it had not written: an event right after
    such a block starts a piece too (it was read as the end of the one before, and lost). The
    blocks are skipped by a search for NULs alone: the start pattern tried at every NUL of a
    4 GB block took minutes."""
    seps: list[int] = []
    starts: list[int] = []
    at = list_at
    for zeroed in _ZEROED.finditer(data, list_at):
        for match in _EVENT_START.finditer(data, at, zeroed.start()):
            seps.append(match.start())
            starts.append(match.end())
        at = _AFTER_ZEROED.match(data, zeroed.end()).end()  # type: ignore[union-attr]  # matches '' too
        if data[at : at + 1] == b"{":
            # the piece before ends at its comma, if one comes right before the block
            window = max(list_at, zeroed.start() - COMMA_LOOKBACK)
            before = data[window : zeroed.start()].rstrip()
            seps.append(window + len(before) - 1 if before.endswith((b",", b"[")) else zeroed.start())
            starts.append(at)
    for match in _EVENT_START.finditer(data, at):
        seps.append(match.start())
        starts.append(match.end())
    return seps, starts


def _last_event_end(data: bytes, start: int) -> tuple[int, int | None]:
    """The end of the value that starts at `start` when the list's end follows it (then also where
    the rest begins); else the end of the data and None (cut off, or damaged)."""
    try:
        msgspec.json.decode(memoryview(data)[start:], type=Raw)
    except DECODE_ERRORS as err:
        stop = _object_end(data, start, err)
        if stop is not None:
            return start + stop, start + stop
        return len(data), None
    return len(data), len(data)  # the data ends right after this event: the list is never closed


# How many of the last '}' before a "trailing characters" error _object_end tries.
OBJECT_END_TRIES = 3


def _object_end(buf: bytes, start: int, err: BaseException) -> int | None:
    """Where the JSON object at buf[start] ends, less `start`, given msgspec's "trailing characters"
    error for the bytes from there. Its offset lands on or just past the first trailing character,
    so try the last few '}' up to there. Views, not slices: a slice of a big damaged file is a copy."""
    trailing = _TRAILING_AT.search(str(err))
    if trailing is None:
        return None
    bound = start + int(trailing.group(1)) + 1
    view = memoryview(buf)
    for _ in range(OBJECT_END_TRIES):
        close = buf.rfind(b"}", start, bound)
        if close < 0:
            return None
        try:
            msgspec.json.decode(view[start : close + 1], type=Raw)
        except DECODE_ERRORS:
            bound = close
            continue
        return close + 1 - start
    return None


def _first_error(data: bytes) -> str:
    try:
        msgspec.json.decode(data, type=Raw)
    except DECODE_ERRORS as err:
        return describe(err)
    return "unreadable"


def _prefix_metadata(prefix: bytes) -> dict[str, Any]:
    """The top-level keys before "traceEvents" (Kineto writes deviceProperties and friends there)."""
    try:
        return metadata(LOOSE_DECODER.decode(prefix + b'"traceEvents": []}'))
    except (*DECODE_ERRORS, msgspec.ValidationError):
        return {}


# The keys after the event list (traceName; Kineto writes the big ones before it) are read from at
# most this many bytes: past it they are no metadata but junk, such as a zero-filled tail, and
# copying them all to read them held a damaged file twice.
TAIL_MAX_BYTES = 64 << 20
# Junk after the document is measured this many bytes at a time (a trailing run of whitespace).
JUNK_STEP = 1 << 20
_SPACE_RUN = re.compile(rb"\s*+")


def _tail_metadata(data: bytes, tail_at: int | None, keyed: bool) -> tuple[dict[str, Any], bool, int]:
    """After the last event: the list's ']' and, in an object, the keys after it (traceName).
    Returns (metadata, whether the document is closed, bytes of junk after its end)."""
    if tail_at is None:
        return {}, False, 0
    list_end = _LIST_END.match(data, tail_at)  # a trailing comma after the last event is no loss
    if list_end is None:
        return {}, False, 0
    at = _SPACE_RUN.match(data, list_end.end()).end()  # type: ignore[union-attr]  # matches '' too
    if not keyed:
        return {}, True, _junk(data, at)
    if data[at : at + 1] not in (b",", b"}"):
        return {}, False, 0
    # the keys after the list as an object of their own: '{' for the ',' (or before the '}')
    skip = 1 if data[at : at + 1] == b"," else 0
    rest = b"".join((b"{", memoryview(data)[at + skip : at + skip + TAIL_MAX_BYTES]))
    try:
        return metadata(LOOSE_DECODER.decode(rest)), True, _junk(data, at + skip + len(rest) - 1)
    except (*DECODE_ERRORS, msgspec.ValidationError) as err:
        return _keys_before_junk(data, rest, err, at + skip)


def _keys_before_junk(data: bytes, rest: bytes, err: BaseException, at: int) -> tuple[dict[str, Any], bool, int]:
    """_tail_metadata where the keys after the list (`rest`, from data[at]) do not decode whole: those
    of the object it starts with, if one ends there (junk after it), else none and not closed."""
    stop = _object_end(rest, 0, err)
    if stop is None:
        return {}, False, 0
    try:
        meta = metadata(LOOSE_DECODER.decode(memoryview(rest)[:stop]))
    except (*DECODE_ERRORS, msgspec.ValidationError):
        meta = {}
    return meta, True, _junk(data, at + stop - 1)


def _junk(data: bytes, at: int) -> int:
    """How many bytes lie from data[at] to the end, less the whitespace around them."""
    first = _SPACE_RUN.match(data, at).end()  # type: ignore[union-attr]  # matches the empty string too
    last = len(data)
    while last > first:
        piece = data[max(first, last - JUNK_STEP) : last]
        kept = len(piece.rstrip())
        last -= len(piece) - kept
        if kept:
            break
    return last - first

