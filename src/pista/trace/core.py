"""The reader's core, shared by the whole-file reader (pista.trace.load) and the streamed one
(pista.trace.stream): the event structs msgspec decodes into, the limits on what an event may hold,
and the rules that turn decoded events into columns (times, names, categories, phases, ids). Both
readers call these, so a file reads the same whichever path takes it."""

from __future__ import annotations

import itertools
import os
import re
from collections import defaultdict
from collections.abc import Sequence
from operator import attrgetter
from typing import Annotated, Any

import msgspec
import numpy as np
from msgspec import Raw, Struct, field

from pista.errors import BadTrace, PistaError
from pista.trace.model import CATEGORY_ALIASES, NO_ID, PH_METADATA, Trace

GZIP_MAGIC = b"\x1f\x8b"
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
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
# msgspec cannot type `Raw | None`; a shared default marks a field that was absent.
ABSENT = Raw(b"null")


class NotATrace(BadTrace):
    """Readable JSON that is no chrome trace (run details, a memory timeline): a folder of rank
    traces skips such a file with a notice, where a real trace that is damaged fails it."""



class IdArgs(Struct, gc=False):
    """The ids analysis reads from an event's args."""

    external_id: int = field(name="External id", default=NO_ID)
    # Kineto before 2021-04 wrote the GPU side's link to its op in lower case
    external_id_old: int = field(name="external id", default=NO_ID)
    correlation: int = NO_ID
    stream: int = NO_ID
    device: int = NO_ID


# An id the whole-file reader reads as a number. Past int64 it notes and drops it: the streamed
# reader sends such a file there.
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class CheckedIdArgs(IdArgs, gc=False):
    """IdArgs as the streamed reader decodes them: stream and device checked here, so a read that
    leaves their columns out still sends the same files to the whole-file reader."""

    stream: Int64 = NO_ID
    device: Int64 = NO_ID


class Event(Struct, gc=False):
    """One event as the whole-file reader decodes it: `args` kept as its raw JSON."""

    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = NO_TS
    dur: float = 0.0
    id: int | str | None = NO_ID
    args: Raw = ABSENT


class IdEvent(Event, gc=False):
    """One event as the streamed reader decodes it: the ids in `args` read in the same decode (the
    args are read back from the file when asked)."""

    args: CheckedIdArgs = field(default_factory=CheckedIdArgs)  # type: ignore[assignment]


class Document(Struct, gc=False):
    traceEvents: list[Event]  # noqa: N815 - the chrome-trace key; required, so `{"foo": 1}` is refused
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: int | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    schemaVersion: int | str | None = None  # noqa: N815
    traceName: str | None = None  # noqa: N815
    pista_host: Raw = ABSENT  # what `pista run`/`profile` wrote about the CPU (threads, cores, ISA)


class LooseDocument(Struct, gc=False):
    traceEvents: Raw = ABSENT  # noqa: N815
    deviceProperties: Raw = ABSENT  # noqa: N815
    distributedInfo: Raw = ABSENT  # noqa: N815
    baseTimeNanoseconds: Raw = ABSENT  # noqa: N815
    displayTimeUnit: Raw = ABSENT  # noqa: N815
    schemaVersion: Raw = ABSENT  # noqa: N815
    traceName: Raw = ABSENT  # noqa: N815
    pista_host: Raw = ABSENT



class NameArgs(Struct, gc=False):
    name: str = ""


EVENT_DECODER = msgspec.json.Decoder(Event)
EVENT_LIST_DECODER = msgspec.json.Decoder(list[Event])
LOOSE_DECODER = msgspec.json.Decoder(LooseDocument)
DECODE_ERRORS = (msgspec.DecodeError, RecursionError)
EVENT_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
# Times at or past this many µs cannot go through a float64 to whole ns: its step there is ~2 ns and
# grows (epoch-µs traces such as 1695835535123456.789 µs are read to 0.25 µs). Their digits are parsed
# exactly instead (the whole-file reader does). Below it (Kineto's steady clock: big_gpt_eager_20steps
# at 5.4e12 µs, 62 days of uptime) a float64 carries the µs to within a ns, and the fast typed decode stays.
EXACT_FROM_US = float(1 << 43)


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



class Skipped:
    """Tally of events that could not be read, with the first reason, for one notice."""

    def __init__(self) -> None:
        self.count = 0
        self.first = ""

    def add(self, index: int, err: BaseException | str) -> None:
        self.count += 1
        if not self.first:
            self.first = f"event {index}: {describe(err)}"


NESTED_TOO_DEEP = "nested too deeply to read (about 1000 levels of [ and {)"


def describe(err: BaseException | str) -> str:
    if isinstance(err, RecursionError):
        return NESTED_TOO_DEEP
    text = str(err).removeprefix("JSON is malformed: ")
    if text == "Input data was truncated":
        return "it ends mid-value"
    return text.replace(" (byte ", " at byte ").replace(")", "") if "(byte " in text else text



def metadata(doc: Document | LooseDocument) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "displayTimeUnit",
                "schemaVersion", "traceName", "pista_host"):
        value = getattr(doc, key)
        if value is ABSENT:
            continue
        value = _json_value(value)
        if value is not None:
            meta[key] = value
    return meta


def _json_value(value: Any) -> Any:
    """A raw JSON value decoded (None where it is no JSON); any other value as it is."""
    if not isinstance(value, Raw):
        return value
    try:
        return msgspec.json.decode(value)
    except DECODE_ERRORS:
        return None



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
    return [i for i, name in enumerate(names)
            if name.startswith("ProfilerStep#") and (m := _STEP_NAME.match(name)) and _past_int64(m.group(1))]


def _past_int64(digits: str) -> bool:
    """Whether a step number's digits make a number past int64."""
    return len(digits) > _STEP_DIGITS or (len(digits) == _STEP_DIGITS and int(digits) > INT64_MAX)


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




def skip_notice(notices: list[str], skipped: Skipped, bad_times: int, kept: int) -> None:
    total = kept + skipped.count + bad_times
    if not skipped.count and not bad_times:
        return
    notices.append(f"skipped {skipped.count + bad_times} malformed event(s) of {total} "
                   f"({_skip_reason(skipped, bad_times)})")


def _skip_reason(skipped: Skipped, bad_times: int) -> str:
    """Why the events were skipped: unreadable (the first's error), bad times, or how many of each."""
    times = "a negative, non-finite or out-of-range ts/dur"
    if skipped.count and bad_times:
        return f"{skipped.count} unreadable (first: {skipped.first}), {bad_times} with {times}"
    if skipped.count:
        return f"first: {skipped.first}"
    return times



def ph_code(ph: str) -> int:
    """An event's phase as its first character's code (0 for none, or one past ASCII)."""
    return ord(ph[0]) if ph and ph[0] < "\x80" else 0


def times_ns(us: np.ndarray) -> np.ndarray:
    """µs (float64, checked by bad_times) to whole ns."""
    return np.rint(us * 1000.0).astype(np.int64)


class Interner:
    """Strings (names, categories) to ids in the order they are first met."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def remap(self, local: Sequence[str]) -> np.ndarray:
        ids = self.ids
        return np.fromiter((ids.setdefault(s, len(ids)) for s in local), dtype=np.int64, count=len(local))


_NAME_CAT_PH = attrgetter("name", "cat", "ph")


def string_columns(events: Sequence[Event], names: Interner, cats: Interner) -> tuple[np.ndarray, np.ndarray,
                                                                                       np.ndarray]:
    """The events' name ids (int32), category ids (int64: the caller checks MAX_CATEGORIES) and ph
    codes (uint8), names and categories interned in the order they are first met. A run holds few
    distinct (name, cat, ph) (194 in big_gpt_eager_20steps' 191 k events), so each event costs one
    dict lookup, in C."""
    local: defaultdict[tuple[str, str, str], int] = defaultdict(itertools.count().__next__)
    kind = np.fromiter(map(local.__getitem__, map(_NAME_CAT_PH, events)), dtype=np.int32, count=len(events))
    triples = list(local)
    name_col = names.remap([name for name, _, _ in triples]).astype(np.int32)[kind]
    cat_col = cats.remap([CATEGORY_ALIASES.get(cat, cat) for _, cat, _ in triples])[kind]
    ph_col = np.array([ph_code(ph) for _, _, ph in triples], dtype=np.uint8)[kind]
    return name_col, cat_col, ph_col


def odd_number(value: Any, string_ids: dict[str, int], is_flow: bool) -> int | None:
    """A pid, tid or flow id that is no int64 (a string, a null, an int past int64) as both readers
    number it: a string of digits as its number, another string as a lane id of its own (-1000, -1001,
    ... in the order met; pids, then tids, then flow ids), a null or overflowing flow id as NO_ID.
    None for a pid/tid that is null or past int64 (the whole-file reader's caller decides)."""
    if isinstance(value, int):
        if -INT64_MAX <= value <= INT64_MAX:
            return value
        return NO_ID if is_flow else None
    if not isinstance(value, str):
        return NO_ID if is_flow and value is None else None
    number = text_number(value)
    if number is not None:
        return number
    return string_ids.setdefault(value, -1000 - len(string_ids))


def read_lane_names(trace: Trace) -> None:
    """The process and thread names the metadata events give, into the trace."""
    for i in np.flatnonzero(trace.ph == PH_METADATA):
        kind = trace.names[int(trace.name[i])]
        if kind not in ("process_name", "thread_name"):
            continue
        raw = trace.raw(int(i))
        try:
            label = msgspec.json.decode(raw, type=NameArgs).name if raw is not None else ""
        except EVENT_ERRORS:
            continue
        if not label:
            continue
        if kind == "process_name":
            trace.process_names[int(trace.pid[i])] = label
        else:
            trace.thread_names[(int(trace.pid[i]), int(trace.tid[i]))] = label
