"""pista's modules import one way (issue 36): trace file -> trace model -> facts -> timeline -> rules -> engine ->
findings -> renderers, and a lower layer never imports an upper one, not even inside a function. The graph is
scripts/imports.py's: an edge per import statement of pista's own modules, top-level or deferred (inside a
function), type-only imports (`if TYPE_CHECKING:`) left out since they never run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "imports.py"

# Cycles known and accepted: none (the reader's load <-> origin <-> stream went with trace/core.py).
KNOWN_CYCLES: list[list[str]] = []

# What the rules read is below them: none of it imports a rule, the engine (which replays the rules' edits), the
# analysis (which runs the rules) or the package (whose public API imports the analysis).
ABOVE_THE_RULES = ("pista", "pista.analysis", "pista.engine", "pista.rules")


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], dict[str, set[str]], ModuleType]:
    spec = importlib.util.spec_from_file_location("pista_imports_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    top, deferred, _ = script.scan()
    return top, {m: top[m] | deferred[m] for m in top}, script


def test_the_cycle_check_finds_a_cycle(graph):
    """The check itself: two modules that import each other, one of them inside a function, are a cycle."""
    *_, script = graph
    assert script.cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert script.cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_time_cycle(graph):
    top, _, script = graph
    assert script.cycles(top) == []


def test_no_cycle_counting_the_imports_inside_functions(graph):
    _, both, script = graph
    found = script.cycles(both)
    assert "pista.analysis" in both and "pista.rules._common" in both  # the whole package was read
    assert [c for c in found if c not in KNOWN_CYCLES] == []


def _reach(both: dict[str, set[str]], start: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        for m in both[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _above(module: str) -> bool:
    return module in ABOVE_THE_RULES or module.startswith("pista.rules.")


def test_what_the_rules_read_imports_nothing_above_them(graph):
    _, both, _ = graph
    rules = {m for m in both if m.startswith("pista.rules.")}
    below = {m for m in _reach(both, rules) if not _above(m)}
    assert {"pista.query", "pista.context", "pista.finding", "pista.policy"} <= below
    upward = {m: sorted(t for t in both[m] if _above(t)) for m in sorted(below)}
    assert {m: t for m, t in upward.items() if t} == {}
