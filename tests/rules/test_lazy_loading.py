from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES
from torch_table import parse_table

from pista.findings import analyze
from pista.rules.lazy_loading import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_unwarmed_profile(load_facts):
    facts = load_facts("seed_mm64_cold")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    # torch's own table: Lazy Function Loading 3 calls 178.754us, Runtime Triggered Module Loading 2 calls 416.406us
    rows = {r.name: r for r in parse_table(FIXTURES / "seed_mm64_cold.table.txt").rows}
    expected = rows["Lazy Function Loading"].cpu_total_us + rows["Runtime Triggered Module Loading"].cpu_total_us
    assert finding.metrics["events"] == rows["Lazy Function Loading"].calls + rows["Runtime Triggered Module Loading"].calls
    assert finding.metrics["total_us"] == pytest.approx(expected, abs=0.01)
    assert finding.metrics["steps"] == [0]
    ops = " ".join(finding.metrics["by_op_us"])
    assert "aten::mm" in ops and "aten::add" in ops
    loads = np.flatnonzero(np.isin(trace.name_array[trace.name], ["Lazy Function Loading",
                                                                   "Runtime Triggered Module Loading"]))
    real = {(trace.ts[i] / 1000, trace.dur[i] / 1000) for i in loads}
    for ev in finding.evidence:
        assert ev.lane == "profiler overhead" and ev.step == 0
        assert (ev.ts_us, ev.dur_us) in real
    assert finding.evidence[0].dur_us == max(d for _, d in real)


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_compile_cold", "gpu/cpu_only"])
def test_silent_without_module_loading(load_facts, name):
    assert _findings(load_facts, name) == []
