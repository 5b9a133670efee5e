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

import ast
import difflib
import functools
import importlib
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pista.errors import UsageError

SEVERITIES = ("info", "warning", "critical")
# A threshold past this (in its unit: ns, bytes, a count, a share) is no threshold: 2^53, where a
# float64 stops holding whole numbers, so sums and products of it stay finite and exact enough.
MAX_THRESHOLD = float(2**53)


@dataclass
class Config:
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "warning"
    thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: Path | None = None

    def rules(self) -> list[str] | None:
        """The rule ids to run (None: the whole catalogue)."""
        # start-up: the catalogue (~140 modules) loads when settings are read, not with config
        from pista.rules import catalogue

        ids = [r.id for r in catalogue()]
        selected = ids if self.select is None else self.select
        chosen = [i for i in ids if i in selected and i not in self.ignore]
        return None if len(chosen) == len(ids) else chosen


def suggest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """' (did you mean X?)' for a close match, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def check_rule_ids(ids: list[str], where: str) -> list[str]:
    # start-up: the catalogue (~140 modules) loads when settings are read, not with config
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
    table = _tool_table(path) if path is not None else {}
    if table:
        config.source = path
        where = f"{path} [tool.pista]"
        _set_choices(config, table, lambda key: f"{where} {key}")
        config.thresholds = _thresholds(table.get("rules", {}), where)
    flags = {"select": select, "ignore": ignore, "fail-on": fail_on}
    _set_choices(config, {key: value for key, value in flags.items() if value is not None}, lambda key: f"--{key}")
    return config


def _set_choices(config: Config, values: dict[str, Any], where: Callable[[str], str]) -> None:
    """Set the rule selection and the gate from `values` (keys as [tool.pista] spells them), each
    checked and named in errors as `where(key)` says."""
    if "select" in values:
        config.select = _ids(values["select"], where("select"))
    if "ignore" in values:
        config.ignore = _ids(values["ignore"], where("ignore"))
    if "fail-on" in values:
        config.fail_on = _severity(values["fail-on"], where("fail-on"))


def apply_thresholds(config: Config) -> None:
    """Set each rule's named thresholds from the config (this process only: the CLI runs once): in the rule's
    modules that hold the name, in the module a copy was imported from (overhead-bound shows the verdict's
    OVERHEAD_RATIO: set there, the verdict moves; issue 36 found 20 settings that changed nothing), and in the
    loaded modules that import it from one of those (the rule's text)."""
    # start-up: the catalogue (~140 modules) loads when settings are read, not with config
    from pista.rules import get_rule

    for rule_id, values in config.thresholds.items():
        modules = get_rule(rule_id).modules  # a threshold a shared module holds is set there, where it is read
        for name, value in values.items():
            for module in _holders(modules, name):
                setattr(module, name, value)


def _holders(modules: tuple[ModuleType, ...], name: str) -> list[ModuleType]:
    """The modules a threshold is set in: those of `modules` that hold the name, the modules their
    copies come from, and the loaded modules that import it from one of those; each once."""
    holders = {id(m): m for module in modules if name in vars(module) for m in _copies_of(module, name)}
    holders |= {id(m): m for m in _importers(list(holders.values()), name)}
    return list(holders.values())


def _copies_of(module: ModuleType, name: str) -> list[ModuleType]:
    """The module and, following `from pista.X import NAME` or `NAME = X.NAME`, where its value comes from."""
    out, seen = [module], {id(module)}
    while (home := _source_module(out[-1], name)) is not None and id(home) not in seen:
        seen.add(id(home))
        out.append(home)
    return out


def _source_module(module: ModuleType, name: str) -> ModuleType | None:
    for node in _tree(module).body:
        source = _imported_from(node, name)
        if source is not None:
            return importlib.import_module(source)
        holder = _copied_from(node, name)
        if holder is not None:
            home = vars(module).get(holder)
            if isinstance(home, ModuleType):
                return home
    return None


def _imported_from(node: ast.stmt, name: str) -> str | None:
    """pista.X of `from pista.X import NAME` (not renamed), else None."""
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pista") and node.level == 0 \
            and any(a.name == name and a.asname in (None, name) for a in node.names):
        return node.module
    return None


def _copied_from(node: ast.stmt, name: str) -> str | None:
    """X of `NAME = X.NAME`, else None."""
    if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name] \
            and isinstance(node.value, ast.Attribute) and node.value.attr == name \
            and isinstance(node.value.value, ast.Name):
        return node.value.value.id
    return None


def _importers(homes: list[ModuleType], name: str) -> list[ModuleType]:
    """Loaded pista modules (a rule's text in pista.i18n) that imported the name from one of these modules."""
    wanted = {m.__name__ for m in homes}
    loaded = [m for n, m in list(sys.modules.items()) if n.startswith("pista.") and m is not None]
    return [module for module in loaded
            if name in vars(module) and module.__name__ not in wanted and _imports_from(module, wanted, name)]


def _imports_from(module: ModuleType, wanted: set[str], name: str) -> bool:
    """Whether the module's top level has `from W import NAME` for a W in `wanted`."""
    return any(isinstance(node, ast.ImportFrom) and node.module in wanted and any(a.name == name for a in node.names)
               for node in _tree(module).body)


@functools.cache
def _tree_of(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))


def _tree(module: ModuleType) -> ast.Module:
    path = getattr(module, "__file__", None)
    return _tree_of(path) if path and path.endswith(".py") else ast.Module(body=[], type_ignores=[])


def _severity(value: Any, where: str) -> str:
    if value not in SEVERITIES:
        raise UsageError(f"{where}: '{value}' is not one of {', '.join(SEVERITIES)}{suggest(str(value), SEVERITIES)}")
    return str(value)


def _thresholds(rules: Any, where: str) -> dict[str, dict[str, Any]]:
    # start-up: the catalogue (~140 modules) loads when settings are read, not with config
    from pista.rules import get_rule

    if not isinstance(rules, dict):
        raise UsageError(f"{where} rules: expected a table per rule")
    out: dict[str, dict[str, Any]] = {}
    for rule_id, values in rules.items():
        check_rule_ids([rule_id], f"{where} rules")
        out[rule_id] = _rule_thresholds(rule_id, get_rule(rule_id).thresholds, values, where)
    return out


def _rule_thresholds(rule_id: str, known: dict[str, Any], values: Any, where: str) -> dict[str, Any]:
    """One rule's table of thresholds, each a threshold it has (`known`, with their defaults) and of its kind."""
    if not isinstance(values, dict):
        raise UsageError(f"{where} rules.{rule_id}: expected a table of thresholds "
                         f"([tool.pista.rules.{rule_id}]), not {_kind(values)}")
    for name, value in values.items():
        if name not in known:
            raise UsageError(f"{where} rules.{rule_id}: no threshold {name}{suggest(name, list(known))}")
        _check_threshold(value, known[name], f"{where} rules.{rule_id}.{name}")
    return dict(values)


def _check_threshold(value: Any, default: object, where: str) -> None:
    """A threshold must be of its default's kind (an int will do for a float); a number also finite,
    above 0 and at most MAX_THRESHOLD: the rules divide by them, step ranges by them and index with
    them (0 or nan gave ZeroDivisionError, `range()` step 0, IndexError: exit 3). The few constants
    below 0 are markers (sequence numbers), not thresholds."""
    expected = type(default).__name__
    if not _same_kind(value, default):
        raise UsageError(f"{where}: expected {expected}, not {_kind(value)}")
    if isinstance(value, str):
        return
    if default <= 0:  # type: ignore[operator]  # a number: str returned above
        raise UsageError(f"{where}: a marker pista reads traces with (sequence numbers), not a threshold to set")
    if not math.isfinite(value) or abs(value) > MAX_THRESHOLD:
        raise UsageError(f"{where}: expected a finite {expected} of at most {MAX_THRESHOLD:g}, not {value!r}")
    if value <= 0:
        raise UsageError(f"{where}: expected {expected} above 0, not {value!r}")


def _same_kind(value: Any, default: object) -> bool:
    """Of the default's type (an int will do for a float), and no boolean."""
    return not isinstance(value, bool) and (isinstance(value, type(default))
                                            or (isinstance(default, float) and isinstance(value, int)))


def _kind(value: Any) -> str:
    """What a TOML value is, in words."""
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array",
             dict: "a table"}
    return next((word for kind, word in kinds.items() if isinstance(value, kind)), "a date or time")


def _tool_table(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        # only with a settings file; tomli before Python 3.11
        import tomllib
    else:  # pragma: no cover - Python 3.10
        # only with a settings file; tomli before Python 3.11
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise UsageError(f"{path}: cannot read it: {err}") from None
    except RecursionError:  # tables or arrays nested thousands deep
        raise UsageError(f"{path}: cannot read it: nested too deeply") from None
    tool = _table_at(data, "tool", f"{path} tool", "[tool]")
    return _table_at(tool, "pista", f"{path} tool.pista", "[tool.pista]")


def _table_at(parent: dict[str, Any], key: str, where: str, header: str) -> dict[str, Any]:
    """parent[key], which must be a TOML table (an empty one where it is missing)."""
    table = parent.get(key, {})
    if not isinstance(table, dict):
        raise UsageError(f"{where}: expected a table ({header}), not {_kind(table)}")
    return table
