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
`BadTrace` with a one-line reason.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgspec
import numpy as np
from msgspec import Raw, Struct, field

from pista.errors import BadTrace, PistaError
from pista.trace import origin
from pista.trace.model import CATEGORY_ALIASES, NO_ID, PH_METADATA, Trace, split_flows

GZIP_MAGIC = b"\x1f\x8b"
INT64_MAX = 2**63 - 1
# ts and dur beyond this many microseconds (~140 years; epoch-µs times reach it in 2112) are not
# times: such events are skipped and counted.
MAX_TIME_US = 4.5e15
# A ts before this (µs, ~36 years before the clock's zero) is not a time either; with MAX_TIME_US
# and MAX_TOTAL_DUR_NS it keeps the trace's span (last end - first start) and any sum of
# durations inside int64 ns with room to spare, so no total downstream can wrap negative.
MIN_TIME_US = -(2.0**60) / 1000
# The events' durations may sum to this many ns (2^60, ~36 years of busy time); past it the
# longest are skipped (a real trace sums to hours: 10^8 events of 10 µs are 10^15 ns).
MAX_TOTAL_DUR_NS = float(2**60)
# A JSON text has no NaN: a NaN ts is an event without one. Read as 0 like before, but an event
# list where nothing has a phase and a time is not a trace (a memory timeline, run details).
NO_TS = float("nan")
# A gzip stream that unpacks to more than this is refused: real traces reach ~20 GB, a gzip bomb
# packs ~1000x, so a few MB would fill the memory or the disk. PISTA_MAX_UNPACKED (bytes) sets it.
MAX_UNPACKED_BYTES = 64 << 30
# The in-memory loader holds the JSON and its decoded events (~4x the text): past this share of the
# RAM it cannot finish, so a bigger stream is refused instead of running the machine out of memory.
IN_MEMORY_RAM_SHARE = 0.25
# Unpacked in pieces of this size, counted as they come (a trace up to this size is one piece, not
# copied again to join pieces: as fast as gzip.decompress).
GUNZIP_CHUNK = 64 << 20
# Salvage: how many pieces to join when one piece alone does not decode (a false event start inside
# a string or an args list splits one event in several).
SALVAGE_MAX_JOIN = 8
# Salvage decodes this many pieces at once while they are intact (a Python loop per event is slow).
SALVAGE_BLOCK = 512
# msgspec cannot type `Raw | None`; a shared default marks a field that was absent.
ABSENT = Raw(b"null")

# Other formats people pass by mistake, by their first bytes.
_OTHER_FORMATS = (
    (b"PK\x03\x04", "a zip archive, not a trace (unzip it and pass the .json inside)"),
    (b"BZh", "bzip2-compressed; pista reads .json and .json.gz (bunzip2 it first)"),
    (b"\xfd7zXZ\x00", "xz-compressed; pista reads .json and .json.gz (unxz it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed; pista reads .json and .json.gz (unzstd it first)"),
)
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


class NotATrace(BadTrace):
    """Readable JSON that is no chrome trace (run details, a memory timeline): a folder of rank
    traces skips such a file with a notice, where a real trace that is damaged fails it."""


class _Event(Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = NO_TS
    dur: float = 0.0
    id: int | str | None = None
    args: Raw = ABSENT


class _Document(Struct, gc=False):
    traceEvents: list[_Event]  # noqa: N815 - the chrome-trace key; required, so `{"foo": 1}` is refused
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    schemaVersion: int | str | None = None  # noqa: N815
    traceName: str | None = None  # noqa: N815
    pista_host: Raw = ABSENT  # what `pista run`/`profile` wrote about the CPU (threads, cores, ISA)


class _LooseDocument(Struct, gc=False):
    traceEvents: Raw = ABSENT  # noqa: N815
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: Raw = ABSENT  # noqa: N815
    displayTimeUnit: Raw = ABSENT  # noqa: N815
    schemaVersion: Raw = ABSENT  # noqa: N815
    traceName: Raw = ABSENT  # noqa: N815
    pista_host: Raw = ABSENT


class _IdArgs(Struct, gc=False):
    external_id: int = field(name="External id", default=NO_ID)
    # Kineto before 2021-04 wrote the GPU side's link to its op in lower case
    external_id_old: int = field(name="external id", default=NO_ID)
    correlation: int = NO_ID
    stream: int = NO_ID
    device: int = NO_ID


class _NameArgs(Struct, gc=False):
    name: str = ""


_EVENT_DECODER = msgspec.json.Decoder(_Event)
_EVENT_LIST_DECODER = msgspec.json.Decoder(list[_Event])
_ID_DECODER = msgspec.json.Decoder(_IdArgs | None)
_DOC_DECODER = msgspec.json.Decoder(_Document)


class _Times(Struct, gc=False):
    ts: Raw = ABSENT
    dur: Raw = ABSENT


class _TimesDocument(Struct, gc=False):
    traceEvents: list[_Times]  # noqa: N815


_TIMES_DECODER = msgspec.json.Decoder(_TimesDocument)
_TIMES_LIST_DECODER = msgspec.json.Decoder(list[_Times])
_TIMES_ONE_DECODER = msgspec.json.Decoder(_Times)
# Times at or past this many µs cannot go through a float64 to whole ns: its step there is ~2 ns and
# grows (epoch-µs traces such as 1695835535123456.789 µs are read to 0.25 µs). Their digits are parsed
# exactly instead. Below it (Kineto's steady clock: big_gpt_eager_20steps at 5.4e12 µs, 62 days of
# uptime) a float64 carries the µs to within a ns, and the fast typed decode stays.
EXACT_FROM_US = float(1 << 43)
_EXACT = "_exact_ns"  # meta key: the exact (ts, dur) ns columns, aligned with the decoded events
_LOOSE_DECODER = msgspec.json.Decoder(_LooseDocument)
_TOP_DECODER = msgspec.json.Decoder(_LooseDocument | list[Raw])
_RAW_LIST_DECODER = msgspec.json.Decoder(list[Raw])
_DECODE_ERRORS = (msgspec.DecodeError, RecursionError)
_EVENT_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)


# -- reading the file ------------------------------------------------------------------------


class Oversize(Exception):
    """The unpacked JSON passed the size the caller could take."""


def max_unpacked() -> int:
    """MAX_UNPACKED_BYTES, or the PISTA_MAX_UNPACKED environment variable's number of bytes."""
    text = os.environ.get("PISTA_MAX_UNPACKED", "").strip()
    if not text:
        return MAX_UNPACKED_BYTES
    try:
        return max(0, int(text))
    except ValueError:
        raise PistaError(f"PISTA_MAX_UNPACKED: {text!r} is not a number of bytes") from None


def too_big(path: object, limit: int) -> BadTrace:
    if limit < max_unpacked():
        return BadTrace(path, f"unpacks to more than {limit:,} bytes, more than this machine's memory can read "
                              "whole (a damaged or odd stream the streamed reader leaves to the in-memory one), or "
                              "a gzip bomb")
    return BadTrace(path, f"unpacks to more than {limit:,} bytes: a gzip bomb, or a bigger trace than pista "
                          "reads here (PISTA_MAX_UNPACKED sets the limit)")


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
    try:
        data = p.read_bytes()
    except OSError as err:
        raise BadTrace(p, f"cannot read: {err.strerror or err}") from None
    except MemoryError:
        raise BadTrace(p, "too big to read into memory") from None
    notices: list[str] = []
    if data[:2] == GZIP_MAGIC:
        limit = _in_memory_limit()
        try:
            data, whole = _gunzip(data, limit if cap is None else min(cap, limit))
        except Oversize:
            if cap is not None and cap < limit:
                raise
            raise too_big(p, limit) from None
        if not whole:
            if data.lstrip()[:1] not in (b"{", b"["):  # nothing, or garbage: not a JSON text cut short
                raise BadTrace(p, "broken gzip stream: nothing readable could be decompressed") from None
            notices.append(f"the gzip stream is cut off or damaged; reading the {len(data):,} bytes "
                           "that decompressed")
        if not data.strip():
            raise BadTrace(p, "empty trace: the gzip stream holds nothing")
    elif not data.strip():
        raise BadTrace(p, "empty file")
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
        # cycle: stream imports load
        from pista.trace import stream

        if stream.unpacked_size(path) < STREAM_MIN_BYTES:
            return None, False
    except (OSError, EOFError, zlib.error):
        return None, False  # read_bytes words the error
    return _stream(path, events_view), True


def _stream(path: str | os.PathLike[str], events_view: bool) -> Trace | None:
    # cycle: stream imports load
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


# -- decoding --------------------------------------------------------------------------------


class _Skipped:
    """Tally of events that could not be read, with the first reason, for one notice."""

    def __init__(self) -> None:
        self.count = 0
        self.first = ""

    def add(self, index: int, err: BaseException | str) -> None:
        self.count += 1
        if not self.first:
            self.first = f"event {index}: {_describe(err)}"


NESTED_TOO_DEEP = "nested too deeply to read (about 1000 levels of [ and {)"


def _describe(err: BaseException | str) -> str:
    if isinstance(err, RecursionError):
        return NESTED_TOO_DEEP
    text = str(err).removeprefix("JSON is malformed: ")
    if text == "Input data was truncated":
        return "it ends mid-value"
    return text.replace(" (byte ", " at byte ").replace(")", "") if "(byte " in text else text


def _decode_events(data: bytes, source: str, notices: list[str]) -> tuple[list[_Event], dict[str, Any], _Skipped]:
    skipped = _Skipped()
    data = _text_encoding(data, source, notices)
    decoded = _whole(data, source, skipped)
    if decoded is not None:
        return decoded
    repaired = _repair(data, notices)
    if repaired is not data and (decoded := _whole(repaired, source, skipped)) is not None:
        return decoded
    return _salvage(repaired, source, notices, skipped)


def _whole(data: bytes, source: str, skipped: _Skipped) -> tuple[list[_Event], dict[str, Any], _Skipped] | None:
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
    except _DECODE_ERRORS:
        return None
    try:
        return _lenient(data, source, skipped)
    except _DECODE_ERRORS:  # the typed decode stopped at a type error before reaching broken JSON
        return None


def _text_encoding(data: bytes, source: str, notices: list[str]) -> bytes:
    """UTF-8 without BOM, or a one-line reason why this is not a JSON text at all."""
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    elif data.startswith(_UTF16_BOMS):
        try:
            data = data.decode("utf-16").encode()
        except UnicodeError:
            raise BadTrace(source, "UTF-16 text that does not decode; pista reads UTF-8 JSON") from None
        notices.append("the file is UTF-16 text (converted to UTF-8 to read it)")
    start = re.match(rb"\s*", data).end()  # type: ignore[union-attr]  # \s* always matches
    head = data[start : start + 1]
    if head in (b"{", b"["):
        return data
    if not head:
        raise BadTrace(source, "empty file")
    for magic, what in _OTHER_FORMATS:
        if data.startswith(magic):
            raise BadTrace(source, what)
    sample = data[start : start + 64]
    if b"\x00" in data[:4096] or any(c < 9 or 13 < c < 32 for c in sample) or b"\xef\xbf\xbd" in \
            sample.decode("utf-8", "replace").encode()[:-3]:
        raise BadTrace(source, "not JSON: binary data (a trace is a .json or .json.gz text file)")
    shown = data[start : start + 20].decode("utf-8", "replace")
    raise BadTrace(source, f"not JSON: a trace starts with '{{' or '[', this file with {shown!r}")


def refuse_non_json_start(head: bytes, source: object) -> None:
    """The first bytes of a stream: raise the BadTrace the reader would for bytes that cannot begin
    a JSON text (binary data, another format), so a stream of them is refused before it is all
    read; nothing for a start that may be JSON (whitespace alone included: more may follow)."""
    if head[:2] == GZIP_MAGIC or head.startswith(_UTF16_BOMS) or not head.removeprefix(_UTF8_BOM).strip():
        return
    _text_encoding(head, str(source), [])


def _metadata(doc: _Document | _LooseDocument) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "displayTimeUnit",
                "schemaVersion", "traceName", "pista_host"):
        value = getattr(doc, key)
        if value is ABSENT:
            continue
        if isinstance(value, Raw):
            try:
                value = msgspec.json.decode(value)
            except _DECODE_ERRORS:
                value = None
        if value is not None:
            meta[key] = value
    return meta


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


def _whole_list(data: bytes) -> list[_Event] | None:
    """A bare list of events (torch 1.8's Kineto and the pre-Kineto export wrote one), typed."""
    try:
        return _EVENT_LIST_DECODER.decode(data)
    except (msgspec.ValidationError, *_DECODE_ERRORS):
        return None


def _list_meta(events: list[_Event], data: bytes) -> dict[str, Any]:
    # epoch-µs times read from their digits, as for an object's 'traceEvents' (kineto's 2021
    # resnet50 sample: 1.6e15 µs, read to 0.25 µs through a float64 before)
    if any(abs(e.ts) >= EXACT_FROM_US for e in events):
        return {_EXACT: _exact_times(_TIMES_LIST_DECODER.decode(data))}
    return {}


def _lenient(data: bytes, source: str, skipped: _Skipped) -> tuple[list[_Event], dict[str, Any], _Skipped]:
    """Decode each event on its own, so one malformed event costs only itself."""
    try:
        top = _TOP_DECODER.decode(data)
    except msgspec.ValidationError:
        raise NotATrace(source, "JSON, but not a chrome trace: expected an object with 'traceEvents' "
                               "or a list of events") from None
    if isinstance(top, list):
        raw_events, meta, where = top, {}, "the list"
    else:
        if top.traceEvents is ABSENT:
            raise NotATrace(source, "JSON, but not a chrome trace: no 'traceEvents' key")
        try:
            raw_events = _RAW_LIST_DECODER.decode(top.traceEvents)
        except msgspec.ValidationError:
            kind = _JSON_KINDS.get(type(msgspec.json.decode(top.traceEvents)), "value")
            raise NotATrace(source, f"JSON, but not a chrome trace: 'traceEvents' is {kind}, "
                                   "not a list of events") from None
        meta, where = _metadata(top), "'traceEvents'"
    events: list[_Event] = []
    kept: list[Raw] = []
    decode = _EVENT_DECODER.decode
    for index, raw in enumerate(raw_events):
        try:
            events.append(decode(raw))
            kept.append(raw)
        except _EVENT_ERRORS as err:
            skipped.add(index, err)
    if any(abs(e.ts) >= EXACT_FROM_US for e in events):
        # the kept events' times from their digits, as for an intact file
        meta[_EXACT] = _exact_times([_TIMES_ONE_DECODER.decode(raw) for raw in kept])
    if raw_events and not events:
        if "Expected `object`" in skipped.first:
            raise NotATrace(source, f"JSON, but not a chrome trace: none of the {len(raw_events)} entries "
                                   f"of {where} is an event object ({skipped.first})")
        raise BadTrace(source, f"none of the {len(raw_events)} event(s) could be read ({skipped.first})")
    return events, meta, skipped


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
        if err.reason == "unexpected end of data" and err.end == len(data):
            data = data[: err.start]  # cut off inside a multi-byte character: salvage sees the cut
        else:
            data = _utf8_replaced(data)
            notices.append(f"bytes that are not UTF-8 (first at byte {err.start}) were replaced by U+FFFD")
    hints = _bare_token_hints(data)
    if hints:
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
             skipped: _Skipped) -> tuple[list[_Event], dict[str, Any], _Skipped]:
    """A file cut off mid-write or damaged in places: keep every event that decodes on its own."""
    key = _EVENTS_KEY.search(data)
    start = re.match(rb"\s*", data).end()  # type: ignore[union-attr]
    if key is not None:
        list_at = key.end() - 1
        meta = _prefix_metadata(data[: key.start()])
    elif data[start : start + 1] == b"[":
        list_at, meta = start, {}
    elif (whole_error := _first_error(data)) == _describe("Input data was truncated"):
        raise BadTrace(source, f"cut off before the first complete event ({whole_error})")
    else:
        raise BadTrace(source, f"not valid JSON ({whole_error}), and no 'traceEvents' list in it to salvage")
    sink = _EventList()
    walk = SalvageWalk(_Pieces(data, list_at), sink, skipped, list_at)
    walk.run()
    events = sink.events
    ending = salvage_ending(data, walk, key is not None, meta)
    if not events:
        whole_error = _first_error(data)
        if whole_error == NESTED_TOO_DEEP:
            raise BadTrace(source, f"JSON {NESTED_TOO_DEEP}; no event could be read")
        if ending.cut_off or whole_error == _describe("Input data was truncated"):
            raise BadTrace(source, f"cut off before the first complete event ({whole_error})")
        raise BadTrace(source, f"not valid JSON ({whole_error}), and no complete event in it to salvage")
    notices += ending.notices(len(events), walk.good_end, len(data))
    list_end = len(data) if walk.tail_at is None else walk.tail_at  # junk after the trace has its own notice
    zeroed = [m.span() for m in _ZEROED.finditer(data, 0, list_end)]
    if zeroed:
        # a crash or power loss leaves blocks of the file zero-filled: events that lay there leave
        # nothing to count, so the skipped count above misses them
        total = sum(b - a for a, b in zeroed)
        notices.append(f"{total:,} byte(s) of the file are zeroed (NUL), in {len(zeroed)} place(s), the first "
                       f"at byte {zeroed[0][0]:,}: the events written there are lost and cannot be counted")
    return events, meta, skipped


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
        self.events: list[_Event] = []

    @property
    def count(self) -> int:
        return len(self.events)

    def block(self, batch: list[_Event], start: int, end: int) -> None:
        self.events.extend(batch)

    def event(self, event: _Event, start: int, end: int) -> None:
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

    def decode_list(self, start: int, end: int) -> list[_Event]:
        return _EVENT_LIST_DECODER.decode(b"".join((b"[", self.view(start, end), b"]")))

    def decode_one(self, start: int, end: int) -> _Event:
        return _EVENT_DECODER.decode(self.view(start, end))

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

    def __init__(self, pieces: Any, sink: Any, skipped: _Skipped, list_at: int) -> None:
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
        except (msgspec.ValidationError, *_DECODE_ERRORS):
            self.piecewise_until = i + SALVAGE_BLOCK
            return None
        self._skip(self.unsure)
        self.unsure = []
        self.sink.block(batch, start, end)
        self.good_end = end
        return i + SALVAGE_BLOCK

    def _piece(self, i: int) -> int | None:
        """Read piece i, joined to the next ones if need be; the next piece to read (None: done)."""
        pieces = self.pieces
        result, j, end, after, last_error, list_ends_here = self._join(i)
        if result is None:
            if not pieces.has(i + 1):
                self.cut_off = True  # the last event was being written when the file ended
                return None
            if not pieces.has(j + 1):
                self.unsure.append(last_error)
            else:
                self._skip([*self.unsure, last_error])
                self.unsure = []
            return i + 1
        self._skip(self.unsure)
        self.unsure = []
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

    def _join(self, i: int) -> tuple[_Event | BaseException | None, int, int, int | None, BaseException | None, bool]:
        """Piece i alone, else joined to the next (up to SALVAGE_MAX_JOIN pieces): (the event, or the
        error of one with a field of the wrong type, or None; the last piece joined; where the event
        ends; where the bytes after the list begin, if it is the last; the last decode error; whether
        the list ends after it)."""
        pieces = self.pieces
        start = pieces.start(i)
        result: _Event | BaseException | None = None
        last_error: BaseException | None = None
        after: int | None = None
        stop = i + SALVAGE_MAX_JOIN if pieces.has(i + SALVAGE_MAX_JOIN - 1) else pieces.first + len(pieces.starts)
        for j in range(i, stop):  # noqa: B007 - j is returned
            end, after = (pieces.sep(j + 1), None) if pieces.has(j + 1) else pieces.last_event_end(start)
            try:
                result = pieces.decode_one(start, end)
            except msgspec.ValidationError as err:
                result = err  # readable JSON, a field of the wrong type
            except _DECODE_ERRORS as err:
                last_error = err
                if j == i and pieces.has(j + 1):
                    # the list may end after this event, with objects in the keys that follow
                    # ("deviceProperties": [{...}] after the events) making more pieces
                    length = pieces.object_end(start, err)
                    if length is not None and pieces.list_ends_at(start + length):
                        end = after = start + length
                        try:
                            result = pieces.decode_one(start, end)
                        except msgspec.ValidationError as inner:
                            result = inner
                        except _DECODE_ERRORS:
                            continue
                        return result, j, end, after, last_error, True
                continue
            break
        return result, j, end, after, last_error, False


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
    except _DECODE_ERRORS as err:
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
        except _DECODE_ERRORS:
            bound = close
            continue
        return close + 1 - start
    return None


def _first_error(data: bytes) -> str:
    try:
        msgspec.json.decode(data, type=Raw)
    except _DECODE_ERRORS as err:
        return _describe(err)
    return "unreadable"


def _prefix_metadata(prefix: bytes) -> dict[str, Any]:
    """The top-level keys before "traceEvents" (Kineto writes deviceProperties and friends there)."""
    try:
        return _metadata(_LOOSE_DECODER.decode(prefix + b'"traceEvents": []}'))
    except (*_DECODE_ERRORS, msgspec.ValidationError):
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
        return _metadata(_LOOSE_DECODER.decode(rest)), True, _junk(data, at + skip + len(rest) - 1)
    except (*_DECODE_ERRORS, msgspec.ValidationError) as err:
        stop = _object_end(rest, 0, err)
        if stop is None:
            return {}, False, 0
        try:
            meta = _metadata(_LOOSE_DECODER.decode(memoryview(rest)[:stop]))
        except (*_DECODE_ERRORS, msgspec.ValidationError):
            meta = {}
        return meta, True, _junk(data, at + skip + stop - 1)


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


# -- columns ---------------------------------------------------------------------------------


_INT_TEXT = re.compile(r"-?[0-9]+\Z")
# Category ids are int16; a file with more distinct categories than that is not a profiler trace.
MAX_CATEGORIES = 32000
# ProfilerStep#N, as pista.trace.facts.STEP_NAME reads it; an N of more digits than int64 holds is
# no step number (Python refuses int() of 4300+ digits, int64 columns anything past 2^63).
_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
_STEP_DIGITS = len(str(INT64_MAX))
# Kineto's categories for accelerators pista does not read (Meta's MTIA, Intel's XPU, Gaudi's HPU,
# PrivateUse1 backends, Cambricon's MLU, Enflame's GCU, Glow): their work is in the trace, not in
# the verdict. CUDA and ROCm write `kernel`/`cuda_runtime`, read as usual.
_FOREIGN_DEVICE = re.compile(r"^(mtia|xpu|hpu|privateuse1|mlu|gcu|glow)_")
_FOREIGN_NAMES = {"mtia": "MTIA", "xpu": "XPU", "hpu": "HPU", "privateuse1": "PrivateUse1", "mlu": "MLU",
                  "gcu": "GCU", "glow": "Glow"}


def text_number(value: str) -> int | None:
    """A pid/tid/id written as a string of digits ("457": some exporters do) as its number; None for
    any other string, digits past int64 included (a lane of its own then). Both readers' rule."""
    if len(value) < 21 and _INT_TEXT.match(value):
        number = int(value)
        if -INT64_MAX <= number <= INT64_MAX:
            return number
    return None


def bad_times(ts_us: np.ndarray, dur_us: np.ndarray) -> np.ndarray:
    """The events whose ts/dur are no times (both readers skip them)."""
    bad: np.ndarray = ~np.isfinite(ts_us) | ~np.isfinite(dur_us) | (dur_us < 0) | (ts_us < MIN_TIME_US) \
        | (ts_us > MAX_TIME_US) | (dur_us > MAX_TIME_US)
    return bad


def untimed(ph: np.ndarray, ts_us: np.ndarray) -> bool:
    """Whether no event has a phase (ph code, 0 for none) and a ts (NO_TS where it had none)."""
    return not bool(((ph != 0) & ~np.isnan(ts_us)).any())


def overlong(dur_ns: np.ndarray) -> np.ndarray | None:
    """The longest events, to skip when all durations together pass MAX_TOTAL_DUR_NS; else None."""
    if not dur_ns.size or float(dur_ns.sum(dtype=np.float64)) <= MAX_TOTAL_DUR_NS:
        return None
    order = np.argsort(dur_ns, kind="stable")  # shortest first; ties in file order
    fits = int(np.searchsorted(np.cumsum(dur_ns[order], dtype=np.float64), MAX_TOTAL_DUR_NS, side="right"))
    drop = np.zeros(dur_ns.size, dtype=bool)
    drop[order[fits:]] = True
    return drop


def absurd_steps(names: list[str]) -> list[int]:
    """Ids of the names ProfilerStep#N whose N is past int64."""
    out = []
    for i, name in enumerate(names):
        if name.startswith("ProfilerStep#") and (m := _STEP_NAME.match(name)):
            digits = m.group(1)
            if len(digits) > _STEP_DIGITS or (len(digits) == _STEP_DIGITS and int(digits) > INT64_MAX):
                out.append(i)
    return out


def foreign_device_notice(categories: list[str], cat: np.ndarray) -> str | None:
    """A notice for device activity of an accelerator pista does not read, or None."""
    found = [i for i, c in enumerate(categories) if _FOREIGN_DEVICE.match(c)]
    if not found:
        return None
    counts = np.bincount(cat.astype(np.int64), minlength=len(categories))
    count = int(counts[found].sum())
    kinds = sorted({_FOREIGN_NAMES[_FOREIGN_DEVICE.match(categories[i]).group(1)] for i in found})  # type: ignore[union-attr]
    listed = ", ".join(categories[i] for i in found)
    return (f"{count:,} event(s) of {'/'.join(kinds)} device activity ({listed}) found but not read: pista reads "
            "CUDA and ROCm device work, so the verdict and findings leave this out")


def _build(events: list[_Event], meta: dict[str, Any], source: str, notices: list[str],
           skipped: _Skipped | None = None) -> Trace:
    skipped = skipped or _Skipped()
    if not events and skipped.count == 0:
        raise BadTrace(source, "the trace holds no events ('traceEvents' is empty)")
    events, ph_col, ts_ns, dur_ns, bad = _timed(events, meta, source, notices)
    names, name_col = _intern_names(events)
    absurd, absurd_why = _absurd(names, name_col, dur_ns)
    notices += absurd_why
    if absurd is not None:
        kept = np.flatnonzero(~absurd)
        events = [events[i] for i in kept]
        ph_col, ts_ns, dur_ns = ph_col[kept], ts_ns[kept], dur_ns[kept]
        names, name_col = _intern_names(events)
    dropped = 0 if absurd is None else int(absurd.sum())
    _skip_notice(notices, skipped, bad, len(events) + dropped)
    if not events:
        why = skipped.first or (absurd_why[0] if absurd_why else "negative or non-finite ts/dur")
        raise BadTrace(source, f"none of the trace's events could be read ({why})")
    return _columns(events, names, name_col, ph_col, ts_ns, dur_ns, meta, source, notices)


def _timed(events: list[_Event], meta: dict[str, Any], source: str,
           notices: list[str]) -> tuple[list[_Event], np.ndarray, np.ndarray, np.ndarray, int]:
    """The events whose ts and dur are times, with their ph codes and times in ns, and how many were
    not (skipped). An event list in which nothing has a phase and a time is no trace."""
    n = len(events)
    ts_us = np.fromiter((e.ts for e in events), dtype=np.float64, count=n)
    dur_us = np.fromiter((e.dur for e in events), dtype=np.float64, count=n)
    ph_col = np.fromiter((ord(e.ph[0]) if e.ph and e.ph[0] < "\x80" else 0 for e in events), dtype=np.uint8, count=n)
    if events and untimed(ph_col, ts_us):
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
    ts_ns = np.rint(ts_us[keep] * 1000.0).astype(np.int64) if exact is None else exact[0][keep]
    dur_ns = np.rint(dur_us[keep] * 1000.0).astype(np.int64) if exact is None else exact[1][keep]
    events = [events[i] for i in keep] if keep.size < n else events
    return events, ph_col[keep], ts_ns, dur_ns, int(bad.sum())


def _intern_names(events: list[_Event]) -> tuple[dict[str, int], np.ndarray]:
    names: dict[str, int] = {}
    name_col = np.fromiter((names.setdefault(e.name, len(names)) for e in events), dtype=np.int32,
                           count=len(events))
    return names, name_col


def _absurd(names: dict[str, int], name_col: np.ndarray, dur_ns: np.ndarray) -> tuple[np.ndarray | None, list[str]]:
    """Events no total could hold: the longest, when durations sum past MAX_TOTAL_DUR_NS, and steps
    numbered past int64. (None, []) when there are none (the usual case), else the mask and notices."""
    notices: list[str] = []
    drop = overlong(dur_ns)
    if drop is not None:
        longest = int(dur_ns[drop].min())
        notices.append(f"skipped {int(drop.sum())} event(s) lasting {longest / 1e9:,.0f} s or more: the durations "
                       f"summed past 2^60 ns (~36 years), which no profiled run lasts")
    steps = absurd_steps(list(names))
    if steps:
        bad_steps = np.isin(name_col, np.asarray(steps, dtype=name_col.dtype))
        notices.append(f"skipped {int(bad_steps.sum())} ProfilerStep event(s) numbered past int64: not a step "
                       "number")
        drop = bad_steps if drop is None else drop | bad_steps
    return drop, notices


def _columns(events: list[_Event], names: dict[str, int], name_col: np.ndarray, ph_col: np.ndarray,
             ts_ns: np.ndarray, dur_ns: np.ndarray, meta: dict[str, Any], source: str,
             notices: list[str]) -> Trace:
    string_ids: dict[str, int] = {}
    overflowing = 0

    def numeric(value: int | str) -> int:
        nonlocal overflowing
        if isinstance(value, int):
            if -INT64_MAX <= value <= INT64_MAX:
                return value
            overflowing += 1
            value = str(value)  # beyond int64: a lane of its own, like a string pid
        elif (number := text_number(value)) is not None:
            return number
        if value not in string_ids:
            string_ids[value] = -1000 - len(string_ids)
        return string_ids[value]

    cats: dict[str, int] = {}
    cat_col = np.fromiter((cats.setdefault(CATEGORY_ALIASES.get(e.cat, e.cat), len(cats)) for e in events),
                          dtype=np.int32, count=len(events))
    if len(cats) > MAX_CATEGORIES:
        raise BadTrace(source, f"{len(cats)} distinct event categories: not a torch.profiler trace")
    cat_col = cat_col.astype(np.int16)
    pid_col = np.fromiter((e.pid if type(e.pid) is int and -INT64_MAX <= e.pid <= INT64_MAX else numeric(e.pid)
                           for e in events), dtype=np.int64, count=len(events))
    tid_col = np.fromiter((e.tid if type(e.tid) is int and -INT64_MAX <= e.tid <= INT64_MAX else numeric(e.tid)
                           for e in events), dtype=np.int64, count=len(events))
    if overflowing:
        notices.append(f"{overflowing} pid/tid value(s) overflow int64; each kept as a lane of its own")
    flow_col = np.fromiter((NO_ID if e.id is None else _flow_id(e.id, numeric) for e in events), dtype=np.int64,
                           count=len(events))
    raw_args = [None if e.args is ABSENT else e.args for e in events]
    ids = _decode_ids(raw_args, notices)
    foreign = foreign_device_notice(list(cats), cat_col)
    if foreign:
        notices.append(foreign)
    columns: dict[str, Any]  # ndarrays; Any: mypy matches **columns against every Trace field
    columns = {"ph": ph_col, "cat": cat_col, "name": name_col, "pid": pid_col, "tid": tid_col, "ts": ts_ns,
               "dur": dur_ns, "external_id": ids[0], "correlation": ids[1], "stream": ids[2], "device": ids[3],
               "flow_id": flow_col}
    del ph_col, cat_col, name_col, pid_col, tid_col, ts_ns, dur_ns, ids, flow_col
    flows = split_flows(columns)
    trace = Trace(source=source, names=list(names), categories=list(cats), **columns, raw_args=raw_args,
                  metadata=meta, string_ids=string_ids, notices=notices, flows=flows)
    _read_lane_names(trace)
    origin.settle(trace)
    return trace


def _flow_id(value: int | str, numeric: Callable[[int | str], int]) -> int:
    if isinstance(value, int) and not -INT64_MAX <= value <= INT64_MAX:
        return NO_ID  # a flow id only pairs start and end; one that overflows pairs nothing
    return numeric(value)


def _skip_notice(notices: list[str], skipped: _Skipped, bad_times: int, kept: int) -> None:
    total = kept + skipped.count + bad_times
    if not skipped.count and not bad_times:
        return
    times = "a negative, non-finite or out-of-range ts/dur"
    if skipped.count and bad_times:
        why = f"{skipped.count} unreadable (first: {skipped.first}), {bad_times} with {times}"
    elif skipped.count:
        why = f"first: {skipped.first}"
    else:
        why = f"{times}"
    notices.append(f"skipped {skipped.count + bad_times} malformed event(s) of {total} ({why})")


def _decode_ids(raw_args: list[Raw | None], notices: list[str]) -> tuple[np.ndarray, ...]:
    decode = _ID_DECODER.decode
    decoded: list[_IdArgs | None | Literal[False]]  # False: ids of the wrong type
    try:
        decoded = [None if raw is None else decode(raw) for raw in raw_args]
    except _EVENT_ERRORS:
        decoded = [_decode_one_ids(raw) for raw in raw_args]
        unreadable = sum(1 for d in decoded if d is False)
        notices.append(f"{unreadable} event(s) have an id, correlation, stream or device of the wrong type; "
                       "treated as missing")
    columns = []
    overflowing = 0
    for attr in ("external_id", "correlation", "stream", "device"):
        values = [getattr(d, attr) if d else NO_ID for d in decoded]
        if attr == "external_id":
            values = [v if v != NO_ID or not d else d.external_id_old for v, d in zip(values, decoded, strict=True)]
        column, past = _int64_column(values)
        columns.append(column)
        overflowing += past
    if overflowing:
        notices.append(f"{overflowing} External id/correlation/stream/device value(s) overflow int64; "
                       "treated as missing")
    return tuple(columns)


def _int64_column(values: list[int]) -> tuple[np.ndarray, int]:
    """`values` as int64, those past its range as NO_ID; and how many were."""
    try:
        return (np.array(values, dtype=np.int64) if values else np.empty(0, dtype=np.int64)), 0
    except OverflowError:
        clipped = [v if -INT64_MAX <= v <= INT64_MAX else NO_ID for v in values]
        return np.array(clipped, dtype=np.int64), sum(1 for v in values if not -INT64_MAX <= v <= INT64_MAX)


def _decode_one_ids(raw: Raw | None) -> _IdArgs | None | Literal[False]:
    if raw is None:
        return None
    try:
        return _ID_DECODER.decode(raw)
    except _EVENT_ERRORS:
        return False


def _read_lane_names(trace: Trace) -> None:
    for i in np.flatnonzero(trace.ph == PH_METADATA):
        kind = trace.names[int(trace.name[i])]
        if kind not in ("process_name", "thread_name"):
            continue
        raw = trace.raw(int(i))
        try:
            label = msgspec.json.decode(raw, type=_NameArgs).name if raw is not None else ""
        except _EVENT_ERRORS:
            continue
        if not label:
            continue
        if kind == "process_name":
            trace.process_names[int(trace.pid[i])] = label
        else:
            trace.thread_names[(int(trace.pid[i]), int(trace.tid[i]))] = label
