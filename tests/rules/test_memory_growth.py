from __future__ import annotations

import raw


def _allocated_at_step_ends(name: str) -> list[int]:
    """Total Allocated of the last cuda [memory] event at or before each step's end, from the raw file."""
    mem = sorted((e for e in raw.events(name) if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1),
                 key=lambda e: float(e["ts"]))
    out = []
    for step in raw.steps(name):
        end = float(step["ts"]) + float(step["dur"])
        before = [e for e in mem if float(e["ts"]) <= end]
        out.append(before[-1]["args"]["Total Allocated"])
    return out


def test_fires_on_a_loss_kept_with_its_graph(analysis_of):
    name = "gpu/memory_leak"
    finding = analysis_of(name).finding("memory-growth")
    assert finding is not None
    ends = _allocated_at_step_ends(name)
    assert finding.record.first_bytes == ends[0] and finding.record.last_bytes == ends[-1]
    assert abs(finding.record.growth_bytes_per_step - (ends[-1] - ends[0]) / (len(ends) - 1)) < 1
    assert finding.record.top_op in ("aten::addmm", "aten::gelu")
    # the H200's memory at +75.5 MB per step: under 10,000 steps, so critical
    assert finding.severity.value == "critical" and finding.impact.us == 0.0
    assert sum(e.detail.bytes for e in finding.evidence) <= ends[-1] - ends[-2] + (1 << 20)


def test_silent_when_memory_is_flat(analysis_of):
    assert analysis_of("gpu/memory_steady").finding("memory-growth") is None
    assert analysis_of("gpu/host_sync_item_stack").finding("memory-growth") is None  # profile_memory, flat
    assert analysis_of("gpu/host_sync_item").finding("memory-growth") is None  # no memory events
