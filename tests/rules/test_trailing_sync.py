from __future__ import annotations

import numpy as np


def _syncs_in_region(facts, region: str) -> np.ndarray:
    trace = facts.trace
    names = trace.name_array[trace.name]
    idx = np.flatnonzero(names == "cudaDeviceSynchronize")
    return np.array([i for i in idx if facts.parent[i] >= 0 and names[facts.parent[i]] == region])


def test_fires_on_the_per_step_synchronize(analysis_of):
    analysis = analysis_of("gpu/trailing_sync")
    finding = analysis.finding("trailing-sync")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    # the capture script calls torch.cuda.synchronize() inside record_function("sync") every step
    expected = _syncs_in_region(facts, "sync")
    assert len(expected) == 3
    assert finding.metrics["syncs"] == 3
    assert finding.metrics["steps"] == [2, 3, 4]
    by_ts = {e.ts_us: e for e in finding.evidence}
    for i in expected:
        e = by_ts[trace.ts[i] / 1000]
        assert e.name == "cudaDeviceSynchronize" and e.step == facts.step_of(i)
        assert e.dur_us == trace.dur[i] / 1000
    assert finding.metrics["longest_sync_us"] == max(trace.dur[expected]) / 1000
    # every kernel of the step had ended before the sync began: nothing was outstanding
    kernels = facts.is_device_work
    assert (trace.ts[kernels] + trace.dur[kernels]).max() <= trace.ts[expected].max()
    assert finding.metrics["outstanding_gpu_us"] == 0
    # a real share of the steps (2.9%) but µs in all: worth knowing, not a warning
    assert finding.metrics["sync_total_us"] == trace.dur[expected].sum() / 1000 < 1000
    assert finding.severity.value == "info"


def test_silent_when_the_sync_waits_for_real_gpu_work(analysis_of):
    # fp32 4096^3 GEMM then a sync each step: the 2.6 ms sync covers a 2.7 ms kernel
    assert analysis_of("gpu/fp32_gemm").finding("trailing-sync") is None
    assert analysis_of("gpu/tf32_gemm").finding("trailing-sync") is None


def test_silent_on_the_profiler_s_own_stop_sync(analysis_of):
    # every trace ends with the cudaDeviceSynchronize torch.profiler issues on stop
    for name in ("seed_mm64_warm", "seed_mm4096_compile_cold", "gpu/launch_bound"):
        assert analysis_of(name).finding("trailing-sync") is None


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("trailing-sync") is None


def test_silent_on_a_window_end_sync_that_costs_microseconds(analysis_of):
    # gpu/window_sync_*: one matmul_add call, then torch.cuda.synchronize() before the profiler
    # stops. On the H200 that sync takes 15-18 µs with nothing outstanding, under 1% of the window
    # (the window is the buffer request and set-up), so it is not worth a finding
    from pista.rules.trailing_sync import MIN_STEP_SHARE

    for name in ("gpu/window_sync_warm", "gpu/window_sync_cold"):
        analysis = analysis_of(name)
        facts = analysis.facts
        trace = facts.trace
        names = trace.name_array[trace.name]
        syncs = np.flatnonzero(names == "cudaDeviceSynchronize")
        assert len(syncs) == 2 and not facts.steps  # the user's, then the profiler's stop sync
        user_sync = syncs[np.argmin(trace.ts[syncs])]
        work = facts.is_device_work
        assert (trace.ts[work] + trace.dur[work]).max() <= trace.ts[user_sync]  # nothing left to wait for
        window = facts.window[1] - facts.window[0]
        assert 0 < trace.dur[user_sync] < MIN_STEP_SHARE * window
        assert analysis.finding("trailing-sync") is None
