"""Trace file -> columnar Trace.

The fast path is one typed msgspec decode: only the fields analysis reads are materialised, and
each event's `args` stays a `msgspec.Raw` slice of the input until someone asks for it. When the
typed decode refuses the file (an event with a wrong type, a file cut off mid-write), slower
lenient paths take over, skip what cannot be read and say so in `Trace.notices`.
"""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from msgspec import Raw, Struct, field

from pista.errors import BadTrace
from pista.trace.model import CATEGORY_ALIASES, NO_ID, PH_METADATA, Trace

GZIP_MAGIC = b"\x1f\x8b"
INT64_MAX = 2**63 - 1
# How far back from the end of a cut-off file to look for the last complete event.
SALVAGE_MAX_TRIES = 256
# msgspec cannot type `Raw | None`; a shared default marks a field that was absent.
ABSENT = Raw(b"null")


class _Event(Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    id: int | str | None = None
    args: Raw = ABSENT


class _Document(Struct, gc=False):
    traceEvents: list[_Event] = []  # noqa: N815 - the chrome-trace key
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    schemaVersion: int | str | None = None  # noqa: N815
    traceName: str | None = None  # noqa: N815


class _LooseDocument(Struct, gc=False):
    traceEvents: Raw = ABSENT  # noqa: N815
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: Raw = ABSENT  # noqa: N815
    displayTimeUnit: Raw = ABSENT  # noqa: N815
    schemaVersion: Raw = ABSENT  # noqa: N815
    traceName: Raw = ABSENT  # noqa: N815


class _IdArgs(Struct, gc=False):
    external_id: int = field(name="External id", default=NO_ID)
    correlation: int = NO_ID
    stream: int = NO_ID
    device: int = NO_ID


class _NameArgs(Struct, gc=False):
    name: str = ""


_EVENT_DECODER = msgspec.json.Decoder(_Event)
_ID_DECODER = msgspec.json.Decoder(_IdArgs | None)
_DOC_DECODER = msgspec.json.Decoder(_Document)
_LOOSE_DECODER = msgspec.json.Decoder(_LooseDocument)
_RAW_LIST_DECODER = msgspec.json.Decoder(list[Raw])


def read_bytes(path: str | os.PathLike[str]) -> tuple[bytes, list[str]]:
    """The file's JSON bytes, un-gzipped; a cut-off gzip stream yields what it holds, with a notice."""
    p = Path(path)
    if not p.exists():
        raise BadTrace(p, "no such file")
    if p.is_dir():
        raise BadTrace(p, "is a directory, not a trace file (pass the .json or .json.gz inside it)")
    try:
        data = p.read_bytes()
    except OSError as err:
        raise BadTrace(p, f"cannot read: {err.strerror or err}") from None
    notices: list[str] = []
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error):
            data = _gunzip_prefix(data)
            if not data:
                raise BadTrace(p, "broken gzip stream: nothing could be decompressed") from None
            notices.append("the gzip stream is cut off or damaged; reading the part that decompressed")
    if not data.strip():
        raise BadTrace(p, "empty file")
    return data, notices


def _gunzip_prefix(data: bytes) -> bytes:
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    step = 1 << 16
    for start in range(0, len(data), step):
        try:
            out += decoder.decompress(data[start : start + step])
        except zlib.error:
            break
    return bytes(out)


# Traces whose JSON is at least this big are read in blocks (pista.trace.stream): faster on two
# cores and without the whole file, or a Python object per event, in memory.
STREAM_MIN_BYTES = 16 << 20


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Load a torch.profiler / Kineto chrome trace, plain or gzipped."""
    trace = _load_streamed(path)
    if trace is not None:
        return trace
    data, notices = read_bytes(path)
    return decode_trace(data, str(path), notices)


def _load_streamed(path: str | os.PathLike[str]) -> Trace | None:
    """The streamed reader for a big regular file; None (read it whole) for anything else."""
    try:
        if not os.path.isfile(path):
            return None
        from pista.trace import stream

        if stream.unpacked_size(path) < STREAM_MIN_BYTES:
            return None
    except OSError:
        return None  # read_bytes words the error
    return stream.load_streamed(path)


def decode_trace(data: bytes, source: str = "<bytes>", notices: list[str] | None = None) -> Trace:
    notices = list(notices or [])
    events, meta = _decode_events(data, source, notices)
    trace = _build(events, meta, source, notices)
    trace.size_bytes = len(data)
    return trace


# -- decoding --------------------------------------------------------------------------------


def _decode_events(data: bytes, source: str, notices: list[str]) -> tuple[list[_Event], dict[str, Any]]:
    head = data.lstrip()[:1]
    if head not in (b"{", b"["):
        raise BadTrace(source, "not JSON: a trace file starts with '{' or '['")
    try:
        doc = _DOC_DECODER.decode(data)
        return doc.traceEvents, _metadata(doc)
    except msgspec.ValidationError:
        pass  # some field has an unexpected type: decode event by event below
    except msgspec.DecodeError:
        return _salvage(data, source, notices)
    return _lenient(data, source, notices)


def _metadata(doc: _Document | _LooseDocument) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "displayTimeUnit",
                "schemaVersion", "traceName"):
        value = getattr(doc, key)
        if value is ABSENT:
            continue
        if isinstance(value, Raw):
            try:
                value = msgspec.json.decode(value)
            except msgspec.DecodeError:
                value = None
        if value is not None:
            meta[key] = value
    return meta


def _lenient(data: bytes, source: str, notices: list[str]) -> tuple[list[_Event], dict[str, Any]]:
    """Decode each event on its own, so one malformed event costs only itself."""
    try:
        top = msgspec.json.decode(data, type=_LooseDocument | list[Raw])
    except msgspec.ValidationError:
        raise BadTrace(source, "JSON, but not a chrome trace: expected an object with 'traceEvents' "
                               "or a list of events") from None
    if isinstance(top, list):
        raw_events, meta = top, {}
    else:
        if top.traceEvents is ABSENT:
            raise BadTrace(source, "JSON, but not a chrome trace: no 'traceEvents' key")
        try:
            raw_events = _RAW_LIST_DECODER.decode(top.traceEvents)
        except msgspec.ValidationError:
            raise BadTrace(source, "'traceEvents' is not a list of events") from None
        meta = _metadata(top)
    events: list[_Event] = []
    skipped = 0
    for raw in raw_events:
        try:
            events.append(_EVENT_DECODER.decode(raw))
        except msgspec.ValidationError:
            skipped += 1
    if raw_events and not events:
        raise BadTrace(source, f"none of the {len(raw_events)} entries in 'traceEvents' is a trace event")
    if skipped:
        notices.append(f"skipped {skipped} malformed event(s) of {len(raw_events)} (wrong field types)")
    return events, meta


def _salvage(data: bytes, source: str, notices: list[str]) -> tuple[list[_Event], dict[str, Any]]:
    """A file cut off mid-write: close it after the last complete event and read that."""
    marker = data.find(b'"traceEvents"')
    if marker < 0:
        raise BadTrace(source, "not valid JSON (and no 'traceEvents' to salvage)")
    end = len(data)
    for _ in range(SALVAGE_MAX_TRIES):
        end = data.rfind(b"}", marker, end)
        if end < 0:
            break
        for suffix in (b"]}", b"}"):
            candidate = data[: end + 1] + suffix
            try:
                top = msgspec.json.decode(candidate, type=_LooseDocument)
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            events, meta = _lenient(candidate, source, notices)
            kept = 100.0 * (end + 1) / len(data)
            notices.append(
                f"the file is cut off (not valid JSON at the end); salvaged {len(events)} complete "
                f"events from the first {kept:.1f}% of it"
            )
            del top
            return events, meta
    raise BadTrace(source, "not valid JSON, and no complete trace events could be salvaged")


# -- columns ---------------------------------------------------------------------------------


def _build(events: list[_Event], meta: dict[str, Any], source: str, notices: list[str]) -> Trace:
    string_ids: dict[str, int] = {}

    def numeric(value: int | str) -> int:
        if isinstance(value, int):
            return value if -INT64_MAX <= value <= INT64_MAX else NO_ID
        if value.lstrip("-").isdigit():  # "457" written as a string by some exporters
            number = int(value)
            return number if -INT64_MAX <= number <= INT64_MAX else NO_ID
        if value not in string_ids:
            string_ids[value] = -1000 - len(string_ids)
        return string_ids[value]

    ts_us = np.fromiter((e.ts for e in events), dtype=np.float64, count=len(events))
    dur_us = np.fromiter((e.dur for e in events), dtype=np.float64, count=len(events))
    bad = ~np.isfinite(ts_us) | ~np.isfinite(dur_us) | (dur_us < 0) | (np.abs(ts_us) > 9e12 * 1000)
    if bad.any():
        notices.append(f"skipped {int(bad.sum())} event(s) with a negative or non-finite ts/dur")
        keep = np.flatnonzero(~bad)
        events = [events[i] for i in keep]
        ts_us, dur_us = ts_us[keep], dur_us[keep]

    names: dict[str, int] = {}
    name_col = np.fromiter((names.setdefault(e.name, len(names)) for e in events), dtype=np.int32,
                           count=len(events))
    cats: dict[str, int] = {}
    cat_col = np.fromiter((cats.setdefault(CATEGORY_ALIASES.get(e.cat, e.cat), len(cats)) for e in events),
                          dtype=np.int16, count=len(events))
    ph_col = np.fromiter((ord(e.ph[0]) if e.ph else 0 for e in events), dtype=np.uint8, count=len(events))
    pid_col = np.fromiter((e.pid if type(e.pid) is int and -INT64_MAX <= e.pid <= INT64_MAX else numeric(e.pid)
                           for e in events), dtype=np.int64, count=len(events))
    tid_col = np.fromiter((e.tid if type(e.tid) is int and -INT64_MAX <= e.tid <= INT64_MAX else numeric(e.tid)
                           for e in events), dtype=np.int64, count=len(events))
    flow_col = np.fromiter((NO_ID if e.id is None else numeric(e.id) for e in events), dtype=np.int64,
                           count=len(events))
    raw_args = [None if e.args is ABSENT else e.args for e in events]
    ids = _decode_ids(raw_args, notices)

    trace = Trace(
        source=source,
        names=list(names),
        categories=list(cats),
        ph=ph_col,
        cat=cat_col,
        name=name_col,
        pid=pid_col,
        tid=tid_col,
        ts=np.rint(ts_us * 1000.0).astype(np.int64),
        dur=np.rint(dur_us * 1000.0).astype(np.int64),
        external_id=ids[0],
        correlation=ids[1],
        stream=ids[2],
        device=ids[3],
        flow_id=flow_col,
        raw_args=raw_args,
        metadata=meta,
        string_ids=string_ids,
        notices=notices,
    )
    _read_lane_names(trace)
    return trace


def _decode_ids(raw_args: list[Raw | None], notices: list[str]) -> tuple[np.ndarray, ...]:
    decode = _ID_DECODER.decode
    try:
        decoded = [None if raw is None else decode(raw) for raw in raw_args]
    except (msgspec.ValidationError, msgspec.DecodeError):
        decoded = [_decode_one_ids(raw) for raw in raw_args]
        unreadable = sum(1 for d in decoded if d is False)
        notices.append(f"{unreadable} event(s) have ids of the wrong type; treated as missing")
    n = len(decoded)
    columns = []
    for attr in ("external_id", "correlation", "stream", "device"):
        values = [getattr(d, attr) if d else NO_ID for d in decoded]
        try:
            columns.append(np.array(values, dtype=np.int64) if n else np.empty(0, dtype=np.int64))
        except OverflowError:
            clipped = [v if -INT64_MAX <= v <= INT64_MAX else NO_ID for v in values]
            notices.append(f"some '{attr}' values overflow int64; treated as missing")
            columns.append(np.array(clipped, dtype=np.int64))
    return tuple(columns)


def _decode_one_ids(raw: Raw | None) -> _IdArgs | None | bool:
    if raw is None:
        return None
    try:
        return _ID_DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False


def _read_lane_names(trace: Trace) -> None:
    for i in np.flatnonzero(trace.ph == PH_METADATA):
        kind = trace.names[int(trace.name[i])]
        if kind not in ("process_name", "thread_name"):
            continue
        raw = trace.raw_args[i]
        try:
            label = msgspec.json.decode(raw, type=_NameArgs).name if raw is not None else ""
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        if not label:
            continue
        if kind == "process_name":
            trace.process_names[int(trace.pid[i])] = label
        else:
            trace.thread_names[(int(trace.pid[i]), int(trace.tid[i]))] = label
