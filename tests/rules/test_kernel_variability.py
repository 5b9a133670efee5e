from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.kernel_variability import ID, KV_P95_RATIO

# tests/fixtures/gpu/kernel_variability.py: 8 muls on a 64 MiB tensor per step, 6 active steps
# (2..7); in steps 3 and 6 a second stream runs large GEMMs at the same time
CONTENDED = {3, 6}


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_contended_kernel(load_facts):
    facts = load_facts("gpu/kernel_variability")
    trace = facts.trace
    (finding,) = _findings(load_facts, "gpu/kernel_variability")
    m = finding.metrics
    assert "vectorized_elementwise_kernel" in m["name"] and "MulFunctor" in m["name"]
    assert m["launch_config"] == "grid [32768,1,1] block [128,1,1]"
    kernels = np.flatnonzero(facts.is_device_work & (trace.name_array[trace.name] == m["name"]))
    dur = trace.dur[kernels] / 1000
    assert m["calls"] == kernels.size == 48
    assert (m["min_us"], m["max_us"]) == (dur.min(), dur.max())
    assert m["median_us"] == pytest.approx(np.median(dur))
    assert m["p95_us"] == pytest.approx(np.percentile(dur, 95))
    assert len(m["durations_us"]) == 48
    # the distribution, per step: the contended steps stand out, the others agree
    slow = {s for s, med in m["step_median_us"].items() if med >= KV_P95_RATIO * m["median_us"]}
    assert slow == CONTENDED
    # the evidence's slowest calls are from the contended steps and are real events
    real = {(trace.ts[i] / 1000, trace.dur[i] / 1000) for i in kernels}
    for ev in finding.evidence[:-1]:
        assert ev.step in CONTENDED and (ev.ts_us, ev.dur_us) in real
    assert finding.evidence[-1].step not in CONTENDED


@pytest.mark.parametrize("name", ["big_gpt_eager_20steps", "seed_mm4096_warm", "series_mlp_eager",
                                  "seed_mm4096_compile_cold", "gpu/cpu_only"])
def test_silent_on_steady_kernels(load_facts, name):
    assert _findings(load_facts, name) == []
