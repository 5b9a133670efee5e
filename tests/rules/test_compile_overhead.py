from __future__ import annotations

import numpy as np
import pytest


def _events(facts, name: str) -> np.ndarray:
    trace = facts.trace
    return np.flatnonzero(trace.name_array[trace.name] == name)


@pytest.mark.parametrize("name, region", [("seed_mm64_compile", "Torch-Compiled Region: 0/1"),
                                          ("seed_mm4096_compile", "Torch-Compiled Region: 0/0")])
def test_fires_on_the_compiled_matmul_add(analysis_of, name, region):
    analysis = analysis_of(name)
    finding = analysis.finding("compile-overhead")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    calls = _events(facts, region)
    assert finding.metrics["calls"] == len(calls) == 3  # one compiled call per profiled step
    # every kernel in these traces comes from the compiled function (torch's Self CUDA total)
    device = facts.is_device_work
    assert finding.metrics["launched_gpu_us"] == pytest.approx(trace.dur[device].sum() / 1000)
    regions = [e for e in finding.evidence if e.name == region]
    assert {e.ts_us for e in regions} == {trace.ts[i] / 1000 for i in calls}
    assert {e.step for e in regions} == {2, 3, 4}
    for e in regions:
        i = calls[trace.ts[calls] / 1000 == e.ts_us][0]
        assert e.dur_us == trace.dur[i] / 1000
    lookups = [e.ts_us for e in finding.evidence if e.name == "TorchDynamo Cache Lookup"]
    assert lookups and set(lookups) <= {trace.ts[i] / 1000 for i in _events(facts, "TorchDynamo Cache Lookup")}
    # the wrapper is more than the region's own aten::addmm: it costs host time beyond the op
    addmm = _events(facts, "aten::addmm")
    assert finding.metrics["wrapper_host_us"] > 0
    assert finding.metrics["wrapper_host_us"] < (trace.dur[calls].sum() - trace.dur[addmm].sum()) / 1000 + \
        trace.dur[_events(facts, "TorchDynamo Cache Lookup")].sum() / 1000 + 1e-6


def test_host_cost_dwarfs_a_2us_kernel(analysis_of):
    finding = analysis_of("seed_mm64_compile").finding("compile-overhead")
    # 3 calls of a 2.1 µs GEMM (torch: 6.432 µs Self CUDA) behind ~200 µs of wrapper each
    assert finding.metrics["host_to_gpu_ratio"] > 50


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "series_mlp_eager", "series_linear_train"])
def test_silent_on_eager_traces(analysis_of, name):
    assert analysis_of(name).finding("compile-overhead") is None


def test_calls_that_compile_are_left_to_recompilation(analysis_of):
    # every compiled call in gpu/recompile compiles a new shape inside the region
    assert analysis_of("gpu/recompile").finding("compile-overhead") is None


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("compile-overhead") is None
