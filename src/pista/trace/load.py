"""Trace file -> columnar Trace.

The fast path is one typed msgspec decode: only the fields analysis reads are materialised, and
each event's `args` stays a `msgspec.Raw` slice of the input until someone asks for it. Only when
the typed decode refuses the file do slower paths take over, in this order:

- lenient: the JSON is fine but some event has a field of the wrong type; decode event by event
  and skip the ones that cannot be read;
- repair: bytes that are not UTF-8, and the bare `NaN`/`inf`/`N/A` tokens older Kineto wrote into
  args, are made readable;
- salvage: the file is cut off mid-write or damaged in places; split the event list at event
  starts, decode each piece on its own, keep every complete event.

Whatever was skipped or repaired is said in `Trace.notices`; a file with nothing to read raises
`BadTrace` with a one-line reason. The event structs and the rules that turn events into columns are
pista.trace.core's, shared with the streamed reader (pista.trace.stream), which takes big plain files;
repair and salvage are pista.trace.salvage's.
"""
from __future__ import annotations

import gzip
import io
import os
import re
import stat
import zlib
from collections.abc import Callable
from decimal import Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np
from msgspec import Raw, Struct

from pista.errors import BadTrace
from pista.trace import origin
from pista.trace.core import (
    ABSENT,
    DECODE_ERRORS,
    EVENT_DECODER,
    EVENT_ERRORS,
    EVENT_LIST_DECODER,
    EXACT_FROM_US,
    GZIP_MAGIC,
    INT64_MAX,
    INT64_MIN,
    LOOSE_DECODER,
    Document,
    Event,
    IdArgs,
    Interner,
    LooseDocument,
    Skipped,
    metadata,
    odd_number,
    ph_code,
    read_lane_names,
    skip_notice,
    string_columns,
    times_ns,
    untimed,
)
from pista.trace.core import (
    MAX_CATEGORIES as MAX_CATEGORIES,
)
from pista.trace.core import MAX_TIME_US as MAX_TIME_US  # noqa: F401 - re-exported: the readers' limits
from pista.trace.core import (
    NotATrace as NotATrace,
)
from pista.trace.core import (
    absurd_steps as absurd_steps,
)
from pista.trace.core import (
    bad_times as bad_times,
)
from pista.trace.core import describe as _describe  # noqa: F401 - re-exported
from pista.trace.core import (
    foreign_device_notice as foreign_device_notice,
)
from pista.trace.core import max_unpacked as max_unpacked
from pista.trace.core import (
    overlong as overlong,
)
from pista.trace.core import text_number as text_number
from pista.trace.core import (
    too_big as too_big,
)
from pista.trace.model import NO_ID, Trace, split_flows
from pista.trace.salvage import _EVENT_START as _EVENT_START
from pista.trace.salvage import SalvageWalk as SalvageWalk
from pista.trace.salvage import _bare_token_hints as _bare_token_hints
from pista.trace.salvage import _Pieces as _Pieces
from pista.trace.salvage import _prefix_metadata as _prefix_metadata
from pista.trace.salvage import _repair as _repair
from pista.trace.salvage import _salvage
from pista.trace.salvage import _tail_metadata as _tail_metadata
from pista.trace.salvage import _utf8_error as _utf8_error
from pista.trace.salvage import salvage_ending as salvage_ending

# The names the readers shared under their old home (tests and callers still reach them here).
_Skipped, _metadata, _LOOSE_DECODER, _EVENT_DECODER, _EVENT_LIST_DECODER = (Skipped, metadata, LOOSE_DECODER,
                                                                            EVENT_DECODER, EVENT_LIST_DECODER)
_read_lane_names, _Event = read_lane_names, Event
# RAM it cannot finish, so a bigger stream is refused instead of running the machine out of memory.
IN_MEMORY_RAM_SHARE = 0.25
# Unpacked in pieces of this size, counted as they come (a trace up to this size is one piece, not
# copied again to join pieces: as fast as gzip.decompress).
GUNZIP_CHUNK = 64 << 20
# Salvage: how many pieces to join when one piece alone does not decode (a false event start inside

# Other formats people pass by mistake, by their first bytes.
_OTHER_FORMATS = (
    (b"PK\x03\x04", "a zip archive, not a trace (unzip it and pass the .json inside)"),
    (b"BZh", "bzip2-compressed; pista reads .json and .json.gz (bunzip2 it first)"),
    (b"\xfd7zXZ\x00", "xz-compressed; pista reads .json and .json.gz (unxz it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed; pista reads .json and .json.gz (unzstd it first)"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"



class _Times(Struct, gc=False):
    ts: Raw = ABSENT
    dur: Raw = ABSENT


class _TimesDocument(Struct, gc=False):
    traceEvents: list[_Times]  # noqa: N815


_DOC_DECODER = msgspec.json.Decoder(Document)
_ID_DECODER = msgspec.json.Decoder(IdArgs | None)
_TIMES_DECODER = msgspec.json.Decoder(_TimesDocument)
_TIMES_LIST_DECODER = msgspec.json.Decoder(list[_Times])
_TIMES_ONE_DECODER = msgspec.json.Decoder(_Times)
_EXACT = "_exact_ns"  # meta key: the exact (ts, dur) ns columns, aligned with the decoded events
_TOP_DECODER = msgspec.json.Decoder(LooseDocument | list[Raw])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[Raw])



# -- reading the file ------------------------------------------------------------------------


class Oversize(Exception):
    """The unpacked JSON passed the size the caller could take."""



def _in_memory_limit() -> int:
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return max_unpacked()
    return min(max_unpacked(), int(ram * IN_MEMORY_RAM_SHARE))


def read_bytes(path: str | os.PathLike[str], cap: int | None = None) -> tuple[bytes, list[str]]:
    """The file's JSON bytes, un-gzipped; a cut-off gzip stream yields what it holds, with a notice.
    A gzip stream that unpacks past `cap` bytes raises Oversize; past what fits in memory, BadTrace."""
    p = Path(path)
    _check_trace_file(p)
    data = _file_bytes(p)
    if data[:2] == GZIP_MAGIC:
        return _unpacked(p, data, cap)
    if not data.strip():
        raise BadTrace(p, "empty file")
    return data, []


def _check_trace_file(p: Path) -> None:
    """A BadTrace unless `p` is there and a regular file (or a pipe)."""
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise BadTrace(p, "no such file") from None
    except OSError as err:
        raise BadTrace(p, f"cannot read: {err.strerror or err}") from None
    if stat.S_ISDIR(mode):
        raise BadTrace(p, "is a directory, not a trace file (pass the .json or .json.gz inside it)")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise BadTrace(p, "not a regular file")


def _file_bytes(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as err:
        raise BadTrace(p, f"cannot read: {err.strerror or err}") from None
    except MemoryError:
        raise BadTrace(p, "too big to read into memory") from None


def _unpacked(p: Path, data: bytes, cap: int | None) -> tuple[bytes, list[str]]:
    """A gzipped file's JSON bytes (read_bytes' `cap`), with a notice where the stream is cut off."""
    limit = _in_memory_limit()
    try:
        data, whole = _gunzip(data, limit if cap is None else min(cap, limit))
    except Oversize:
        if cap is not None and cap < limit:
            raise
        raise too_big(p, limit) from None
    notices: list[str] = []
    if not whole:
        if data.lstrip()[:1] not in (b"{", b"["):  # nothing, or garbage: not a JSON text cut short
            raise BadTrace(p, "broken gzip stream: nothing readable could be decompressed") from None
        notices.append(f"the gzip stream is cut off or damaged; reading the {len(data):,} bytes "
                       "that decompressed")
    if not data.strip():
        raise BadTrace(p, "empty trace: the gzip stream holds nothing")
    return data, notices


def _gunzip(data: bytes, cap: int) -> tuple[bytes, bool]:
    """Every member of the gzip stream unpacked, counting the real bytes (the trailer's size is
    the last member's, mod 2^32: a bomb's says what it likes); (bytes, whether the stream was
    whole). Raises Oversize past `cap` bytes."""
    # the pieces gather in a BytesIO, which grows in place and hands its buffer over uncopied: a
    # list of pieces and their join held the unpacked bytes twice (a 4 MB bomb of NULs: 2 x 4 GB)
    first, more, size = b"", None, 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unpacked:
            while chunk := unpacked.read(GUNZIP_CHUNK):
                size += len(chunk)
                if size > cap:
                    raise Oversize
                if more is None and not first:
                    first = chunk  # a trace of one piece is returned as it is
                    continue
                if more is None:
                    more = io.BytesIO()
                    more.write(first)
                    first = b""
                more.write(chunk)
    except (EOFError, OSError, zlib.error):
        first, more = b"", None  # let go before unpacking again
        return _gunzip_prefix(data, cap), False
    return (first if more is None else more.getvalue()), True


def _gunzip_prefix(data: bytes, cap: int) -> bytes:
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = io.BytesIO()  # handed over uncopied: bytes(bytearray) held two copies at the end
    step = 1 << 16
    for start in range(0, len(data), step):
        try:
            out.write(decoder.decompress(data[start : start + step]))
        except zlib.error:
            break
        if out.tell() > cap:
            raise Oversize
        if decoder.eof:
            break
    return out.getvalue()


# Traces whose JSON is at least this big are read in blocks (pista.trace.stream): faster on two
# cores and without the whole file, or a Python object per event, in memory.
STREAM_MIN_BYTES = 16 << 20


def load_trace(path: str | os.PathLike[str], events_view: bool = True) -> Trace:
    """Load a torch.profiler / Kineto chrome trace, plain or gzipped. Without `events_view` a big
    file's read may leave out the columns only `pista sql`'s events view shows (stream.EVENTS_VIEW_ONLY)."""
    trace, tried = _load_streamed(path, events_view)
    if _streamed_will_do(trace):
        return trace  # type: ignore[return-value]
    try:
        # a regular file can be read again, streamed, if it turns out big
        data, notices = read_bytes(path, cap=None if tried or not os.path.isfile(path) else STREAM_MIN_BYTES)
    except Oversize:
        # a gzip stream whose trailer understates it (several members, or a bomb): big, so streamed,
        # which counts what it unpacks
        trace = _stream(path, events_view)
        if _streamed_will_do(trace):
            return trace  # type: ignore[return-value]
        data, notices = read_bytes(path)
    return decode_trace(data, str(path), notices)


def _streamed_will_do(trace: Trace | None) -> bool:
    # epoch-µs times need their digits parsed exactly: the in-memory reader does that, one core for both
    return trace is not None and not (trace.ts.size and int(np.abs(trace.ts).max()) >= EXACT_FROM_US * 1000)


def _load_streamed(path: str | os.PathLike[str], events_view: bool) -> tuple[Trace | None, bool]:
    """The streamed reader for a big regular file, and whether it was tried; None (read it whole)
    for anything else."""
    try:
        # a file this small cannot unpack to STREAM_MIN_BYTES (traces gzip ~15x): skip the import
        if not os.path.isfile(path) or os.path.getsize(path) < STREAM_MIN_BYTES // 100:
            return None, False
        # start-up: the streamed reader (and the fork it may use) only for a file that may be big
        from pista.trace import stream

        if stream.unpacked_size(path) < STREAM_MIN_BYTES:
            return None, False
    except (OSError, EOFError, zlib.error):
        return None, False  # read_bytes words the error
    return _stream(path, events_view), True


def _stream(path: str | os.PathLike[str], events_view: bool) -> Trace | None:
    # start-up: the streamed reader (and the fork it may use) only for a file that may be big
    from pista.trace import stream

    try:
        return stream.load_streamed(path, events_view=events_view)
    except (OSError, EOFError, zlib.error):
        return None  # a damaged gzip stream: read_bytes salvages what it can


def decode_trace(data: bytes, source: str = "<bytes>", notices: list[str] | None = None) -> Trace:
    notices = list(notices or [])
    try:
        events, meta, skipped = _decode_events(data, source, notices)
        trace = _build(events, meta, source, notices, skipped)
    except NotATrace as err:
        known = origin.describe_other_json(data)  # rocprofv3's JSON, a proton profile: say which
        if known is None:
            raise
        raise NotATrace(source, known) from err
    trace.size_bytes = len(data)
    return trace


def _decode_events(data: bytes, source: str, notices: list[str]) -> tuple[list[Event], dict[str, Any], Skipped]:
    skipped = Skipped()
    data = _text_encoding(data, source, notices)
    decoded = _whole(data, source, skipped)
    if decoded is not None:
        return decoded
    repaired = _repair(data, notices)
    if repaired is not data and (decoded := _whole(repaired, source, skipped)) is not None:
        return decoded
    return _salvage(repaired, source, notices, skipped)


def _whole(data: bytes, source: str, skipped: Skipped) -> tuple[list[Event], dict[str, Any], Skipped] | None:
    """The document read whole: one typed decode, else event by event (a field of an unexpected
    type, or not a trace at all); None when it is not valid JSON."""
    try:
        doc = _DOC_DECODER.decode(data)
        meta = _metadata(doc)
        if any(abs(e.ts) >= EXACT_FROM_US for e in doc.traceEvents):
            meta[_EXACT] = _exact_times(_TIMES_DECODER.decode(data).traceEvents)
        return doc.traceEvents, meta, skipped
    except msgspec.ValidationError:
        if (listed := _whole_list(data)) is not None:
            return listed, _list_meta(listed, data), skipped
    except DECODE_ERRORS:
        return None
    try:
        return _lenient(data, source, skipped)
    except DECODE_ERRORS:  # the typed decode stopped at a type error before reaching broken JSON
        return None


def _text_encoding(data: bytes, source: str, notices: list[str]) -> bytes:
    """UTF-8 without BOM, or a one-line reason why this is not a JSON text at all."""
    data = _without_bom(data, source, notices)
    start = re.match(rb"\s*", data).end()  # type: ignore[union-attr]  # \s* always matches
    head = data[start : start + 1]
    if head in (b"{", b"["):
        return data
    if not head:
        raise BadTrace(source, "empty file")
    for magic, what in _OTHER_FORMATS:
        if data.startswith(magic):
            raise BadTrace(source, what)
    if _binary(data, start):
        raise BadTrace(source, "not JSON: binary data (a trace is a .json or .json.gz text file)")
    shown = data[start : start + 20].decode("utf-8", "replace")
    raise BadTrace(source, f"not JSON: a trace starts with '{{' or '[', this file with {shown!r}")


def _without_bom(data: bytes, source: str, notices: list[str]) -> bytes:
    """The text without a UTF-8 BOM; UTF-16 (with its BOM) converted to UTF-8, with a notice."""
    if data.startswith(_UTF8_BOM):
        return data[len(_UTF8_BOM) :]
    if not data.startswith(_UTF16_BOMS):
        return data
    try:
        data = data.decode("utf-16").encode()
    except UnicodeError:
        raise BadTrace(source, "UTF-16 text that does not decode; pista reads UTF-8 JSON") from None
    notices.append("the file is UTF-16 text (converted to UTF-8 to read it)")
    return data


def _binary(data: bytes, start: int) -> bool:
    """Whether bytes that are no JSON look binary: NULs, control characters, or no UTF-8 near the start."""
    sample = data[start : start + 64]
    return b"\x00" in data[:4096] or any(c < 9 or 13 < c < 32 for c in sample) or b"\xef\xbf\xbd" in \
        sample.decode("utf-8", "replace").encode()[:-3]


def refuse_non_json_start(head: bytes, source: object) -> None:
    """The first bytes of a stream: raise the BadTrace the reader would for bytes that cannot begin
    a JSON text (binary data, another format), so a stream of them is refused before it is all
    read; nothing for a start that may be JSON (whitespace alone included: more may follow)."""
    if head[:2] == GZIP_MAGIC or head.startswith(_UTF16_BOMS) or not head.removeprefix(_UTF8_BOM).strip():
        return
    _text_encoding(head, str(source), [])



_JSON_KINDS = {int: "a number", float: "a number", str: "a string", dict: "an object", bool: "a boolean",
               type(None): "null"}


def _exact_times(times: list[_Times]) -> tuple[np.ndarray, np.ndarray]:
    """ts and dur in whole ns (int64) from the numbers' own digits, no float64 on the way; a value
    that is no number (dropped by the float checks anyway) or out of range is 0 here."""
    ts = np.fromiter((_us_text_to_ns(t.ts) for t in times), dtype=np.int64, count=len(times))
    dur = np.fromiter((_us_text_to_ns(t.dur) for t in times), dtype=np.int64, count=len(times))
    return ts, dur


_NS_LIMIT = (1 << 63) - 1


def _us_text_to_ns(raw: Raw) -> int:
    """A JSON number of µs, exactly in whole ns (rounded half up on the 4th decimal)."""
    if raw is ABSENT:
        return 0
    text = bytes(raw).strip()
    if not text or text[:1] not in b"-0123456789":
        return 0
    try:
        if b"e" in text or b"E" in text:
            ns = int((Decimal(text.decode()) * 1000).to_integral_value())
        else:
            whole, _, frac = text.lstrip(b"-").partition(b".")
            frac = frac + b"0000"
            ns = int(whole or b"0") * 1000 + int(frac[:3]) + (1 if frac[3:4] >= b"5" else 0)
            ns = -ns if text[:1] == b"-" else ns
    except (ValueError, ArithmeticError):
        return 0
    return ns if -_NS_LIMIT <= ns <= _NS_LIMIT else 0


def _whole_list(data: bytes) -> list[Event] | None:
    """A bare list of events (torch 1.8's Kineto and the pre-Kineto export wrote one), typed."""
    try:
        return EVENT_LIST_DECODER.decode(data)
    except (msgspec.ValidationError, *DECODE_ERRORS):
        return None


def _list_meta(events: list[Event], data: bytes) -> dict[str, Any]:
    # epoch-µs times read from their digits, as for an object's 'traceEvents' (kineto's 2021
    # resnet50 sample: 1.6e15 µs, read to 0.25 µs through a float64 before)
    if any(abs(e.ts) >= EXACT_FROM_US for e in events):
        return {_EXACT: _exact_times(_TIMES_LIST_DECODER.decode(data))}
    return {}


def _lenient(data: bytes, source: str, skipped: Skipped) -> tuple[list[Event], dict[str, Any], Skipped]:
    """Decode each event on its own, so one malformed event costs only itself."""
    raw_events, meta, where = _raw_events(data, source)
    events, kept = _decode_each(raw_events, skipped)
    if any(abs(e.ts) >= EXACT_FROM_US for e in events):
        # the kept events' times from their digits, as for an intact file
        meta[_EXACT] = _exact_times([_TIMES_ONE_DECODER.decode(raw) for raw in kept])
    if raw_events and not events:
        if "Expected `object`" in skipped.first:
            raise NotATrace(source, f"JSON, but not a chrome trace: none of the {len(raw_events)} entries "
                                   f"of {where} is an event object ({skipped.first})")
        raise BadTrace(source, f"none of the {len(raw_events)} event(s) could be read ({skipped.first})")
    return events, meta, skipped


def _raw_events(data: bytes, source: str) -> tuple[list[Raw], dict[str, Any], str]:
    """The entries of the event list, undecoded; the document's metadata; and where the list is, in words."""
    try:
        top = _TOP_DECODER.decode(data)
    except msgspec.ValidationError:
        raise NotATrace(source, "JSON, but not a chrome trace: expected an object with 'traceEvents' "
                               "or a list of events") from None
    if isinstance(top, list):
        return top, {}, "the list"
    if top.traceEvents is ABSENT:
        raise NotATrace(source, "JSON, but not a chrome trace: no 'traceEvents' key")
    try:
        raw_events = _RAW_LIST_DECODER.decode(top.traceEvents)
    except msgspec.ValidationError:
        kind = _JSON_KINDS.get(type(msgspec.json.decode(top.traceEvents)), "value")
        raise NotATrace(source, f"JSON, but not a chrome trace: 'traceEvents' is {kind}, "
                               "not a list of events") from None
    return raw_events, _metadata(top), "'traceEvents'"


def _decode_each(raw_events: list[Raw], skipped: Skipped) -> tuple[list[Event], list[Raw]]:
    """The entries that decode as events, and their raw JSON; the others counted in `skipped`."""
    events: list[Event] = []
    kept: list[Raw] = []
    decode = EVENT_DECODER.decode
    for index, raw in enumerate(raw_events):
        try:
            events.append(decode(raw))
            kept.append(raw)
        except EVENT_ERRORS as err:
            skipped.add(index, err)
    return events, kept



# -- columns ---------------------------------------------------------------------------------


def _build(events: list[Event], meta: dict[str, Any], source: str, notices: list[str],
           skipped: Skipped | None = None) -> Trace:
    skipped = skipped or Skipped()
    if not events and skipped.count == 0:
        raise BadTrace(source, "the trace holds no events ('traceEvents' is empty)")
    events, ts_ns, dur_ns, bad = _timed(events, meta, source, notices)
    names, cats, (name_col, cat_col, ph_col) = _interned(events)
    absurd, absurd_why = _absurd(list(names.ids), name_col, dur_ns)
    notices += absurd_why
    dropped = 0
    if absurd is not None:
        kept = np.flatnonzero(~absurd)
        events = [events[i] for i in kept]
        ts_ns, dur_ns = ts_ns[kept], dur_ns[kept]
        names, cats, (name_col, cat_col, ph_col) = _interned(events)
        dropped = int(absurd.sum())
    skip_notice(notices, skipped, bad, len(events) + dropped)
    if not events:
        raise BadTrace(source, f"none of the trace's events could be read ({_why_none(skipped, absurd_why)})")
    if len(cats.ids) > MAX_CATEGORIES:
        raise BadTrace(source, f"{len(cats.ids)} distinct event categories: not a torch.profiler trace")
    columns: dict[str, Any]  # ndarrays; Any: mypy matches **columns against every Trace field
    columns = {"ph": ph_col, "cat": cat_col.astype(np.int16), "name": name_col, "ts": ts_ns, "dur": dur_ns}
    del ph_col, cat_col, name_col, ts_ns, dur_ns
    return _columns(events, list(names.ids), list(cats.ids), columns, meta, source, notices)


def _interned(events: list[Event]) -> tuple[Interner, Interner, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The events' names and categories interned anew, and their name, category and phase columns."""
    names, cats = Interner(), Interner()
    return names, cats, string_columns(events, names, cats)


def _why_none(skipped: Skipped, absurd_why: list[str]) -> str:
    """Why no event was read: the first skipped one's error, else the first absurd events', else their times."""
    return skipped.first or (absurd_why[0] if absurd_why else "negative or non-finite ts/dur")


def _timed(events: list[Event], meta: dict[str, Any], source: str,
           notices: list[str]) -> tuple[list[Event], np.ndarray, np.ndarray, int]:
    """The events whose ts and dur are times, with their times in ns, and how many were not
    (skipped). An event list in which nothing has a phase and a time is no trace."""
    n = len(events)
    ts_us = np.fromiter(map(_TS, events), dtype=np.float64, count=n)
    dur_us = np.fromiter(map(_DUR, events), dtype=np.float64, count=n)
    if events and untimed(np.fromiter(map(ph_code, map(_PH, events)), dtype=np.uint8, count=n), ts_us):
        raise NotATrace(source, f"JSON, but not a chrome trace: none of its {n} entries has a phase ('ph') and a "
                                "time ('ts')")
    ts_us[np.isnan(ts_us)] = 0.0  # an event without ts (metadata) is at 0, as chrome://tracing reads it
    exact = meta.pop(_EXACT, None)
    bad = bad_times(ts_us, dur_us)
    keep = np.flatnonzero(~bad)
    # the kept times only: a skipped 1e300 would put a 280-digit spacing in the notice
    latest = float(np.abs(ts_us[keep]).max()) if keep.size else 0.0
    if exact is None and latest >= EXACT_FROM_US:
        notices.append("times past 2^43 µs in a damaged file are read through a float64: placed to within "
                       f"{1000 * np.spacing(latest):.0f} ns")
    ts_ns = times_ns(ts_us[keep]) if exact is None else exact[0][keep]
    dur_ns = times_ns(dur_us[keep]) if exact is None else exact[1][keep]
    events = [events[i] for i in keep] if keep.size < n else events
    return events, ts_ns, dur_ns, int(bad.sum())


def _absurd(names: list[str], name_col: np.ndarray, dur_ns: np.ndarray) -> tuple[np.ndarray | None, list[str]]:
    """Events no total could hold: the longest, when durations sum past MAX_TOTAL_DUR_NS, and steps
    numbered past int64. (None, []) when there are none (the usual case), else the mask and notices."""
    notices: list[str] = []
    drop = overlong(dur_ns)
    if drop is not None:
        longest = int(dur_ns[drop].min())
        notices.append(f"skipped {int(drop.sum())} event(s) lasting {longest / 1e9:,.0f} s or more: the durations "
                       f"summed past 2^60 ns (~36 years), which no profiled run lasts")
    steps = absurd_steps(names)
    if steps:
        bad_steps = np.isin(name_col, np.asarray(steps, dtype=name_col.dtype))
        notices.append(f"skipped {int(bad_steps.sum())} ProfilerStep event(s) numbered past int64: not a step "
                       "number")
        drop = bad_steps if drop is None else drop | bad_steps
    return drop, notices


def _columns(events: list[Event], names: list[str], categories: list[str], columns: dict[str, Any],
             meta: dict[str, Any], source: str, notices: list[str]) -> Trace:
    string_ids: dict[str, int] = {}
    overflowing = 0

    def lane(value: int | str) -> int:
        nonlocal overflowing
        number = odd_number(value, string_ids, False)
        if number is None:  # past int64: a lane of its own, like a string pid
            overflowing += 1
            number = odd_number(str(value), string_ids, False)
        return number  # type: ignore[return-value]  # a string always has a number

    columns["pid"] = _id_column(events, _PID, lambda v: lane(v))
    columns["tid"] = _id_column(events, _TID, lambda v: lane(v))
    if overflowing:
        notices.append(f"{overflowing} pid/tid value(s) overflow int64; each kept as a lane of its own")
    columns["flow_id"] = _id_column(events, _ID, lambda v: odd_number(v, string_ids, True))
    raw_args = [None if e.args is ABSENT else e.args for e in events]
    ids = _decode_ids(raw_args, notices)
    foreign = foreign_device_notice(categories, columns["cat"])
    if foreign:
        notices.append(foreign)
    columns |= {"external_id": ids[0], "correlation": ids[1], "stream": ids[2], "device": ids[3]}
    del ids
    flows = split_flows(columns)
    trace = Trace(source=source, names=names, categories=categories, **columns, raw_args=raw_args,
                  metadata=meta, string_ids=string_ids, notices=notices, flows=flows)
    read_lane_names(trace)
    origin.settle(trace)
    return trace


_TS, _DUR, _PH, _PID, _TID, _ID = (attrgetter(a) for a in ("ts", "dur", "ph", "pid", "tid", "id"))


def _id_column(events: list[Event], get: attrgetter[Any], odd: Callable[[Any], int | None]) -> np.ndarray:
    """A pid, tid or flow id column: the int64 values as they are, the others numbered by `odd`
    (core.odd_number), in file order."""
    try:
        column = np.fromiter(map(get, events), dtype=np.int64, count=len(events))
        if not column.size or int(column.min()) != INT64_MIN:
            return column
    except (TypeError, ValueError, OverflowError):  # a string, a null, or an int past int64
        pass
    return np.fromiter((v if type(v) is int and -INT64_MAX <= v <= INT64_MAX else odd(v)
                        for v in map(get, events)), dtype=np.int64, count=len(events))


def _decode_ids(raw_args: list[Raw | None], notices: list[str]) -> tuple[np.ndarray, ...]:
    decoded = _id_args(raw_args, notices)
    columns = []
    overflowing = 0
    for attr in ("external_id", "correlation", "stream", "device"):
        column, past = _int64_column(_id_values(decoded, attr))
        columns.append(column)
        overflowing += past
    if overflowing:
        notices.append(f"{overflowing} External id/correlation/stream/device value(s) overflow int64; "
                       "treated as missing")
    return tuple(columns)


def _id_args(raw_args: list[Raw | None], notices: list[str]) -> list[IdArgs | None | Literal[False]]:
    """Each event's args ids decoded (None: no args; False: ids of the wrong type, with a notice)."""
    decode = _ID_DECODER.decode
    try:
        return [None if raw is None else decode(raw) for raw in raw_args]
    except EVENT_ERRORS:
        decoded = [_decode_one_ids(raw) for raw in raw_args]
        unreadable = sum(1 for d in decoded if d is False)
        notices.append(f"{unreadable} event(s) have an id, correlation, stream or device of the wrong type; "
                       "treated as missing")
        return decoded


def _id_values(decoded: list[IdArgs | None | Literal[False]], attr: str) -> list[int]:
    """One args id of every event (NO_ID where it has none); the External id's old spelling where the new is missing."""
    values = [getattr(d, attr) if d else NO_ID for d in decoded]
    if attr == "external_id":
        values = [v if v != NO_ID or not d else d.external_id_old for v, d in zip(values, decoded, strict=True)]
    return values


def _int64_column(values: list[int]) -> tuple[np.ndarray, int]:
    """`values` as int64, those past its range as NO_ID; and how many were."""
    try:
        return (np.array(values, dtype=np.int64) if values else np.empty(0, dtype=np.int64)), 0
    except OverflowError:
        clipped = [v if -INT64_MAX <= v <= INT64_MAX else NO_ID for v in values]
        return np.array(clipped, dtype=np.int64), sum(1 for v in values if not -INT64_MAX <= v <= INT64_MAX)


def _decode_one_ids(raw: Raw | None) -> IdArgs | None | Literal[False]:
    if raw is None:
        return None
    try:
        return _ID_DECODER.decode(raw)
    except EVENT_ERRORS:
        return False


