"""What changed between two traces: the totals and the verdict, the ops and kernels that appeared,
vanished or changed, and the findings gained or lost.

Rows are matched by name and kind (a host op, a GPU kernel/copy, a GPU-side record_function region),
as torch's key_averages table names them. A matched row counts as changed when its calls differ, or
when its self CPU or self device time moved by at least CHANGE_SHARE and CHANGE_MIN_US together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pista.findings import Analysis
from pista.table import Row

# A row changed when its self time moved by at least 20% *and* 5 µs: below either, the H200
# fixtures' run-to-run noise (warm 64x64 repeats differ by up to ~15% and a few µs per op) hides it.
CHANGE_SHARE = 0.20
CHANGE_MIN_US = 5.0

KINDS = ("op", "kernel", "gpu-annotation")


@dataclass(frozen=True)
class Side:
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float

    @classmethod
    def of(cls, row: Row) -> Side:
        return cls(row.calls, row.self_cpu_us, row.cpu_total_us, row.self_device_us, row.device_total_us)


@dataclass(frozen=True)
class RowDiff:
    name: str
    kind: str  # op | kernel | gpu-annotation
    status: str  # appeared | vanished | changed | same
    a: Side | None
    b: Side | None

    def _delta(self, attr: str) -> float:
        return (getattr(self.b, attr) if self.b else 0.0) - (getattr(self.a, attr) if self.a else 0.0)

    @property
    def delta_self_cpu_us(self) -> float:
        return self._delta("self_cpu_us")

    @property
    def delta_self_device_us(self) -> float:
        return self._delta("self_device_us")

    @property
    def weight(self) -> float:
        return max(abs(self.delta_self_cpu_us), abs(self.delta_self_device_us))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "status": self.status,
                "a": asdict(self.a) if self.a else None, "b": asdict(self.b) if self.b else None,
                "delta_self_cpu_us": self.delta_self_cpu_us, "delta_self_device_us": self.delta_self_device_us}


@dataclass(frozen=True)
class Totals:
    self_cpu_total_us: float
    self_device_total_us: float
    verdict: str
    gpu_busy_share: float | None
    window_us: float
    steps: int
    events: int
    source: str


@dataclass
class Diff:
    a: Totals
    b: Totals
    rows: list[RowDiff]
    findings_gained: list[dict[str, str]] = field(default_factory=list)
    findings_lost: list[dict[str, str]] = field(default_factory=list)
    findings_kept: list[str] = field(default_factory=list)

    def select(self, kind: str, status: str) -> list[RowDiff]:
        return [r for r in self.rows if r.kind == kind and r.status == status]

    def names(self, kind: str, status: str) -> set[str]:
        return {r.name for r in self.select(kind, status)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": asdict(self.a),
            "b": asdict(self.b),
            "rows": {kind: {status: [r.to_dict() for r in self.select(kind, status)]
                            for status in ("appeared", "vanished", "changed")} for kind in KINDS},
            "findings": {"gained": self.findings_gained, "lost": self.findings_lost, "kept": self.findings_kept},
        }


def _totals(analysis: Analysis) -> Totals:
    s = analysis.summary
    return Totals(s.self_cpu_total_us, s.self_device_total_us, s.verdict, s.gpu_busy_share, s.window_us,
                  s.steps, s.events, analysis.source)


def _annotation_names(analysis: Analysis) -> set[str]:
    facts = analysis.facts
    ids = np.unique(facts.trace.name[facts.is_device_annotation])
    return {facts.trace.names[int(i)] for i in ids}


def _keyed(analysis: Analysis) -> dict[tuple[str, str], Row]:
    annotations = _annotation_names(analysis)
    out = {}
    for row in analysis.table.rows:
        kind = "op" if row.device_type == "CPU" else "gpu-annotation" if row.name in annotations else "kernel"
        out[(kind, row.name)] = row
    return out


def _changed(a: Side, b: Side) -> bool:
    if a.calls != b.calls:
        return True
    for before, after in ((a.self_cpu_us, b.self_cpu_us), (a.self_device_us, b.self_device_us)):
        moved = abs(after - before)
        if moved >= CHANGE_MIN_US and moved >= CHANGE_SHARE * before:
            return True
    return False


def diff(a: Analysis, b: Analysis) -> Diff:
    rows_a, rows_b = _keyed(a), _keyed(b)
    rows: list[RowDiff] = []
    for key in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        kind, name = key
        ra, rb = rows_a.get(key), rows_b.get(key)
        sa, sb = (Side.of(ra) if ra else None), (Side.of(rb) if rb else None)
        if sa is None:
            status = "appeared"
        elif sb is None:
            status = "vanished"
        else:
            status = "changed" if _changed(sa, sb) else "same"
        rows.append(RowDiff(name, kind, status, sa, sb))
    # biggest movers first
    rows.sort(key=lambda r: -r.weight)

    rules_a = {f.rule: f for f in a.findings}
    rules_b = {f.rule: f for f in b.findings}
    gained = [{"rule": r, "severity": f.severity.value, "title": f.title, "message": f.message}
              for r, f in rules_b.items() if r not in rules_a]
    lost = [{"rule": r, "severity": f.severity.value, "title": f.title, "message": f.message}
            for r, f in rules_a.items() if r not in rules_b]
    kept = [r for r in rules_a if r in rules_b]
    return Diff(_totals(a), _totals(b), rows, gained, lost, kept)
