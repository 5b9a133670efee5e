from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# a rule that raises fails its test (users get a notice and the other rules' findings: pista.isolation)
os.environ.setdefault("PISTA_STRICT_RULES", "1")
sys.path.insert(0, str(Path(__file__).parent))

# Real traces, each with the table torch printed for it: shared/traces/h200 (top level) and the
# ones captured for the rule tests by scripts/capture_fixtures.py (gpu/, see its README).
H200_TRACES = sorted(
    str(p.relative_to(FIXTURES)).removesuffix(".json.gz")
    for p in [*FIXTURES.glob("*.json.gz"), *FIXTURES.glob("gpu/*.json.gz")]
    if p.with_name(p.name.removesuffix(".json.gz") + ".table.txt").exists()
)


def fixture(name: str) -> Path:
    path = FIXTURES / (name if name.endswith((".json", ".gz")) else name + ".json.gz")
    assert path.exists(), path
    return path


def big_copy(source: str, target: Path, target_bytes: int) -> tuple[int, int]:
    """A real trace's steps repeated into `target` past `target_bytes` by bench/make_big_trace.py:
    (copies, bytes written)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_big_trace", FIXTURES.parents[1] / "bench" / "make_big_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write(fixture(source), target, target_bytes)


@pytest.fixture(scope="session")
def load_facts():
    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    cache = {}

    def _load(name: str):
        if name not in cache:
            cache[name] = derive(load_trace(fixture(name)))
        return cache[name]

    return _load


@pytest.fixture(scope="session")
def analysis_of():
    from pista.analysis import analyze

    cache = {}

    def _analyze(name: str):
        if name not in cache:
            cache[name] = analyze(fixture(name))
        return cache[name]

    return _analyze


@pytest.fixture(autouse=True)
def _no_terminal_size_from_outside(monkeypatch):
    """Text off a terminal is one logical line per line unless COLUMNS is set (issue 37): a COLUMNS from the
    caller's shell, or one an earlier test's library left in os.environ (CI's workers had COLUMNS=80), would
    wrap what the tests read. A test that wants a width sets it itself."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _earlier_tests_threads_are_idle(monkeypatch):
    """pista does not fork while other Python threads run (one may hold a lock the child needs).
    Threads left by earlier tests (Dask's offload pool, Playwright's) are idle, so only threads a
    test starts itself count; otherwise every test after them would silently run in one process."""
    from pista import forked

    before = set(threading.enumerate())
    monkeypatch.setattr(forked, "other_threads",
                        lambda: sum(1 for t in threading.enumerate() if t not in before))


# The tests measured slow (tests/slow_tests.txt): marked `slow`, so plain `pytest` (addopts: -m "not slow")
# is the quick loop and scripts/test (-m "", in parallel) runs them all
_SLOW = {line.strip() for line in (Path(__file__).parent / "slow_tests.txt").read_text().splitlines()
         if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid in _SLOW or item.nodeid.encode("unicode_escape").decode() in _SLOW:
            item.add_marker(pytest.mark.slow)
