from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.many_calls import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_tiny_op_loop(load_facts):
    # launch_bound: 200 tiny elementwise ops (mul, add on 256 floats) per step, 3 active steps
    facts = load_facts("gpu/launch_bound")
    trace = facts.trace
    found = {f.metrics["name"]: f for f in _findings(load_facts, "gpu/launch_bound")}
    assert set(found) == {"aten::mul", "aten::add"}
    for name, finding in found.items():
        ops = np.flatnonzero(facts.is_host & (trace.name_array[trace.name] == name) & (facts.event_step >= 0))
        assert finding.metrics["calls"] == ops.size == 300
        assert finding.metrics["calls_per_step"] == 100
        assert finding.metrics["cost_us_per_step"] == pytest.approx(trace.dur[ops].sum() / 1000 / 3)
        # evidence: its first calls of the first profiled step, as recorded
        first = ops[np.argsort(trace.ts[ops])][: len(finding.evidence)]
        assert [(e.name, e.step, e.ts_us, e.dur_us) for e in finding.evidence] == [
            (name, 2, trace.ts[i] / 1000, trace.dur[i] / 1000) for i in first]


@pytest.mark.parametrize("name", ["seed_mm64_warm", "series_mlp_eager", "series_linear_train",
                                  "seed_mm4096_compile_cold", "gpu/cpu_only"])
def test_silent_on_ordinary_models(load_facts, name):
    assert _findings(load_facts, name) == []
