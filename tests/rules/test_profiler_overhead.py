from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES
from torch_table import parse_table

from pista.findings import analyze
from pista.rules.profiler_overhead import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_activity_buffer_request(load_facts):
    facts = load_facts("seed_mm64_cold")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    row = next(r for r in parse_table(FIXTURES / "seed_mm64_cold.table.txt").rows
               if r.name == "Activity Buffer Request")
    assert finding.metrics["total_us"] == pytest.approx(row.cpu_total_us, abs=1.0)
    (request,) = np.flatnonzero(trace.name_array[trace.name] == "Activity Buffer Request")
    assert trace.pid[request] == -1
    ev = finding.evidence[0]
    assert (ev.name, ev.lane, ev.step) == ("Activity Buffer Request", "profiler overhead", 0)
    assert (ev.ts_us, ev.dur_us) == (trace.ts[request] / 1000, trace.dur[request] / 1000)
    # (torch prints ms with 3 decimals, hence 1 µs of slack) it sits inside aten::mm, which is what it inflates
    host = facts.parent[request]
    assert trace.event_name(host) == "aten::mm"
    assert trace.ts[host] <= trace.ts[request] and trace.ts[request] + trace.dur[request] <= trace.ts[host] + trace.dur[host]
    assert finding.metrics["inflated_ops_us"] == {"aten::mm": pytest.approx(row.cpu_total_us, abs=1.0)}


def test_fires_without_steps(load_facts):
    (finding,) = _findings(load_facts, "seed_mm4096_compile_cold")
    assert finding.evidence[0].name == "Activity Buffer Request" and finding.evidence[0].step is None


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "gpu/cpu_only"])
def test_silent_without_overhead_events(load_facts, name):
    assert _findings(load_facts, name) == []


def test_each_event_s_note_gives_its_own_share_of_the_op(analysis_of):
    # big_gpt_eager_20steps: a 2.97 ms buffer request and an 89 µs flush, both inside one train_step
    analysis = analysis_of("big_gpt_eager_20steps")
    facts = analysis.facts
    trace = facts.trace
    finding = analysis.finding("profiler-overhead")
    assert len(finding.evidence) == 2
    for e in finding.evidence:
        i = next(int(k) for k in np.flatnonzero(facts.is_overhead) if trace.ts[k] / 1000 == e.ts_us)
        host = int(facts.parent[i])
        own = 100.0 * trace.dur[i] / trace.dur[host]
        assert f"{own:.1f}% of its wall time" in e.note, e.note
    assert finding.evidence[1].name == "Buffer Flush" and "0.1% of its wall time" in finding.evidence[1].note
