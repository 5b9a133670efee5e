"""profile_memory=True traces: peaks per device, against the raw [memory] events."""

from __future__ import annotations

import raw


def _memory_events(name: str) -> list[dict]:
    return [e for e in raw.events(name) if e.get("name") == "[memory]"]


def test_peak_allocated_is_the_largest_total_allocated(analysis_of):
    name = "gpu/host_sync_item_stack"
    memory = analysis_of(name).summary.memory
    events = _memory_events(name)
    cuda = [e["args"] for e in events if e["args"].get("Device Type") == 1]
    assert cuda
    (row,) = [m for m in memory if m["device"] == "cuda:0"]
    assert row["peak_allocated_bytes"] == max(a["Total Allocated"] for a in cuda)
    assert row["peak_reserved_bytes"] == max(a["Total Reserved"] for a in cuda)


def test_no_memory_without_profile_memory(analysis_of):
    assert analysis_of("gpu/host_sync_item").summary.memory == []


def test_the_report_draws_memory_over_time(analysis_of):
    from pista.render import html

    page = html.render(analysis_of("gpu/host_sync_item_stack"))
    assert '<div class="memory">' in page and "<polyline" in page
    assert '<div class="memory">' not in html.render(analysis_of("gpu/host_sync_item"))
