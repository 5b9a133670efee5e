"""A copy of the trace with pista's findings added as markers, for Perfetto / chrome://tracing.

The original events are re-emitted byte for byte (the raw text of `traceEvents` and of every other
top-level key, taken straight from the input), and the markers are appended at the end of
`traceEvents`: a "pista findings" process with one thread per finding, an `X` span per piece of
evidence (an instant `i` where the evidence has no duration) and an instant at the first evidence.
Spans of one finding that overlap go on extra threads under it ("<track> (2)", ...): Perfetto and
chrome://tracing only draw `X` events of one thread right when they nest, and evidence need not.
Timestamps are written from integer nanoseconds, so nothing is rounded beyond the input's own ns.

A big trace that pista's streamed reader took is copied block by block (`stream_copy`), the markers
written after its last event, whose end the reader knows: nothing of the file is held, and a .gz
target is compressed as it goes. Every other input (small, from standard input, damaged, with a
BOM or in UTF-16) is mended the way the in-memory reader mends it, in memory (`render_pieces`).
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import msgspec
import numpy as np

from pista.analysis import Analysis
from pista.errors import BadTrace
from pista.finding import Evidence, Finding
from pista.trace.load import _repair, _text_encoding
from pista.trace.model import Trace

PROCESS_NAME = "pista findings"
CATEGORY = "pista"
FIRST_PID = 999_999  # far from the OS pids and GPU ids torch writes; moved up if taken
# Bytes read, mended and written at a time when a big trace is copied: big enough that the calls
# cost nothing, small enough that the copy holds nothing of the file (the reader's block size).
COPY_BLOCK = 1 << 20
GZIP_LEVEL = 6  # gzip's own default level, the one the copy has always been written with
_GZIP_WBITS = 31  # zlib writes the gzip header and trailer itself (mtime 0, no file name)
_WHITESPACE = b" \t\r\n"

_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])


def marker_pid(analysis: Analysis) -> int:
    used = set(np.unique(analysis.facts.trace.pid).tolist())
    pid = FIRST_PID
    while pid in used:
        pid += 1
    return pid


def _ns(us: float) -> int:
    return int(round(us * 1000.0))


def _ts(us: float) -> str:
    """µs with exactly three decimals (ns), as torch writes them; from integer ns, no float repr."""
    ns = _ns(us)
    sign = "-" if ns < 0 else ""
    q, r = divmod(abs(ns), 1000)
    return f"{sign}{q}.{r:03d}"


def _enc(event: dict[str, Any], ts_us: float | None = None, dur_us: float | None = None) -> bytes:
    """An event as JSON bytes, its ts and dur (µs) written as torch writes them (_ts)."""
    text = json.dumps(event, ensure_ascii=False, separators=(", ", ": "))
    extra = ""
    if ts_us is not None:
        extra += f', "ts": {_ts(ts_us)}'
    if dur_us is not None:
        extra += f', "dur": {_ts(dur_us)}'
    return (text[:-1] + extra + "}").encode()


def marker_events(analysis: Analysis) -> list[bytes]:
    """The pista events, each already encoded as JSON bytes."""
    pid = marker_pid(analysis)
    out = [
        _enc({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": PROCESS_NAME}}),
        _enc({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": -1}}),
        _enc({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
              "args": {"labels": f"verdict: {analysis.summary.verdict}"}}),
    ]
    next_tid = 1
    for finding in analysis.findings:
        rows = sub_tracks(finding)
        tids = list(range(next_tid, next_tid + max(rows, default=0) + 1))
        next_tid += len(tids)
        out += _finding_events(finding, pid, tids, rows)
    return out


def _finding_events(finding: Finding, pid: int, tids: list[int], rows: list[int]) -> list[bytes]:
    """A finding's tracks (threads `tids` of the pista process), a mark at its first evidence, then each evidence
    on its track (`rows`: sub_tracks)."""
    assert finding.severity is not None  # Finding.__post_init__ sets it
    track = f"{finding.severity.value} {finding.rule}"
    out = []
    for j, tid in enumerate(tids):
        out.append(_enc({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                         "args": {"name": track if j == 0 else f"{track} ({j + 1})"}}))
        out.append(_enc({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                         "args": {"sort_index": tid}}))
    if finding.evidence:
        first = min(finding.evidence, key=lambda e: e.ts_us)
        out.append(_enc({"name": f"{finding.rule}: {finding.title}", "ph": "i", "s": "t", "cat": CATEGORY,
                         "pid": pid, "tid": tids[0], "args": _finding_args(finding)}, ts_us=first.ts_us))
    said = {"rule": finding.rule, "severity": finding.severity.value, "title": finding.title}
    out += [_evidence_event(said, e, pid, tids[row]) for e, row in zip(finding.evidence, rows, strict=True)]
    return out


def _evidence_event(said: dict[str, str], e: Evidence, pid: int, tid: int) -> bytes:
    """One evidence, its args what the finding `said` (rule, severity, title) and its own: a span, or an instant
    where it has no duration."""
    args = {**said, "evidence": e.name, "lane": e.lane, "step": e.step, "note": e.note}
    event = {"name": e.name, "ph": "X" if e.dur_us > 0 else "i", "cat": CATEGORY, "pid": pid, "tid": tid, "args": args}
    if e.dur_us > 0:
        return _enc(event, ts_us=e.ts_us, dur_us=e.dur_us)
    return _enc({**event, "s": "t"}, ts_us=e.ts_us)


def sub_tracks(finding: Finding) -> list[int]:
    """For each piece of evidence, which of the finding's tracks it goes on (0: the named one).

    First fit in evidence order, so the first (most telling) evidence keeps the main track, and no
    two spans on a track overlap at all. Computed on the ns written out, so rounding cannot make
    spans that touch overlap. Instants have no extent to clash, so they stay on the main track.
    """
    taken: list[list[tuple[int, int]]] = [[]]
    rows = []
    for e in finding.evidence:
        if not e.dur_us > 0:
            rows.append(0)
            continue
        start = _ns(e.ts_us)
        end = start + _ns(e.dur_us)
        row = _first_free(taken, start, end)
        if row == len(taken):
            taken.append([])
        taken[row].append((start, end))
        rows.append(row)
    return rows


def _first_free(taken: list[list[tuple[int, int]]], start: int, end: int) -> int:
    """The first track none of whose spans overlaps [start, end) (len(taken): none is free)."""
    return next((r for r, spans in enumerate(taken) if all(end <= a or b <= start for a, b in spans)), len(taken))


def _finding_args(f: Finding) -> dict[str, Any]:
    assert f.severity is not None  # Finding.__post_init__ sets it
    return {"rule": f.rule, "severity": f.severity.value, "title": f.title, "message": f.message,
            "advice": f.advice}


def annotate_bytes(original: bytes, analysis: Analysis, source: str = "<trace>",
                   notices: list[str] | None = None) -> bytes:
    """The original JSON document with the markers appended to its event list, whole."""
    return b"".join(annotate_pieces(original, analysis, source, notices))


def annotate_pieces(original: bytes, analysis: Analysis, source: str = "<trace>",
                    notices: list[str] | None = None) -> list[bytes | memoryview]:
    """annotate_bytes in pieces (the document's values as views of the text, not copies). The text
    is taken as pista's reader takes it (json_text); what only the copy changes is added to
    `notices`. A document that cannot be annotated raises here, before anything is written."""
    markers = b",\n".join(marker_events(analysis))
    text, top = json_text(original, source, notices if notices is not None else [])
    if top is None:  # the bare-array form of the chrome trace format
        return _append(memoryview(text), markers, source)
    parts: list[bytes | memoryview] = [b"{\n"]
    found = False
    for key, raw in top.items():
        if len(parts) > 1:
            parts.append(b",\n")
        parts.append(json.dumps(key).encode() + b": ")
        if key == "traceEvents":
            parts += _append(memoryview(raw), markers, source)
            found = True
        else:
            parts.append(memoryview(raw))
    if not found:
        parts.append((b",\n" if len(parts) > 1 else b"") + b'"traceEvents": [\n' + markers + b"\n]")
    parts.append(b"\n}\n")
    return parts


# A \\uXXXX escape of a UTF-16 surrogate without its partner (a high one not followed by a low one,
# a low one not after a high one), outside an escaped backslash: msgspec stops reading at it and
# other JSON readers differ; \\ufffd (the replacement character) reads the same everywhere.
_LONE_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)(?:\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2})")
_WHOLE = msgspec.json.Decoder(msgspec.Raw)
_FIRST = re.compile(rb"\s*")


def json_text(data: bytes, source: str, notices: list[str]) -> tuple[bytes, dict[str, msgspec.Raw] | None]:
    """The trace as one UTF-8 JSON document, and its top-level keys (None: a bare event list).

    What pista's reader reads around is mended the same way, with its helpers: a BOM dropped,
    UTF-16 converted, bytes that are not UTF-8 as U+FFFD, bare NaN/inf/N/A quoted. The reader's
    notices have said so; only the lone surrogates, which it skips with their events and the copy
    keeps as U+FFFD, get a notice here. Each step runs only where the text so far does not read.
    """
    said: list[str] = []  # decode_trace told the user these
    text = _text_encoding(data, source, said)
    parsed = _parse(text)
    if parsed is False:
        text = _repair(text, said)
        parsed = _parse(text)
    if parsed is False:
        text, count = _LONE_SURROGATE.subn(rb"\1\\ufffd", text)
        parsed = _parse(text) if count else False
        if parsed is not False:
            notices.append(f"{count} lone UTF-16 surrogate escape(s) (\\ud800-\\udfff without a partner) "
                           "written as \\ufffd in the copy")
    if parsed is False:
        raise BadTrace(source, "cannot annotate: the file is not one complete JSON document (cut off or "
                               "damaged); re-export the trace")
    return text, parsed


def _parse(text: bytes) -> dict[str, msgspec.Raw] | None | Literal[False]:
    """The top-level keys, None for a bare event list, False where the text is not one whole JSON
    document in UTF-8 (msgspec passes bytes that are not UTF-8 inside the strings it skips)."""
    if not text.isascii():
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return False
    bare = text[_FIRST.match(text).end():][:1] == b"["  # type: ignore[union-attr]  # \s* always matches
    try:
        if bare:
            _WHOLE.decode(text)
            return None
        return _TOP_LEVEL.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False


def _append(array: memoryview, markers: bytes, source: str) -> list[bytes | memoryview]:
    """The array's text up to its last element, then the markers and the closing bracket."""
    end = _rstrip(array, len(array))
    if not end or array[end - 1] != ord("]"):
        raise BadTrace(source, "cannot annotate: traceEvents is not a JSON array")
    end = _rstrip(array, end - 1)
    empty = end > 0 and array[end - 1] == ord("[")
    return [array[:end], (b"\n" if empty else b",\n") + markers + b"\n]"]


def _rstrip(view: memoryview, end: int) -> int:
    while end and view[end - 1] in _WHITESPACE:
        end -= 1
    return end


def render(original: bytes, analysis: Analysis, gz: bool = False, source: str = "<trace>",
           notices: list[str] | None = None) -> bytes:
    data = annotate_bytes(original, analysis, source, notices)
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0) if gz else data


def render_pieces(original: bytes, analysis: Analysis, gz: bool = False, source: str = "<trace>",
                  notices: list[str] | None = None) -> Iterator[bytes | memoryview]:
    """render's output in pieces, for write_output: no whole copy of the document is made. Raises
    before the first piece where the document cannot be annotated."""
    pieces = annotate_pieces(original, analysis, source, notices)
    return _gzipped(pieces) if gz else iter(pieces)


def _gzipped(pieces: Iterable[bytes | memoryview]) -> Iterator[bytes]:
    packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    for piece in pieces:
        if packed := packer.compress(piece):
            yield packed
    yield packer.flush()


# -- big traces: copied as they are read ------------------------------------------------------


class NotWhereExpected(Exception):
    """The bytes after the last event are not the array's closing bracket (the reader's offsets do
    not match the file): the caller annotates in memory instead."""


def events_end(trace: Trace) -> int | None:
    """Offset, in the JSON text, just past the last event of traceEvents, where the streamed reader
    knows it (where its last block of events ends); None for a trace read in memory."""
    end = getattr(trace.raw_args, "events_end", None)
    return end if isinstance(end, int) and end > 0 else None


def stream_copy(path: str, end: int, analysis: Analysis, gz: bool, notices: list[str]) -> Iterator[bytes]:
    """The file's JSON text block by block, the markers after its last event (which ends at `end`),
    gzipped when `gz`: for write_output, holding a block at a time. Bytes that are not UTF-8 (the
    streamed reader skips args it does not read, without looking at their bytes) become U+FFFD, as
    the in-memory reader makes them, with a notice; the reader has refused anything else odd."""
    markers = b",\n" + b",\n".join(marker_events(analysis))
    mend = _Utf8Mend()
    pieces = (mend(piece) if isinstance(piece, bytes) else piece.marker
              for piece in _split_at(_blocks(path), end, markers, path))
    yield from (_gzipped(pieces) if gz else pieces)
    if mend.replaced:
        notices.append("bytes that are not UTF-8 were written as U+FFFD in the copy")


class _Marker:
    """The marker text among the file's blocks (which are mended; it is not)."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker


def _split_at(blocks: Iterable[bytes], end: int, markers: bytes, source: str) -> Iterator[bytes | _Marker]:
    """The blocks with the markers put in at offset `end`, checking that only whitespace and the
    array's ']' follow there."""
    at = 0
    inserted = closed = False
    for block in blocks:
        if not inserted and at + len(block) >= end:
            cut = end - at
            yield block[:cut]
            yield _Marker(markers)
            block, at, inserted = block[cut:], end, True
        if inserted and not closed and (rest := block.lstrip(_WHITESPACE)):
            if rest[:1] != b"]":
                raise NotWhereExpected(source)
            closed = True
        at += len(block)
        if block:
            yield block
    if not closed:
        raise NotWhereExpected(source)


def _blocks(path: str) -> Iterator[bytes]:
    """The file's JSON text (unpacked when gzipped) in COPY_BLOCK pieces; a read error is the
    trace's, not the output's."""
    try:
        with _open_text(path) as handle:
            while block := handle.read(COPY_BLOCK):
                yield block
    except (OSError, EOFError, zlib.error) as err:
        raise BadTrace(path, f"cannot read it again to copy it: {getattr(err, 'strerror', None) or err}") from None


def _open_text(path: str) -> io.BufferedIOBase:
    with open(path, "rb") as handle:
        gzipped = handle.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if gzipped else open(path, "rb")  # noqa: SIM115 - the caller closes it


class _Utf8Mend:
    """Bytes that are not UTF-8 as U+FFFD, as `bytes.decode("utf-8", "replace")` of the whole text
    would write them, one piece at a time (a character may straddle two pieces). ASCII pieces, all
    of a real trace but for a few names, pass untouched."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.replaced = False

    def __call__(self, piece: bytes) -> bytes:
        held = self._decoder.getstate()[0]
        if not held and piece.isascii():
            return piece
        out = self._decoder.decode(piece).encode()
        kept = len(piece) - len(self._decoder.getstate()[0])
        if out != held + piece[:kept]:
            self.replaced = True
        return out
