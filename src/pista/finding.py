"""What a rule produces: a `Finding` (its typed record, what fixing it saves and the events that show it),
its `Impact`, its `Evidence`, and `Record`, the base of the rules' typed records and notes.

Rules read derived facts (`pista.trace.facts`) and the rebuilt table, never raw JSON; renderers
read an `Analysis` (pista.analysis), never the trace file. How much a finding matters is
`pista.policy`'s; how it is written as JSON is `pista.schema`'s.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from pista.i18n import finding_text, note_text, replay_basis, word
from pista.policy import Severity, severity_of
from pista.trace.facts import Facts

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    # msgspec passes frozen=True on to subclasses; its stub's dataclass_transform says they are not
    # frozen, so mypy read every rule's record as a non-frozen subclass of a frozen one (msgspec#657)
    @dataclass_transform(frozen_default=True, field_specifiers=(msgspec.field,))
    class _FrozenStruct(msgspec.Struct, frozen=True):
        pass
else:
    _FrozenStruct = msgspec.Struct


class Record(_FrozenStruct, frozen=True):
    """Frozen data whose methods msgspec builds in C: the rules' typed records and evidence notes,
    and the catalogue's entries. A frozen dataclass's generated methods cost ~0.5 ms each at import,
    and the catalogue has ~160 of these classes."""


@dataclass(frozen=True)
class Impact:
    """What fixing a finding would save: µs per step (per window without steps) and that share of
    the median step (or the window), 0..1; or, `once`, a one-time cost: its µs in the whole window
    and that share of the window's wall time. How it was estimated is the rule's `basis` text."""

    us: float
    share: float
    once: bool = False
    # set by the engine (pista.engine) where the finding's edit was replayed: `us`/`share` are then what the
    # replay saves per step as profiled, `alone_us` what the fix saves alone (before the engine's order
    # credits each µs once), `unprofiled_*` the saving predicted without the profiler, which ranks
    replayed: bool = False
    alone_us: float | None = None
    unprofiled_us: float | None = None
    unprofiled_share: float | None = None
    # ... and what the fix saves alone without the profiler, as a share of the unprofiled step
    unprofiled_alone_share: float | None = None

    @classmethod
    def none(cls) -> Impact:
        return cls(0.0, 0.0)

    @property
    def rank_share(self) -> float:
        """The share that sets severity: the unprofiled prediction where there is one."""
        return self.share if self.unprofiled_share is None else self.unprofiled_share

    @property
    def order_share(self) -> float:
        """The share that sets the reading order: rank_share, but what the fix saves alone where that is less: a
        saving that grows once other fixes are made reads below them (review 6: gp_swimming_streams' TF32 saves
        67 ms alone as profiled, 174 ms unprofiled once its pageable copies are pinned, and came first, above the
        copies' 146 ms, "more once the fixes above it are made")."""
        if self.unprofiled_alone_share is None:
            return self.rank_share
        return min(self.rank_share, max(self.unprofiled_alone_share, 0.0))


@dataclass(frozen=True)
class Evidence:
    """One event that shows the finding: where it ran and when (µs, as in the trace file).

    `detail` is the rule's typed note about this event (a `Record` of the rule's module);
    `note` is its text in `lang`."""

    name: str
    lane: str
    step: int | None
    ts_us: float
    dur_us: float
    detail: Any = None
    lang: str = "en"
    stack: tuple[str, ...] = ()  # the user's Python frames above the event, innermost first

    @classmethod
    def of(cls, facts: Facts, i: int, detail: Any = None) -> Evidence:
        trace = facts.trace
        return cls(
            name=trace.event_name(i),
            lane=facts.lane_of(i),
            step=facts.step_of(i),
            ts_us=float(trace.ts[i]) / 1000.0,
            dur_us=float(trace.dur[i]) / 1000.0,
            detail=detail,
            stack=user_stack(facts, i),
        )

    @classmethod
    def span(cls, name: str, lane: str, start_ns: int, end_ns: int, step: int | None = None,
             detail: Any = None) -> Evidence:
        """Evidence that is an interval rather than one event (a gap, a window)."""
        return cls(name, lane, step, start_ns / 1000.0, (end_ns - start_ns) / 1000.0, detail)

    @property
    def note(self) -> str:
        return note_text(self.detail, self.lang)

    def to_dict(self) -> dict[str, Any]:
        """As --format json writes it (pista.schema)."""
        # start-up: schema only for JSON (`pista whatif` writes none)
        from pista.schema import evidence_dict

        return evidence_dict(self)


# python_function frames that are not the user's code: the interpreter's, torch's, installed packages',
# the standard library's (seen in gpu/host_sync_item_stack: `<built-in method item ...>`,
# `torch/_ops.py(1079): __call__`, `<frozen os>(680): __getitem__`, `enum.py(1267): __hash__`).
NOT_USER_FRAME = re.compile(r"^<|(^|/)(torch|torchvision|torchaudio|triton|site-packages|dist-packages|python3\.\d+)/"
                            r"|^(enum|os|abc|typing|functools|contextlib|threading|runpy|weakref|copy)\.py\(")


def user_stack(facts: Facts, i: int) -> tuple[str, ...]:
    """The user's Python frames above event i (with_stack=True traces), innermost first."""
    trace = facts.trace
    python = trace.category_id("python_function")
    if python < 0:
        return ()
    frames = []
    j = int(facts.parent[i])
    while j >= 0:
        if int(trace.cat[j]) == python:
            name = trace.event_name(j)
            if not NOT_USER_FRAME.search(name):
                frames.append(name)
        j = int(facts.parent[j])
    return tuple(frames)


@dataclass(eq=False)
class Finding:
    """What a rule found: its typed `record` (the rule's `Record`), what fixing it saves, and
    the events that show it. Title, message, advice, the top-fix line and the impact's basis are
    views of the record, written by `pista.i18n` in `lang`."""

    rule: str
    record: Any
    impact: Impact
    evidence: list[Evidence] = field(default_factory=list)
    severity: Severity | None = None  # from the impact, unless a rule documents an exception
    lang: str = "en"
    edit: Any = None  # the pista.timeline.Edit its fix makes, which the engine replays (None: not yet)
    severity_fixed: bool = False  # the rule set the severity (a documented exception), not the impact
    # a symptom (pista.engine: credited after the causes, with what they leave) or a cause; None: the rule's
    # SYMPTOM, which the analysis sets when the rule's check returns. A rule that tells a cause from its symptom
    # per finding sets it (many-calls: a Python loop)
    symptom: bool | None = None

    def __post_init__(self) -> None:
        if self.severity is None:
            self.severity = severity_of(self.impact.rank_share, self.impact.once)
        else:
            self.severity_fixed = True

    def _text(self, part: str) -> str:
        return finding_text(self, part, self.lang)

    @property
    def title(self) -> str:
        return self._text("title")

    @property
    def message(self) -> str:
        return self._text("message")

    @property
    def advice(self) -> str:
        return self._text("advice")

    @property
    def fix(self) -> str:
        """One line: the event and the change, for the top fix."""
        return self._text("fix")

    @property
    def basis(self) -> str:
        if self.impact.replayed:
            return replay_basis(self, self.lang)
        return self._text("basis")

    @property
    def where(self) -> str | None:
        """The user's innermost frame of the first evidence recorded with a stack."""
        return next((e.stack[0] for e in self.evidence if e.stack), None)

    @property
    def fix_here(self) -> str:
        """The top-fix line, with the user's code it points at where the trace has stacks."""
        where = self.where
        return self.fix if where is None else f"{self.fix} ({word('in', self.lang)} {where})"

    @property
    def metrics(self) -> dict[str, Any]:
        return record_fields(self.record)

    def to_dict(self) -> dict[str, Any]:
        """As --format json writes it (pista.schema)."""
        # start-up: schema only for JSON (`pista whatif` writes none)
        from pista.schema import finding_dict

        return finding_dict(self)


def record_fields(record: Any) -> dict[str, Any]:
    """A rule's record as plain data (JSON's `metrics`)."""
    if isinstance(record, msgspec.Struct):
        return _plain(record)
    return asdict(record) if _is_dataclass_instance(record) else dict(record or {})


def _plain(value: Any) -> Any:
    """Records (and dataclasses, named tuples, lists, tuples and dicts holding them) as dicts, all
    the way down, the rest as it is: what dataclasses.asdict gives for the records the rules have.
    Unlike asdict it copies no leaf value and leaves a dict's keys (and a dict subclass's type)."""
    if isinstance(value, msgspec.Struct):
        return {name: _plain(getattr(value, name)) for name in value.__struct_fields__}
    if _is_dataclass_instance(value):
        return asdict(value)
    if isinstance(value, (list, tuple, dict)):
        return _plain_items(value)
    return value


def _is_dataclass_instance(value: Any) -> bool:
    """A dataclass's instance (is_dataclass says yes for the class too)."""
    return is_dataclass(value) and not isinstance(value, type)


def _plain_items(value: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> Any:
    """A named tuple, list, tuple or dict of the same type with its items plain."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_plain(v) for v in value))
    return type(value)(_plain(v) for v in value)


def top_indices(values: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values under mask, largest first (evidence pickers use this)."""
    idx = np.flatnonzero(mask)
    if idx.size <= k:
        return idx[np.argsort(-values[idx], kind="stable")]
    part = idx[np.argpartition(-values[idx], k)[:k]]
    return part[np.argsort(-values[part], kind="stable")]
