"""The rule tests check each rule's detection and its own estimate of what fixing it saves, from the raw
events (`analyze(..., replay=False)`): the figures the rule's record and text carry. What the engine's
replay makes of them (pista.engine: the edit replayed, causes before symptoms, each µs once) is tested in
tests/test_engine.py and against measured pairs in tests/test_savings.py."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def analysis_of():
    from conftest import fixture

    from pista.analysis import analyze

    cache = {}

    def _analyze(name: str):
        if name not in cache:
            cache[name] = analyze(fixture(name), replay=False)
        return cache[name]

    return _analyze
