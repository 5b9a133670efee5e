"""One rank's trace -> a small `RankSummary`: what the cross-rank analysis needs, cheap to ship
between processes (no Trace, no table)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from pista.distributed.comm import (
    COLLECTIVE_CALL,
    COMM_KERNEL,
    HOST_COMM_WORK,
    Collective,
    CommStats,
    StepComm,
    communication,
)
from pista.errors import PistaError, UsageError
from pista.finding import Finding, Record
from pista.i18n import note_text
from pista.isolation import RuleFailed
from pista.notices import RanksByOrder, SkippedLinks
from pista.trace.facts import Facts, derive

RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)
TRACE_SUFFIXES = (".json", ".json.gz")

T = TypeVar("T")

# What a rank ships of its work, for the cross-rank check to say what a late rank does that the
# others do not: the regions (host ops, record_function annotations, Python functions; kernels,
# copies and memsets other than communication) with the most time per step, down to this much per
# step (ns). A straggler's lateness is 2 ms or more (the straggler rule's LATE_MIN_MS); the slowed
# gloo ranks' `slow_input` is 30 ms per step, gpu/fp32_gemm's fp32 GEMM 2.7 ms.
HOST_REGION_MIN_NS = 500_000
HOST_REGIONS = 40
HOST_REGION_CATEGORIES = ("cpu_op", "user_annotation", "python_function")
DEVICE_DEPTH = 1_000  # device work sits below the ops that launch it: the most specific region


@dataclass(frozen=True)
class HostRegion:
    """Time per step of the events of one name (inclusive), and how deep the shallowest sits."""

    name: str
    ns_per_step: float
    depth: int
    device: bool = False  # kernels, copies, memsets


@dataclass
class RankSummary:
    path: str
    rank: int | None = None
    rank_from: str = ""  # "distributedInfo" | "file name" | "order"
    world_size: int | None = None
    backend: str | None = None
    clock_base_ns: int = 0  # baseTimeNanoseconds: added to the trace's ts for a shared clock
    summary: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    comm: CommStats | None = None
    notices: list[str] = field(default_factory=list)
    failures: list[RuleFailed] = field(default_factory=list)  # rules that raised on this rank (also notices)
    error: str | None = None  # a bad trace, as its one-line message
    not_a_trace: bool = False  # the error is that the file is JSON but no trace (run details beside the ranks)
    host_regions: tuple[HostRegion, ...] = ()  # the costliest regions per step, not in to_dict

    @property
    def steps(self) -> list[StepComm]:
        return self.comm.steps if self.comm else []

    @property
    def collectives(self) -> list[Collective]:
        return self.comm.events if self.comm else []

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "rank_from": self.rank_from, "path": self.path,
                "world_size": self.world_size, "backend": self.backend, "summary": self.summary,
                "communication": self.comm.to_dict() if self.comm else None,
                "findings": [f.to_dict() for f in self.findings], "notices": self.notices,
                "error": self.error}


def summarize_rank(path: str, rules: list[str] | None = None) -> RankSummary:
    """Load, analyze and summarise one rank's trace. Runs in a worker: errors come back as data."""
    # in the worker that analyses a rank: the parent reads files and ranks only
    from pista.analysis import analyze
    from pista.trace.load import NotATrace, load_trace

    try:
        trace = load_trace(path)
        facts = derive(trace)
        analysis = analyze(facts, rules=rules)
    except PistaError as err:
        return RankSummary(path=path, error=str(err), not_a_trace=isinstance(err, NotATrace))
    info = trace.distributed_info
    rank = _typed(info.get("rank"), int)
    return RankSummary(
        path=path,
        rank=rank,
        rank_from="distributedInfo" if rank is not None else "",
        world_size=_typed(info.get("world_size"), int),
        backend=_typed(info.get("backend"), str),
        clock_base_ns=trace.base_time_ns or 0,
        summary=analysis.summary.to_dict(),
        findings=analysis.findings,
        comm=_portable_communication(facts),
        notices=list(trace.notices) + [n for n in analysis.notices if n in _failure_texts(analysis.failures)],
        failures=analysis.failures,
        host_regions=host_regions(facts),
    )


def _typed(value: object, kind: type[T]) -> T | None:
    """A distributedInfo value where it is of the kind (the trace writes what it writes), else None."""
    return value if isinstance(value, kind) else None


def _portable_communication(facts: Facts) -> CommStats:
    """The rank's communication without its per-event arrays: event ids mean nothing outside this process."""
    comm = communication(facts)
    comm.work_index = comm.work_index[:0]
    comm.work_exposed = comm.work_exposed[:0]
    return comm


def _failure_texts(failures: list[RuleFailed]) -> set[str]:
    return {note_text(f, "en") for f in failures}


def _number_by_order(ranks: list[RankSummary]) -> list[RanksByOrder]:
    """The ranks still without a number get the free numbers, in file order; a notice says so."""
    unnamed = [r for r in ranks if r.rank is None]
    if not unnamed:
        return []
    taken = {r.rank for r in ranks if r.rank is not None}
    free = (n for n in range(len(ranks) * 2 + 1) if n not in taken)
    for r in unnamed:
        r.rank, r.rank_from = next(free), "order"
    return [RanksByOrder(len(unnamed))]


def _refuse_twice(ranks: list[RankSummary]) -> None:
    seen: dict[int, str] = {}
    for r in ranks:
        if r.rank in seen:
            raise UsageError(f"rank {r.rank} appears twice: {seen[r.rank]} and {r.path}")
        seen[int(r.rank)] = r.path  # type: ignore[arg-type]


def host_regions(facts: Facts) -> tuple[HostRegion, ...]:
    """The regions with the most inclusive time per step, inside the steps (the window without steps),
    communication and the ProfilerStep annotations left out."""
    trace = facts.trace
    names = trace.names
    skip = _left_out(names)
    host = facts.is_host & facts.is_complete & trace.category_mask(HOST_REGION_CATEGORIES)
    mask = host | facts.is_device_work
    if skip.size:
        mask &= ~skip[trace.name]
    if facts.steps:
        mask &= facts.event_step >= 0
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return ()
    per = max(len(facts.steps), 1)
    total = np.bincount(trace.name[idx], weights=trace.dur[idx].astype(np.float64), minlength=len(names))
    depth = np.full(len(names), np.iinfo(np.int32).max, dtype=np.int64)
    np.minimum.at(depth, trace.name[idx], np.where(host[idx], facts.depth[idx], DEVICE_DEPTH))
    keep = np.flatnonzero(total / per >= HOST_REGION_MIN_NS)
    keep = keep[np.argsort(-total[keep], kind="stable")][:HOST_REGIONS]
    return tuple(HostRegion(names[k], float(total[k]) / per, int(depth[k]), bool(depth[k] == DEVICE_DEPTH))
                 for k in keep.tolist())


def _left_out(names: list[str]) -> np.ndarray:
    """Per name: whether it is no region of its own (the ProfilerStep annotations, communication calls and
    work)."""
    skip = np.fromiter((n.startswith("ProfilerStep#") or bool(COLLECTIVE_CALL.match(n)) or bool(HOST_COMM_WORK.match(n))
                        for n in names), dtype=bool, count=len(names))
    skip |= np.fromiter((bool(COMM_KERNEL.match(n)) for n in names), dtype=bool, count=len(names))
    return skip


def trace_files(folder: str | os.PathLike[str], notices: list[Record] | None = None) -> list[Path]:
    """The trace files in a folder (then its subfolders, if the top has none), sorted by name.
    Symbolic links in it are skipped, with a notice: a link points anywhere (followed, one to a
    secret file had its first bytes quoted in the error), and the folder's own files are the ranks."""
    root = Path(folder)
    links: list[Path] = []
    files = _own_traces([root / name for name in os.listdir(root)], links)
    if not files:
        links.clear()
        files = _traces_below(root, links)
    if links and notices is not None:
        notices.append(SkippedLinks(len(links), str(folder), links[0].name))
    if not files:
        raise UsageError(f"{folder}: no trace files (.json, .json.gz) in this folder")
    return files


def _traces_below(root: Path, links: list[Path]) -> list[Path]:
    """The trace files in a folder and its subfolders, sorted; symbolic links go to `links`, a linked folder
    is not entered."""
    files: list[Path] = []
    for top, folders, names in os.walk(root):  # followlinks=False
        links += [Path(top, name) for name in folders if os.path.islink(os.path.join(top, name))]
        files += _own_traces([Path(top, name) for name in names], links)
    return sorted(files)


def _own_traces(paths: list[Path], links: list[Path]) -> list[Path]:
    """The regular files among `paths` named like traces, sorted; symbolic links go to `links`."""
    out = []
    for path in sorted(paths):
        if path.is_symlink():
            links.append(path)
        elif path.name.endswith(TRACE_SUFFIXES) and path.is_file():
            out.append(path)
    return out


def assign_ranks(ranks: list[RankSummary]) -> list[RanksByOrder]:
    """Fill in ranks the metadata did not give: from `rank-N`/`rankN` in the file name, else by file
    order. Returns notices; two files claiming one rank is an error."""
    for r in ranks:
        if r.rank is None:
            match = RANK_IN_NAME.search(Path(r.path).name)
            if match:
                r.rank, r.rank_from = int(match.group(1)), "file name"
    notices = _number_by_order(ranks)
    _refuse_twice(ranks)
    ranks.sort(key=lambda r: int(r.rank))  # type: ignore[arg-type]
    return notices
