from __future__ import annotations

import numpy as np
import pytest


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
    r = finding.record
    assert r.syncs == 3 and r.steps_hit == (2, 3, 4) and r.region == "sync"
    by_ts = {e.ts_us: e for e in finding.evidence}
    for i in expected:
        e = by_ts[trace.ts[i] / 1000]
        assert e.name == "cudaDeviceSynchronize" and e.step == facts.step_of(i)
        assert e.dur_us == trace.dur[i] / 1000
    assert r.longest_us == max(trace.dur[expected]) / 1000
    # every kernel of the step had ended before the sync began: nothing was outstanding
    kernels = facts.is_device_work
    assert (trace.ts[kernels] + trace.dur[kernels]).max() <= trace.ts[expected].max()
    assert r.outstanding_us == 0
    # with nothing outstanding a sync costs its own call: 9.9 µs over 3 steps
    assert r.sync_us == r.saved_us == pytest.approx(trace.dur[expected].sum() / 1000)
    assert "torch.cuda.synchronize() in 'sync'" in finding.advice


def test_an_idle_sync_is_information_on_a_host_bound_loop(analysis_of):
    # 3.3 µs of a 114 µs step (2.9%) and 10.9 µs of 325 µs (3.4%): real, but not worth a warning
    for name in ("gpu/trailing_sync", "gpu/capture_mm64_sync"):
        finding = analysis_of(name).finding("trailing-sync")
        assert finding is not None and finding.severity.value == "info", name
        assert 0.01 <= finding.impact.share < 0.05


def test_silent_when_the_sync_waits_for_real_gpu_work(analysis_of):
    # fp32 4096^3 GEMM then a sync each step: the 2.6 ms sync covers a 2.7 ms kernel
    assert analysis_of("gpu/fp32_gemm").finding("trailing-sync") is None
    assert analysis_of("gpu/tf32_gemm").finding("trailing-sync") is None


def test_silent_on_the_profiler_s_own_stop_sync(analysis_of):
    # every trace ends with the cudaDeviceSynchronize torch.profiler issues on stop
    for name in ("seed_mm64_warm", "seed_mm4096_compile_cold", "gpu/launch_bound", "seed_mm4096_warm"):
        assert analysis_of(name).finding("trailing-sync") is None


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("trailing-sync") is None


def test_silent_when_the_syncs_cost_under_one_percent(analysis_of):
    # gpu/gpu_idle_dataloader: 14 µs idle syncs in 15 ms steps (0.1%)
    assert analysis_of("gpu/gpu_idle_dataloader").finding("trailing-sync") is None


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


@pytest.mark.parametrize("name", ["gpu/trailing_sync", "gpu/capture_mm64_sync"])
def test_impact_is_what_the_syncs_cost_from_the_raw_events(analysis_of, name):
    import raw

    finding = analysis_of(name).finding("trailing-sync")
    steps = raw.steps(name)
    busy = raw.busy_intervals(name)
    ops = raw.complete(name, "cpu_op")
    total = 0.0
    for sync in raw.complete(name, None, "cudaDeviceSynchronize"):
        if not any(raw.inside(s, sync) for s in steps) or any(raw.inside(op, sync) for op in ops):
            continue  # the profiler's stop sync lies after the steps; a sync inside an op is host-sync's
        start, end = float(sync["ts"]), float(sync["ts"]) + float(sync["dur"])
        nxt = min([a for a, _ in busy if a >= end], default=end)
        working = sum(max(0.0, min(b, nxt) - max(a, start)) for a, b in busy)
        total += min(end - start, (nxt - start) - working)
    per_step = total / len(steps)
    assert finding.impact.us == pytest.approx(per_step, rel=0.01)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=0.002)


def test_every_field_renders_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    english = analysis_of("gpu/trailing_sync").finding("trailing-sync")
    spanish = localize_finding(english, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(spanish, part) != getattr(english, part), part
    assert all(e.note and e.note != n.note for e, n in zip(spanish.evidence, english.evidence, strict=True))
