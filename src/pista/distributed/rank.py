"""One rank's trace -> a small `RankSummary`: what the cross-rank analysis needs, cheap to ship
between processes (no Trace, no table)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pista.distributed.comm import Collective, CommStats, StepComm, communication
from pista.errors import PistaError, UsageError
from pista.findings import Finding

RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.I)
TRACE_SUFFIXES = (".json", ".json.gz")


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
    error: str | None = None  # a bad trace, as its one-line message

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
    from pista.findings import analyze
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    try:
        trace = load_trace(path)
        facts = derive(trace)
        analysis = analyze(facts, rules=rules)
    except PistaError as err:
        return RankSummary(path=path, error=str(err))
    info = trace.distributed_info
    rank = info.get("rank")
    world = info.get("world_size")
    comm = communication(facts)
    comm.work_index = comm.work_index[:0]  # event ids mean nothing outside this process
    return RankSummary(
        path=path,
        rank=rank if isinstance(rank, int) else None,
        rank_from="distributedInfo" if isinstance(rank, int) else "",
        world_size=world if isinstance(world, int) else None,
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        clock_base_ns=trace.base_time_ns or 0,
        summary=analysis.summary.to_dict(),
        findings=analysis.findings,
        comm=comm,
        notices=list(trace.notices),
    )


def trace_files(folder: str | Path) -> list[Path]:
    """The trace files in a folder (then its subfolders, if the top has none), sorted by name."""
    root = Path(folder)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    if not files:
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    if not files:
        raise UsageError(f"{folder}: no trace files (.json, .json.gz) in this folder")
    return files


def assign_ranks(ranks: list[RankSummary]) -> list[str]:
    """Fill in ranks the metadata did not give: from `rank-N`/`rankN` in the file name, else by file
    order. Returns notices; two files claiming one rank is an error."""
    notices = []
    for r in ranks:
        if r.rank is None:
            match = RANK_IN_NAME.search(Path(r.path).name)
            if match:
                r.rank, r.rank_from = int(match.group(1)), "file name"
    unnamed = [r for r in ranks if r.rank is None]
    if unnamed:
        taken = {r.rank for r in ranks if r.rank is not None}
        free = (n for n in range(len(ranks) * 2 + 1) if n not in taken)
        for r in unnamed:
            r.rank, r.rank_from = next(free), "order"
        notices.append(f"{len(unnamed)} trace(s) carry no rank (no distributedInfo, no rank-N in the "
                       f"name): numbered by file order")
    seen: dict[int, str] = {}
    for r in ranks:
        if r.rank in seen:
            raise UsageError(f"rank {r.rank} appears twice: {seen[r.rank]} and {r.path}")
        seen[int(r.rank)] = r.path  # type: ignore[arg-type]
    ranks.sort(key=lambda r: int(r.rank))  # type: ignore[arg-type]
    return notices
