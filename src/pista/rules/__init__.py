"""The rule catalogue: one module per rule, found by name, each with

- `ID`: the stable id (`pista explain ID`);
- its docs, the sections What / Why / Example / Impact / Fix (shown by `pista explain`), in its Fluent
  catalogues (pista/i18n/ftl/<lang>/<rule>.ftl);
- its thresholds as UPPER_CASE module constants, each with a comment saying where it came from
  (detection that other rules use too lives in a shared `_` module, with the thresholds it reads: a
  shared module whose THRESHOLDS_OF names the rule holds thresholds of that rule, listed with its own);
- a `pista.findings.Record`, the record of what it found (JSON's `metrics`), and the typed notes of
  its evidence; its text (title, message, advice, top fix, impact basis) lives in its catalogues,
  rendered from those fields through `pista.i18n.args.<rule>`;
- `check(ctx: Context) -> list[Finding]`: detection only, each finding with its impact (what fixing
  it saves per step); severity follows from the impact.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from functools import cache
from types import ModuleType

from pista.errors import UsageError
from pista.findings import Context, Finding, Record
from pista.i18n import rule_docs, rule_severity_exception, rule_title


class Rule(Record):
    id: str
    module: ModuleType

    @property
    def title(self) -> str:
        return rule_title(self.id, "en")

    @property
    def docs(self) -> str:
        """What / Why / Example / Impact / Fix in English: the rule's catalogue (pista.i18n), or (a rule not yet
        converted) its docstring."""
        return rule_docs(self.id, "en") or (self.module.__doc__ or "").strip()

    def section(self, heading: str) -> str:
        """One docstring section ('What', 'Why', 'Example', 'Fix')."""
        match = re.search(rf"^{heading}:\s*\n(.*?)(?=^\w[\w ]*:\s*$|\Z)", self.docs, re.S | re.M)
        return match.group(1).strip() if match else ""

    @property
    def modules(self) -> tuple[ModuleType, ...]:
        """Where its thresholds are read: the shared modules whose THRESHOLDS_OF is this rule, then its own."""
        return (*(m for m in shared_modules() if getattr(m, "THRESHOLDS_OF", None) == self.id), self.module)

    @property
    def thresholds(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for module in self.modules:
            out |= {k: v for k, v in vars(module).items() if k not in out and _is_threshold(k, v)}
        return out

    @property
    def severity_exception(self) -> str:
        """Why this rule's severity does not follow its impact alone ("" for none)."""
        return rule_severity_exception(self.id, "en") or str(getattr(self.module, "SEVERITY_EXCEPTION", ""))

    @property
    def symptom(self) -> bool:
        """Whether its findings are symptoms (pista.engine), unless a finding says otherwise (Finding.symptom)."""
        return bool(getattr(self.module, "SYMPTOM", False))

    @property
    def check(self) -> Callable[[Context], list[Finding]]:
        return self.module.check


NOT_THRESHOLDS = ("ID", "SEVERITY_EXCEPTION", "CLAIMS_FIRST", "SYMPTOM", "THRESHOLDS_OF")


def _is_threshold(name: str, value: object) -> bool:
    return name.isupper() and name not in NOT_THRESHOLDS and isinstance(value, (int, float, str))


@cache
def shared_modules() -> tuple[ModuleType, ...]:
    """The shared `_` modules (not rules): the query library and the detection several rules use."""
    return tuple(importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)
                 if info.name.startswith("_"))


@cache
def catalogue() -> tuple[Rule, ...]:
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        rules.append(Rule(module.ID, module))
    return tuple(sorted(rules, key=lambda r: r.id))


def get_rule(rule_id: str) -> Rule:
    for rule in catalogue():
        if rule.id == rule_id:
            return rule
    # only for an unknown rule id's suggestion
    import difflib

    ids = [r.id for r in catalogue()]
    close = difflib.get_close_matches(rule_id, ids, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else f"; known rules: {', '.join(ids)}"
    raise UsageError(f"no rule '{rule_id}'{hint}")
