from __future__ import annotations

import numpy as np
import pytest


def test_fires_on_the_cpu_data_loader_and_names_it(analysis_of):
    analysis = analysis_of("gpu/gpu_idle_dataloader")
    finding = analysis.finding("gpu-idle")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    names = trace.name_array[trace.name]
    loading = np.flatnonzero((names == "data_loading") & facts.is_host)
    assert len(loading) == 3  # one CPU batch build per profiled step
    # the region the capture script wraps around the batch build is what the host was doing
    assert list(finding.metrics["regions_us"])[0] == "data_loading"
    regions = [e for e in finding.evidence if e.name == "data_loading"]
    assert regions and {(e.ts_us, e.dur_us, e.step) for e in regions} <= {
        (trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in loading}
    # the gaps shown are real: nothing runs on the GPU inside them, and they lie inside data_loading
    work = facts.is_device_work
    w_start, w_end = trace.ts[work] / 1000, (trace.ts[work] + trace.dur[work]) / 1000
    gaps = [e for e in finding.evidence if e.name == "GPU idle"]
    assert len(gaps) == 3 and {e.step for e in gaps} == {2, 3, 4}
    eps = 1e-3  # µs: float rounding of ns timestamps
    l_start, l_end = trace.ts[loading] / 1000, (trace.ts[loading] + trace.dur[loading]) / 1000
    for gap in gaps:
        assert gap.dur_us >= 1000
        assert not np.any((w_start < gap.ts_us + gap.dur_us - eps) & (w_end > gap.ts_us + eps))
        # most of each gap is inside that step's data_loading region
        overlap = np.minimum(l_end, gap.ts_us + gap.dur_us) - np.maximum(l_start, gap.ts_us)
        assert overlap.max() > 0.8 * gap.dur_us
    # the CPU batch build is aten::randn -> aten::normal_ (torch: 21.022 ms self CPU over 3 calls)
    assert "aten::normal_" in finding.metrics["ops_self_us"]
    assert finding.metrics["long_gap_percent"] > 50


def test_silent_on_overhead_bound_loops_with_short_gaps(analysis_of):
    # overhead-bound: the GPU idles most of the time too, but in gaps of tens of µs between launches
    for name in ("gpu/launch_bound", "seed_mm64_warm", "gpu/host_sync_item", "gpu/trailing_sync"):
        assert analysis_of(name).finding("gpu-idle") is None, name


def test_silent_when_the_gpu_is_busy(analysis_of):
    assert analysis_of("gpu/fp32_gemm").finding("gpu-idle") is None
    assert analysis_of("big_gpt_eager_20steps").finding("gpu-idle") is None


def test_works_without_profiler_steps(analysis_of):
    finding = analysis_of("seed_mm4096_compile_cold").finding("gpu-idle")
    assert finding is not None and all(e.step is None for e in finding.evidence)


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("gpu-idle") is None


@pytest.mark.parametrize(("name", "cause", "says"), [
    ("gpu/gpu_idle_dataloader", "data", "DataLoader workers"),
    ("gpu/recompile", "compile", "torch.compile compiling"),
    ("seed_mm4096_compile_cold", "profiler", "profiler's own work"),
    ("seed_mm64_cold", "cold", "one-time set-up in the first step"),
])
def test_the_advice_follows_what_fills_the_gaps(analysis_of, name, cause, says):
    finding = analysis_of(name).finding("gpu-idle")
    assert finding is not None and finding.metrics["cause"] == cause
    assert says in finding.advice
    if cause != "data":
        assert "DataLoader" not in finding.advice
