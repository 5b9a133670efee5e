"""Evidence points at the user's code on traces recorded with with_stack=True."""

from __future__ import annotations

import json

import raw
from conftest import fixture

from pista.cli import main
from pista.findings import NOT_USER_FRAME


def _innermost_user_frame(name: str, event: dict) -> str | None:
    frames = [f for f in raw.complete(name, "python_function")
        if f.get("tid") == event.get("tid") and float(f["ts"]) <= float(event["ts"])
        and float(event["ts"]) + float(event["dur"]) <= float(f["ts"]) + float(f["dur"])
        and not NOT_USER_FRAME.search(f["name"])]
    return min(frames, key=lambda f: float(f["dur"]))["name"] if frames else None


def test_a_host_sync_names_the_user_function_that_issued_it(analysis_of):
    name = "gpu/host_sync_item_stack"
    finding = analysis_of(name).finding("host-sync")
    items = [e for e in finding.evidence if e.name == "aten::item"]
    assert items
    by_ts = {float(e["ts"]): e for e in raw.complete(name, "cpu_op", "aten::item")}
    for ev in items:
        expected = _innermost_user_frame(name, by_ts[ev.ts_us])
        assert expected == ev.stack[0] == "capture_fixtures.py(194): read_loss"
        assert all(not NOT_USER_FRAME.search(f) for f in ev.stack)
    assert finding.where == "capture_fixtures.py(194): read_loss"


def test_top_fix_and_json_carry_the_frame(capsys):
    assert main(["analyze", str(fixture("gpu/host_sync_item_stack")), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # the top fix (host-sync: the syncs go before a graph of the loop can) names the user's function
    assert data["summary"]["top_fix"]["rule"] == "host-sync"
    assert "(in capture_fixtures.py(194): read_loss)" in data["summary"]["top_fix"]["text"]
    sync = next(f for f in data["findings"] if f["rule"] == "host-sync")
    assert sync["evidence"][0]["stack"][0] == "capture_fixtures.py(194): read_loss"


def test_no_stack_without_with_stack(analysis_of):
    for f in analysis_of("gpu/host_sync_item").findings:
        assert all(e.stack == () for e in f.evidence)
