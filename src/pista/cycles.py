"""A folder of one process's profiler cycles: what `torch.profiler.tensorboard_trace_handler(dir)`
writes, one file per cycle of the schedule (`HOST_PID.TIMESTAMP.pt.trace.json[.gz]`).

Such a folder is not a distributed job: its files are one run at different times. `cycle_files`
tells the two apart from the files' headers (the first KB of each, not the whole trace): files of
one process (the same pid, and the same host where one is known) that name no distinct ranks
(`distributedInfo.rank`, `rank-N` in the file name) are cycles; anything else stays ranks. The
cycles are analyzed one by one (`pista.analysis.analyze`), ordered by when each trace starts, and
each pair of consecutive cycles says what changed: the median step, the verdict, the findings.

    from pista.cycles import analyze_cycles, cycle_files
    paths = cycle_files("log/")            # None: not one process's cycles (ranks, or a stray file)
    result = analyze_cycles(paths, source="log/")
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from pista._version import __version__
from pista.policy import SEVERITY_ORDER
from pista.schema import JSON_SCHEMA_VERSION

if TYPE_CHECKING:
    from pista.analysis import Analysis
    from pista.finding import Finding

__all__ = ["CycleChange", "CyclesAnalysis", "Header", "analyze_cycles", "cycle_files", "read_header"]

# tensorboard_trace_handler's file name: worker_name (default f"{hostname}_{pid}"), time.time_ns(),
# then .pt.trace.json (.gz with use_gzip=True)
HANDLER_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?$")
HOST_PID = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)$")
RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)  # as pista.distributed.rank reads a rank from a name
# How much of a file's JSON a header is read from: Kineto writes the metadata (deviceProperties,
# distributedInfo) before "traceEvents", and the host's first events come right after.
HEAD_BYTES = 1 << 20
HEAD_EVENTS = 5_000  # events looked at for the process's pid before giving up on the events
# Categories of events on the host process's own pid (GPU events carry the device id as their pid).
HOST_CATEGORIES = frozenset({"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function",
                             "cpu_instant_event"})
_EVENTS_KEY = re.compile(r'"traceEvents"\s*:\s*\[')


# -- which folder is which ------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """What a trace file says about where it comes from, read from its first HEAD_BYTES."""

    path: str
    pid: int | None = None  # the host process: from its events, else from a HOST_PID file name
    pid_from: str = ""  # "events" | "file name" | ""
    host: str | None = None  # the trace's host_name, else the HOST of a HOST_PID file name
    rank: int | None = None  # distributedInfo.rank
    name_rank: int | None = None  # rank-N / rankN in the file name
    name_ns: int | None = None  # the handler's time.time_ns() in the file name
    trace_id: str | None = None  # Kineto's id of the trace: every cycle gets its own


def read_header(path: str | os.PathLike[str]) -> Header:
    """The pid, host and rank a trace file carries; None for what it does not say (or a file that is
    no trace: a header never fails, the analysis words the error)."""
    p = Path(path)
    name_match = HANDLER_NAME.match(p.name)
    host_pid = _host_pid(name_match)
    rank_match = RANK_IN_NAME.search(p.name)
    meta, pid = _head(p)
    pid, pid_from = _pid_and_source(pid, host_pid)
    host = _text(meta.get("host_name")) or (host_pid.group("host") if host_pid else None)
    return Header(path=str(path), pid=pid, pid_from=pid_from, host=host, rank=_rank(meta),
                  name_rank=_group_number(rank_match, 1), name_ns=_group_number(name_match, "ns"),
                  trace_id=_text(meta.get("trace_id")))


def _pid_and_source(pid: int | None, host_pid: re.Match[str] | None) -> tuple[int | None, str]:
    """The host process's pid and where it comes from: the events' (`pid`), else a HOST_PID file name's."""
    if pid is not None:
        return pid, "events"
    if host_pid is not None:
        return int(host_pid.group("pid")), "file name"
    return None, ""


def _rank(meta: dict[str, Any]) -> int | None:
    """distributedInfo.rank, where it is an integer."""
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    return rank if _integer(rank) else None


def _integer(value: Any) -> TypeGuard[int]:
    """An int, and no boolean (JSON's true is no pid or rank)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _group_number(match: re.Match[str] | None, group: int | str) -> int | None:
    """The number a file name's match holds in `group`, None without a match."""
    return int(match.group(group)) if match else None


def _host_pid(name_match: re.Match[str] | None) -> re.Match[str] | None:
    """The HOST_PID in the handler's file name's worker part, if it is one."""
    worker = name_match.group("worker") if name_match else None
    return HOST_PID.match(worker) if worker else None


def _text(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _head(path: Path) -> tuple[dict[str, Any], int | None]:
    """(the top-level keys before "traceEvents", the pid of the first host event) from the file's head."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            data = fh.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        return {}, None
    text = data.decode("utf-8", "replace")
    key = _EVENTS_KEY.search(text)
    start = len(text) - len(text.lstrip())
    if key is not None:
        meta = _prefix_keys(text[:key.start()])
        at = key.end()
    elif text[start:start + 1] == "[":  # a bare list of events
        meta, at = {}, start + 1
    else:
        return {}, None
    return meta, _first_host_pid(text, at)


def _prefix_keys(prefix: str) -> dict[str, Any]:
    try:
        doc = json.loads(prefix + '"traceEvents": []}')
    except (ValueError, RecursionError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _first_host_pid(text: str, at: int) -> int | None:
    """The pid of the first host event (or the CPU's process_labels) from `at`, inside the head."""
    decoder = json.JSONDecoder()
    for _ in range(HEAD_EVENTS):
        event, at = _next_event(decoder, text, at)
        if event is None:
            return None
        pid = event.get("pid")
        if _integer(pid) and pid >= 0 and _is_host(event):
            return pid
    return None


def _next_event(decoder: json.JSONDecoder, text: str, at: int) -> tuple[dict[str, Any] | None, int]:
    """The event object at `at` (past commas and white space) and where it ends; None where there is none
    (the list's end, cut off by the head, not JSON, not an object)."""
    while at < len(text) and text[at] in " \t\r\n,":
        at += 1
    if at >= len(text) or text[at] != "{":
        return None, at
    try:
        event, at = decoder.raw_decode(text, at)
    except (ValueError, RecursionError):
        return None, at  # cut off by the head, or not JSON
    return (event if isinstance(event, dict) else None), at


def _is_host(event: dict[str, Any]) -> bool:
    """A host event, or the CPU's process_labels."""
    if event.get("cat") in HOST_CATEGORIES:
        return True
    args = event.get("args")
    return (event.get("ph") == "M" and event.get("name") == "process_labels" and isinstance(args, dict)
            and args.get("labels") == "CPU")


def one_process(headers: list[Header]) -> bool:
    """Cycles of one run: two files or more, every one with a pid, all the same; one host where the
    files name one; no two ranks (from distributedInfo, or rank-N in the names); and no trace twice
    (two files with one trace_id are copies of one trace, which a folder of ranks reports)."""
    return len(headers) >= 2 and _consistent(headers)


def _consistent(headers: list[Header]) -> bool:
    pids = {h.pid for h in headers}
    if None in pids or len(pids) > 1:
        return False
    if not all(_at_most_one([getattr(h, key) for h in headers]) for key in ("host", "rank", "name_rank")):
        return False
    return _no_trace_twice(headers)


def _no_trace_twice(headers: list[Header]) -> bool:
    """No two files with one trace_id (copies of one trace)."""
    ids = [h.trace_id for h in headers if h.trace_id is not None]
    return len(ids) == len(set(ids))


def _at_most_one(values: list[Any]) -> bool:
    """At most one value other than None."""
    return len({v for v in values if v is not None}) <= 1


def cycle_files(folder: str | os.PathLike[str]) -> list[Header] | None:
    """The folder's trace files' headers if they are one process's cycles, else None (ranks, as
    `pista.distributed.analyze_ranks` reads them). The files are the ones analyze_ranks would read;
    a folder of ranks costs the headers of its first files only (two ranks differ at the second)."""
    # start-up: only for a folder (126 modules: the distributed reader)
    from pista.distributed.rank import trace_files

    headers: list[Header] = []
    for path in trace_files(folder):
        headers.append(read_header(path))
        if not _consistent(headers[:1] + headers[1:][-1:]):  # the quick way out; the whole check follows
            return None
    return headers if one_process(headers) else None


# -- the analysis -----------------------------------------------------------------------------


@dataclass(eq=False)
class Cycle:
    path: str
    analysis: Analysis
    start_ns: int  # when the trace starts: baseTimeNanoseconds + its first event (ns)
    end_ns: int

    @property
    def step_us(self) -> float:
        return self.analysis.summary.step_us

    def to_dict(self, row_limit: int = 25) -> dict[str, Any]:
        return dict(self.analysis.to_dict(row_limit=row_limit), path=self.path)


@dataclass(frozen=True)
class CycleChange:
    """From one cycle to the next (indexes into `cycles`, in time order)."""

    before: int
    after: int
    step_us_before: float
    step_us_after: float
    verdict_before: str
    verdict_after: str
    appeared: tuple[tuple[str, str], ...]  # (rule, severity) firing after, not before
    vanished: tuple[tuple[str, str], ...]  # (rule, severity) firing before, not after
    severity_changed: tuple[tuple[str, str, str], ...]  # (rule, before, after)

    @property
    def step_change(self) -> float | None:
        """The median step's change as a share of the earlier one (+0.10: 10% slower)."""
        if self.step_us_before <= 0:
            return None
        return self.step_us_after / self.step_us_before - 1.0

    @property
    def verdict_changed(self) -> bool:
        return self.verdict_before != self.verdict_after

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.before, "to": self.after,
                "step_us": {"from": self.step_us_before, "to": self.step_us_after, "change": self.step_change},
                "verdict": {"from": self.verdict_before, "to": self.verdict_after, "changed": self.verdict_changed},
                "appeared": [{"rule": r, "severity": s} for r, s in self.appeared],
                "vanished": [{"rule": r, "severity": s} for r, s in self.vanished],
                "severity_changed": [{"rule": r, "from": a, "to": b} for r, a, b in self.severity_changed]}


@dataclass(eq=False)
class CyclesAnalysis:
    source: str
    cycles: list[Cycle]
    changes: list[CycleChange]
    pid: int | None = None
    host: str | None = None
    notices: list[str] = field(default_factory=list)

    def to_dict(self, row_limit: int = 25) -> dict[str, Any]:
        return {"schema_version": JSON_SCHEMA_VERSION, "pista_version": __version__, "folder": self.source,
                "process": {"host": self.host, "pid": self.pid},
                "cycles": [c.to_dict(row_limit) for c in self.cycles],
                "changes": [c.to_dict() for c in self.changes], "notices": self.notices}


def analyze_cycles(headers: list[Header], source: str, rules: list[str] | None = None,
                   lang: str = "en") -> CyclesAnalysis:
    """Analyze every file as one cycle (`pista.analysis.analyze`), in the order the traces start,
    with findings in `lang`, and what changed from each cycle to the next."""
    cycles = [(_read_cycle(h.path, rules, lang), h) for h in headers]
    # by when the trace starts; the handler's time in the name, then the name, where two start together
    cycles.sort(key=lambda ch: (ch[0].start_ns, ch[1].name_ns or 0, ch[0].path))
    ordered = [c for c, _ in cycles]
    first = headers[0]
    return CyclesAnalysis(source, ordered, [change(i, ordered[i], ordered[i + 1]) for i in range(len(ordered) - 1)],
                          pid=first.pid, host=next((h.host for h in headers if h.host), None),
                          notices=_overlap_notices(ordered, lang))


def _overlap_notices(ordered: list[Cycle], lang: str) -> list[str]:
    """A notice, in `lang`, for each cycle that starts before the one before it ends."""
    # start-up: `pista analyze` reads a folder's header without the analysis
    from pista.i18n import note_text
    from pista.notices import CyclesOverlap

    return [note_text(CyclesOverlap(i), lang)
            for i, (a, b) in enumerate(zip(ordered, ordered[1:], strict=False), start=1) if b.start_ns < a.end_ns]


def _read_cycle(path: str, rules: list[str] | None, lang: str) -> Cycle:
    """One file read and analysed as a cycle, its findings in `lang`."""
    # start-up: `pista analyze` reads a folder's header without the analysis
    from pista.analysis import analyze
    from pista.i18n import localize
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    trace = load_trace(path)
    analysis = localize(analyze(derive(trace), rules=rules), lang)
    base = trace.base_time_ns or 0
    return Cycle(path, analysis, base + trace.start_ns, base + trace.end_ns)


def _by_rule(findings: list[Finding]) -> dict[str, str]:
    """Each rule that fired, with its worst severity."""
    worst: dict[str, str] = {}
    for f in findings:
        sev = f.severity.value  # type: ignore[union-attr]
        if f.rule not in worst or SEVERITY_ORDER.index(sev) > SEVERITY_ORDER.index(worst[f.rule]):
            worst[f.rule] = sev
    return worst


def change(i: int, a: Cycle, b: Cycle) -> CycleChange:
    before, after = _by_rule(a.analysis.findings), _by_rule(b.analysis.findings)
    return CycleChange(
        before=i, after=i + 1, step_us_before=a.step_us, step_us_after=b.step_us,
        verdict_before=a.analysis.summary.verdict, verdict_after=b.analysis.summary.verdict,
        appeared=_only_in(after, before), vanished=_only_in(before, after),
        severity_changed=tuple((r, before[r], s) for r, s in after.items() if r in before and before[r] != s))


def _only_in(rules: dict[str, str], other: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """(rule, severity) of the rules the other cycle has no finding of."""
    return tuple((r, s) for r, s in rules.items() if r not in other)
