from __future__ import annotations

import numpy as np


def test_fires_on_the_warm_64_matmul_add(analysis_of):
    analysis = analysis_of("seed_mm64_warm")
    finding = analysis.finding("overhead-bound")
    assert finding is not None
    # torch printed Self CPU 509.956us vs Self CUDA 11.872us for this profile
    assert round(finding.metrics["cpu_to_device_ratio"]) == round(509.956 / 11.872)
    assert finding.metrics["gpu_busy_percent"] < 10
    # evidence: the host events with the most self time, aten::mm first (155.7 µs over 3 calls)
    assert finding.evidence[0].name == "aten::mm"
    facts = analysis.facts
    names = facts.trace.name_array[facts.trace.name]
    largest = np.flatnonzero(facts.is_host)[np.argmax(facts.self_time[facts.is_host])]
    assert finding.evidence[0].ts_us == facts.trace.ts[largest] / 1000
    assert names[largest] == "aten::mm"


def test_fires_on_small_compiled_and_launch_bound_loops(analysis_of):
    assert analysis_of("seed_mm64_compile").finding("overhead-bound") is not None
    assert analysis_of("gpu/launch_bound").finding("overhead-bound") is not None


def test_silent_when_the_gpu_is_busy(analysis_of):
    assert analysis_of("seed_mm4096_warm").finding("overhead-bound") is None
    assert analysis_of("gpu/fp32_gemm").finding("overhead-bound") is None


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("overhead-bound") is None
