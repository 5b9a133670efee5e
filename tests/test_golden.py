"""Every fixture trace reads as tests/golden.json says (scripts/golden.py): a change that moves any
reading, in English, Spanish or the terminal's text, fails here unless its commit updates the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import golden  # noqa: E402

pytestmark = pytest.mark.slow


def test_every_fixture_reads_as_golden():
    now = golden.digests(golden.collect(workers=2))
    changes = golden.compare(now, json.loads(golden.GOLDEN.read_text()))
    assert not changes, ("readings changed; if on purpose, run `python scripts/golden.py --update`:\n"
                         + "\n".join(changes))


def test_compare_sees_a_changed_reading():
    """The comparison itself: one view of one trace changed, one trace new, one gone."""
    before = {"a": {"json-en": "1", "text-en": "2"}, "b": {"json-en": "3"}}
    after = {"a": {"json-en": "1", "text-en": "9"}, "c": {"json-en": "4"}}
    assert golden.compare(after, before) == ["changed: a (text-en)", "trace gone: b", "new trace: c"]
    assert golden.compare(before, before) == []
