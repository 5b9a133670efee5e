from __future__ import annotations

import numpy as np


def test_fires_on_hundreds_of_tiny_elementwise_ops(analysis_of):
    analysis = analysis_of("gpu/launch_bound")
    finding = analysis.finding("launch-bound")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}))
    # 200 ops per step (100 mul + 100 add) x 3 profiled steps, per the capture script
    assert len(kernels) == 600
    assert finding.metrics["kernels_per_step"] == 200
    assert finding.metrics["median_kernel_us"] == np.median(trace.dur[kernels]) / 1000
    names = trace.name_array[trace.name]
    launches = np.flatnonzero(names == "cudaLaunchKernel")
    assert finding.metrics["median_launch_us"] == np.median(trace.dur[launches]) / 1000
    assert finding.metrics["median_launch_us"] > finding.metrics["median_kernel_us"]
    # evidence: the first kernel of each kind, its launch call and the op (aten::mul / aten::add)
    shown = [e for e in finding.evidence if e.lane.startswith("GPU")]
    assert len(shown) == 2
    for e in shown:
        same = kernels[names[kernels] == e.name]
        first = same[np.argmin(trace.ts[same])]
        assert (e.ts_us, e.dur_us, e.step) == (trace.ts[first] / 1000, trace.dur[first] / 1000, 2)
    assert {e.name for e in finding.evidence if e.name.startswith("aten::")} == {"aten::mul", "aten::add"}


def test_silent_when_kernels_do_real_work(analysis_of):
    # ~100 kernels per step too, but GEMMs of a few µs and more (median 6-18 µs)
    for name in ("series_mlp_eager", "series_mlp_compile", "big_gpt_eager_20steps"):
        assert analysis_of(name).finding("launch-bound") is None, name


def test_silent_with_few_kernels_per_step(analysis_of):
    # 2 tiny kernels per step: overhead-bound, not a launch storm
    assert analysis_of("seed_mm64_warm").finding("launch-bound") is None
    assert analysis_of("seed_mm4096_compile_cold").finding("launch-bound") is None


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("launch-bound") is None
