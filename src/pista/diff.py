"""What changed between two traces: the totals and the verdict, the ops and kernels that appeared,
vanished or changed, and the findings gained or lost.

Rows are matched by name and kind (a host op, a GPU kernel/copy, a GPU-side record_function region),
as torch's key_averages table names them. A matched row counts as changed when its calls differ, or
when its self CPU or self device time moved by at least CHANGE_SHARE and CHANGE_MIN_US together.

When both traces have ProfilerStep regions but not as many (schedule active=3 against active=5),
whole-window sums differ by the step count alone, so the diff compares per step: the work inside
the steps, each side's times and calls divided by its own step count. Otherwise (as many steps, or
a side without steps) it compares the whole profiled window, as torch's tables do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from pista.analysis import Analysis, Summary
from pista.finding import Finding
from pista.i18n._fmt import short_figures
from pista.table import Row, Table, build_table
from pista.trace.facts import OWNER_CATEGORIES, Facts, _link

# A row changed when its self time moved by at least 20% *and* 5 µs: below either, the H200
# fixtures' run-to-run noise (warm 64x64 repeats differ by up to ~15% and a few µs per op) hides it.
CHANGE_SHARE = 0.20
CHANGE_MIN_US = 5.0

KINDS = ("op", "kernel", "gpu-annotation")

PER_STEP = "per-step"
WHOLE_WINDOW = "whole-window"


@dataclass(frozen=True)
class Side:
    calls: float  # an int over the whole window; per step, an average that need not be whole
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float

    @classmethod
    def of(cls, row: Row, steps: int | None = None) -> Side:
        if steps is None:
            return cls(row.calls, row.self_cpu_us, row.cpu_total_us, row.self_device_us, row.device_total_us)
        return cls(row.calls / steps, row.self_cpu_us / steps, row.cpu_total_us / steps,
                   row.self_device_us / steps, row.device_total_us / steps)


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
    self_cpu_total_us: float  # per step in per-step mode, like the rows
    self_device_total_us: float
    verdict: str
    gpu_busy_share: float | None
    window_us: float
    steps: int
    events: int
    source: str
    step_avg_us: float | None = None  # mean ProfilerStep wall time; None without steps
    # per-step mode only: the work left outside the steps (the profiler's closing sync, say), whole
    outside_steps_self_cpu_us: float | None = None
    outside_steps_self_device_us: float | None = None


@dataclass
class Diff:
    a: Totals
    b: Totals
    rows: list[RowDiff]
    findings_gained: list[dict[str, str]] = field(default_factory=list)
    findings_lost: list[dict[str, str]] = field(default_factory=list)
    findings_kept: list[str] = field(default_factory=list)
    mode: str = WHOLE_WINDOW  # PER_STEP | WHOLE_WINDOW
    note: str = ""  # the mode in words, for every output format
    # the gained and lost findings' messages as people read them (three significant digits), by rule:
    # the HTML page's; the JSON keeps the dicts' own, every digit
    short_messages: dict[str, str] = field(default_factory=dict)

    @property
    def per_step(self) -> bool:
        return self.mode == PER_STEP

    def select(self, kind: str, status: str) -> list[RowDiff]:
        return [r for r in self.rows if r.kind == kind and r.status == status]

    def names(self, kind: str, status: str) -> set[str]:
        return {r.name for r in self.select(kind, status)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "note": self.note,
            "steps": {"a": self.a.steps, "b": self.b.steps},
            "a": asdict(self.a),
            "b": asdict(self.b),
            "rows": {kind: {status: [r.to_dict() for r in self.select(kind, status)]
                            for status in ("appeared", "vanished", "changed")} for kind in KINDS},
            "findings": {"gained": self.findings_gained, "lost": self.findings_lost, "kept": self.findings_kept},
        }


@dataclass
class Digest:
    """What diff reads of one analysis, without its trace: `pista diff` keeps the first trace's
    digest, not its columns, while it reads the second (two big traces at once would need twice
    the memory of one)."""

    source: str
    summary: Summary
    findings: list[Finding]
    table: Table
    steps: int
    step_avg_us: float | None  # mean ProfilerStep wall time; None without steps
    annotations: set[str]  # names of the GPU-side record_function regions
    step_table: Table | None = None  # the work inside the steps; made where a per-step diff may need it

    @classmethod
    def of(cls, analysis: Analysis, with_step_table: bool = True) -> Digest:
        steps = analysis.facts.steps
        return cls(analysis.source, analysis.summary, analysis.findings, analysis.table, len(steps),
                   sum(st.dur for st in steps) / len(steps) / 1000.0 if steps else None,
                   _annotation_names(analysis),
                   step_table(analysis.facts) if with_step_table and steps else None)


def _steps(side: Analysis | Digest) -> int:
    return side.steps if isinstance(side, Digest) else len(side.facts.steps)


def compare_mode(a: Analysis | Digest, b: Analysis | Digest) -> str:
    """PER_STEP when both traces have ProfilerStep regions and their counts differ."""
    steps_a, steps_b = _steps(a), _steps(b)
    return PER_STEP if steps_a and steps_b and steps_a != steps_b else WHOLE_WINDOW


def _steps_word(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _note(mode: str, steps_a: int, steps_b: int) -> str:
    if mode == PER_STEP:
        return (f"per step: A has {_steps_word(steps_a)}, B has {steps_b}; times and calls are averages "
                "per ProfilerStep of the work inside the steps")
    if steps_a and steps_a == steps_b:
        return f"whole window: A and B both have {_steps_word(steps_a)}"
    if not (steps_a or steps_b):
        return "whole window: neither trace has ProfilerStep regions"
    missing = "A" if not steps_a else "B"
    return f"whole window: {missing} has no ProfilerStep regions, so the two are not compared per step"


def in_steps(facts: Facts) -> np.ndarray:
    """The events inside the ProfilerStep regions: host work and the device work it launched (as
    facts.event_step assigns them), profiler overhead by when it ran, and GPU-side record_function
    regions by the host region they mirror (they run after it, often past the step's end)."""
    trace = facts.trace
    inside = facts.event_step >= 0
    if not facts.steps:
        return inside
    starts = np.array([s.start for s in facts.steps], dtype=np.int64)
    ends = np.array([s.end for s in facts.steps], dtype=np.int64)
    pos = np.searchsorted(starts, trace.ts, side="right") - 1
    by_time = (pos >= 0) & (trace.ts < ends[np.maximum(pos, 0)])
    inside |= facts.is_overhead & by_time
    annotation = facts.is_device_annotation
    mirror = _link(trace.external_id, annotation, trace.external_id,
                   facts.is_host & trace.category_mask(OWNER_CATEGORIES))
    mirrored = annotation & (mirror >= 0)
    inside[mirrored] = facts.event_step[mirror[mirrored]] >= 0
    inside |= annotation & (mirror < 0) & by_time
    return inside


def step_table(facts: Facts) -> Table:
    """The key_averages table of the work inside the steps only (whole sums, not yet per step)."""
    keep = in_steps(facts)
    inner = replace(facts, is_host=facts.is_host & keep, is_overhead=facts.is_overhead & keep,
                    is_device_work=facts.is_device_work & keep,
                    is_device_annotation=facts.is_device_annotation & keep)
    return build_table(inner)


def _totals(side: Digest, table: Table | None = None) -> Totals:
    s = side.summary
    step_avg = side.step_avg_us
    if table is None:
        return Totals(s.self_cpu_total_us, s.self_device_total_us, s.verdict, s.gpu_busy_share, s.window_us,
                      s.steps, s.events, side.source, step_avg)
    n = side.steps
    return Totals(table.self_cpu_total_us / n, table.self_device_total_us / n, s.verdict, s.gpu_busy_share,
                  s.window_us, s.steps, s.events, side.source, step_avg,
                  max(s.self_cpu_total_us - table.self_cpu_total_us, 0.0),
                  max(s.self_device_total_us - table.self_device_total_us, 0.0))


def _annotation_names(analysis: Analysis) -> set[str]:
    facts = analysis.facts
    ids = np.unique(facts.trace.name[facts.is_device_annotation])
    return {facts.trace.names[int(i)] for i in ids}


def _keyed(table: Table, annotations: set[str]) -> dict[tuple[str, str], Row]:
    out = {}
    for row in table.rows:
        kind = "op" if row.device_type == "CPU" else "gpu-annotation" if row.name in annotations else "kernel"
        out[(kind, row.name)] = row
    return out


def _changed(a: Side, b: Side, fewest_steps: int = 1) -> bool:
    # calls changed when the difference is worth a whole call over the shorter run: per step, an op
    # run every other step averages 2/3 over 3 steps and 3/5 over 5, which is no change
    if round(abs(a.calls - b.calls) * fewest_steps, 6) >= 1:
        return True
    for before, after in ((a.self_cpu_us, b.self_cpu_us), (a.self_device_us, b.self_device_us)):
        moved = abs(after - before)
        if moved >= CHANGE_MIN_US and moved >= CHANGE_SHARE * before:
            return True
    return False


def _digest(side: Analysis | Digest, mode: str) -> Digest:
    if isinstance(side, Digest):
        if mode == PER_STEP and side.step_table is None:
            raise ValueError("a per-step diff needs the digest's step table (Digest.of(..., with_step_table=True))")
        return side
    return Digest.of(side, with_step_table=mode == PER_STEP)


def diff(a: Analysis | Digest, b: Analysis | Digest) -> Diff:
    mode = compare_mode(a, b)
    a, b = _digest(a, mode), _digest(b, mode)
    per_step = mode == PER_STEP
    table_a, table_b = _tables(a, b, per_step)
    rows = _row_diffs(table_a, table_b, a, b, per_step)
    gained, lost, kept, short = _finding_changes(a.findings, b.findings)
    return Diff(_totals(a, table_a if per_step else None), _totals(b, table_b if per_step else None), rows,
                gained, lost, kept, mode, _note(mode, a.steps, b.steps), short)


def _tables(a: Digest, b: Digest, per_step: bool) -> tuple[Table, Table]:
    """The tables compared: the work inside the steps per step, else the whole window's."""
    if not per_step:
        return a.table, b.table
    assert a.step_table is not None and b.step_table is not None  # _digest made them
    return a.step_table, b.step_table


def _row_diffs(table_a: Table, table_b: Table, a: Digest, b: Digest, per_step: bool) -> list[RowDiff]:
    """Every row of either table, matched by kind and name, biggest movers first."""
    per_a, per_b = (a.steps, b.steps) if per_step else (None, None)
    fewest = min(a.steps, b.steps) if per_step else 1
    rows_a, rows_b = _keyed(table_a, a.annotations), _keyed(table_b, b.annotations)
    rows: list[RowDiff] = []
    for key in rows_a | rows_b:  # A's rows in its order, then those only B has
        kind, name = key
        sa, sb = _side(rows_a.get(key), per_a), _side(rows_b.get(key), per_b)
        rows.append(RowDiff(name, kind, _status(sa, sb, fewest), sa, sb))
    rows.sort(key=lambda r: -r.weight)
    return rows


def _side(row: Row | None, steps: int | None) -> Side | None:
    """The row's figures (per step, over `steps`), None where the table has no such row."""
    return Side.of(row, steps) if row else None


def _status(sa: Side | None, sb: Side | None, fewest: int) -> str:
    if sa is None:
        return "appeared"
    if sb is None:
        return "vanished"
    return "changed" if _changed(sa, sb, fewest) else "same"


def _finding_changes(a: list[Finding], b: list[Finding]
                     ) -> tuple[list[dict[str, str]], list[dict[str, str]], list[str], dict[str, str]]:
    """The findings gained and lost (by rule), the rules kept, and the gained and lost messages in three
    significant digits."""
    rules_a = {f.rule: f for f in a}
    rules_b = {f.rule: f for f in b}
    gained, lost = _only_in(rules_b, rules_a), _only_in(rules_a, rules_b)
    kept = [r for r in rules_a if r in rules_b]
    return gained, lost, kept, _short_messages(rules_a, rules_b)


def _only_in(rules: dict[str, Finding], other: dict[str, Finding]) -> list[dict[str, str]]:
    """The findings of rules the other side has none of, in brief."""
    return [_brief(f) for r, f in rules.items() if r not in other]


def _short_messages(rules_a: dict[str, Finding], rules_b: dict[str, Finding]) -> dict[str, str]:
    """The messages of the findings on one side only, in three significant digits, by rule."""
    with short_figures():
        return {f.rule: f.message for f in [*rules_a.values(), *rules_b.values()]
                if (f.rule in rules_a) != (f.rule in rules_b)}


def _brief(f: Finding) -> dict[str, str]:
    assert f.severity is not None
    return {"rule": f.rule, "severity": f.severity.value, "title": f.title, "message": f.message}
