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


def _self_us_under(facts, region_name: str) -> float:
    # walk each host event's parents in plain Python: the rule does it with numpy
    trace = facts.trace
    names = trace.name_array[trace.name]
    total = 0
    for i in np.flatnonzero(facts.is_host):
        j = int(i)
        while j >= 0 and names[j] != region_name:
            j = int(facts.parent[j])
        if j >= 0:
            total += int(facts.self_time[i])
    return total / 1000


def test_a_data_loading_region_is_named_as_the_cause(analysis_of):
    analysis = analysis_of("gpu/gpu_idle_dataloader")
    finding = analysis.finding("overhead-bound")
    m = finding.metrics
    assert m["cause"] == "region" and m["cause_region"] == "data_loading"
    host_total = analysis.summary.self_cpu_total_us
    expected = _self_us_under(analysis.facts, "data_loading")
    assert abs(m["cause_us"] - expected) < 1e-6 and expected > 0.5 * host_total
    assert "'data_loading'" in finding.message and "DataLoader workers" in finding.advice
    assert finding.evidence[0].name == "data_loading"
    assert "batch inputs" not in finding.advice


def test_compilation_is_named_as_the_cause(analysis_of):
    finding = analysis_of("gpu/recompile").finding("overhead-bound")
    assert finding.metrics["cause"] == "compile" and finding.metrics["cause_share_percent"] > 50
    assert "compiling" in finding.message and "recompilation" in finding.advice


def test_the_profiler_s_own_buffer_request_is_named_as_the_cause(analysis_of):
    from conftest import FIXTURES
    from torch_table import parse_table

    finding = analysis_of("seed_mm4096_compile_cold").finding("overhead-bound")
    assert finding.metrics["cause"] == "profiler"
    # torch printed Activity Buffer Request with 59.82% of the Self CPU total
    printed = parse_table(FIXTURES / "seed_mm4096_compile_cold.table.txt")
    buffer_request = next(r for r in printed.rows if r.name == "Activity Buffer Request")
    assert abs(finding.metrics["cause_share_percent"]
               - 100 * buffer_request.self_cpu_us / printed.self_cpu_total_us) < 0.1
    assert "schedule" in finding.advice


def test_per_op_loops_keep_the_batching_advice(analysis_of):
    for name in ("seed_mm64_warm", "gpu/launch_bound", "gpu/host_sync_item", "series_mlp_eager"):
        finding = analysis_of(name).finding("overhead-bound")
        assert finding.metrics["cause"] == "per-op", name
        assert "batch inputs" in finding.advice


def test_the_totals_are_written_in_their_own_units(analysis_of):
    # 19.237 ms of Self CUDA is not "19237.213 µs"
    message = analysis_of("gpu/recompile").finding("overhead-bound").message
    assert "Self CUDA total 19.237 ms" in message


def test_the_cause_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("gpu/gpu_idle_dataloader").finding("overhead-bound"), "es")
    assert "'data_loading'" in finding.message and "frente a" in finding.message
    assert "workers del DataLoader" in finding.advice
