"""Rule selection and settings, ruff-style: `--select` / `--ignore` on the command line over a
`[tool.pista]` table in the nearest pyproject.toml:

    [tool.pista]
    select = ["host-sync", "pageable-memcpy"]   # only these rules (default: all)
    ignore = ["kernel-variability"]
    fail-on = "warning"                         # pista check's default gate

    [tool.pista.rules.host-sync]                # a rule's named thresholds (pista explain lists them)
    MIN_SYNCS_PER_STEP = 2
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pista.errors import UsageError

SEVERITIES = ("info", "warning", "critical")


@dataclass
class Config:
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "warning"
    thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None

    def rules(self) -> list[str] | None:
        """The rule ids to run (None: the whole catalogue)."""
        from pista.rules import catalogue

        ids = [r.id for r in catalogue()]
        chosen = [i for i in ids if self.select is None or i in self.select]
        chosen = [i for i in chosen if i not in self.ignore]
        return None if len(chosen) == len(ids) else chosen


def suggest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' for a close match, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def check_rule_ids(ids: list[str], where: str) -> list[str]:
    from pista.rules import catalogue

    known = [r.id for r in catalogue()]
    for rule_id in ids:
        if rule_id not in known:
            raise UsageError(f"{where}: no rule '{rule_id}'{suggest(rule_id, known)}; `pista rules` lists them")
    return ids


def _ids(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: expected a list of rule ids")
    return check_rule_ids([v.strip() for v in value], where)


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(select: str | None = None, ignore: str | None = None, fail_on: str | None = None,
         start: Path | None = None) -> Config:
    """The settings: pyproject.toml's [tool.pista], then the command line's flags over it."""
    config = Config()
    path = find_pyproject(start)
    if path is not None:
        table = _tool_table(path)
        if table:
            config.source = path
            where = f"{path} [tool.pista]"
            if "select" in table:
                config.select = _ids(table["select"], f"{where} select")
            if "ignore" in table:
                config.ignore = _ids(table["ignore"], f"{where} ignore")
            if "fail-on" in table:
                config.fail_on = _severity(table["fail-on"], f"{where} fail-on")
            config.thresholds = _thresholds(table.get("rules", {}), where)
    if select is not None:
        config.select = _ids(select, "--select")
    if ignore is not None:
        config.ignore = _ids(ignore, "--ignore")
    if fail_on is not None:
        config.fail_on = _severity(fail_on, "--fail-on")
    return config


def apply_thresholds(config: Config) -> None:
    """Set each rule's named thresholds from the config (this process only: the CLI runs once)."""
    from pista.rules import get_rule

    for rule_id, values in config.thresholds.items():
        modules = get_rule(rule_id).modules  # a threshold a shared module holds is set there, where it is read
        for name, value in values.items():
            for module in modules:
                if name in vars(module):
                    setattr(module, name, value)


def _severity(value: Any, where: str) -> str:
    if value not in SEVERITIES:
        raise UsageError(f"{where}: '{value}' is not one of {', '.join(SEVERITIES)}{suggest(str(value), SEVERITIES)}")
    return str(value)


def _thresholds(rules: Any, where: str) -> dict[str, dict[str, Any]]:
    from pista.rules import get_rule

    if not isinstance(rules, dict):
        raise UsageError(f"{where} rules: expected a table per rule")
    out: dict[str, dict[str, Any]] = {}
    for rule_id, values in rules.items():
        check_rule_ids([rule_id], f"{where} rules")
        known = get_rule(rule_id).thresholds
        for name, value in (values or {}).items():
            if name not in known:
                raise UsageError(f"{where} rules.{rule_id}: no threshold {name}{suggest(name, list(known))}")
            if not isinstance(value, type(known[name])) and not (isinstance(known[name], float)
                                                                  and isinstance(value, int)):
                raise UsageError(f"{where} rules.{rule_id}.{name}: expected {type(known[name]).__name__}")
        out[rule_id] = dict(values or {})
    return out


def _tool_table(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise UsageError(f"{path}: cannot read it: {err}") from None
    table = data.get("tool", {}).get("pista", {})
    return table if isinstance(table, dict) else {}
