from __future__ import annotations

import numpy as np


def _named(trace, name: str) -> np.ndarray:
    return np.flatnonzero(trace.name_array[trace.name] == name)


def test_fires_on_item_in_the_loop(analysis_of):
    analysis = analysis_of("gpu/host_sync_item")
    finding = analysis.finding("host-sync")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    items = _named(trace, "aten::item")
    # the capture script calls .item() 8 times per step for 3 profiled steps
    assert len(items) == 24
    assert finding.metrics["syncs"] == 24
    item = finding.record.ops[0]
    assert item.name == "aten::item" and item.per_step == {"2": 8, "3": 8, "4": 8}
    assert "aten::item > aten::_local_scalar_dense > cudaStreamSynchronize" in finding.message
    real_items = {(trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in items}
    shown = [e for e in finding.evidence if e.name == "aten::item"]
    assert shown and {(e.ts_us, e.dur_us, e.step) for e in shown} <= real_items
    syncs = _named(trace, "cudaStreamSynchronize")
    real_syncs = {trace.ts[i] / 1000 for i in syncs if trace.event_name(facts.parent[i]) == "aten::_local_scalar_dense"}
    shown_syncs = [e for e in finding.evidence if e.name == "cudaStreamSynchronize"]
    assert shown_syncs and {e.ts_us for e in shown_syncs} <= real_syncs
    # host time blocked: at least the sync calls themselves (torch: 152.496 µs of cudaStreamSynchronize)
    assert item.blocked_us >= trace.dur[syncs].sum() / 1000


def test_silent_on_explicit_syncs_and_host_to_device_copies(analysis_of):
    # torch.cuda.synchronize() outside any op is trailing-sync's; the pageable H2D copy of the
    # data loader is pageable-memcpy's; its .item() is on a CPU tensor
    for name in ("gpu/trailing_sync", "gpu/gpu_idle_dataloader", "seed_mm64_warm"):
        assert analysis_of(name).finding("host-sync") is None, name


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("host-sync") is None


def _busy_in(intervals: list[tuple[float, float]], a: float, b: float) -> float:
    return sum(max(0.0, min(t, b) - max(s, a)) for s, t in intervals)


def test_impact_is_the_idle_the_syncs_cause_from_the_raw_events(analysis_of):
    """Per sync: the GPU idle after it until the next device work, at most the GPU work it waited for."""
    import raw

    name = "gpu/host_sync_item"
    finding = analysis_of(name).finding("host-sync")
    steps = raw.steps(name)
    busy = raw.busy_intervals(name)
    calls = [c for c in raw.complete(name) if c["name"] in ("cudaStreamSynchronize", "cudaMemcpyAsync")]
    total = 0.0
    for item in raw.complete(name, "cpu_op", "aten::item"):
        parts = [c for c in calls if raw.inside(item, c)]
        begin = min(float(c["ts"]) for c in parts)
        end = max(float(c["ts"]) + float(c["dur"]) for c in parts)
        step_end = next(float(s["ts"]) + float(s["dur"]) for s in steps if raw.inside(s, item))
        until = max(end, min([a for a, _ in busy if a >= end] + [step_end]))
        total += min(_busy_in(busy, begin, end), (until - end) - _busy_in(busy, end, until))
    per_step = total / len(steps)
    assert abs(finding.impact.us - per_step) <= 0.01 * per_step + 0.01
    assert abs(finding.impact.share - per_step / raw.step_us(name)) <= 0.01
    # ~1 µs matmuls drained per sync: cheap while the host dispatches slowly (measured unprofiled on the
    # H200: 514 -> 521 µs per step without the 8 syncs); a latent cost, said at info
    assert finding.severity.value == "info" and "CUDA graph" in finding.message
    assert analysis_of(name).top_fix.rule == "overhead-bound" and "aten::item" in analysis_of(name).top_fix.fix


def test_an_explicit_sync_with_work_outstanding_is_a_latent_cost(analysis_of):
    # torch.cuda.synchronize() after each TF32 GEMM: REVIEW.md measured 342 -> 367 µs per step
    # unprofiled (+7%); profiled, the GPU idles ~21 µs per 500 µs step after each sync
    finding = analysis_of("gpu/tf32_gemm").finding("host-sync")
    assert finding is not None and finding.record.ops[0].explicit
    assert finding.severity.value == "info" and 0.01 <= finding.impact.share < 0.05
    assert "CUDA events" in finding.fix
    # an idle sync is trailing-sync's, the profiler's stop sync nobody's
    assert analysis_of("gpu/trailing_sync").finding("host-sync") is None
    assert analysis_of("gpu/window_sync_warm").finding("host-sync") is None


def test_a_pageable_read_back_is_pageable_memcpy_s(analysis_of):
    a = analysis_of("gpu/pageable_memcpy")
    assert a.finding("host-sync") is None
    assert {g.direction for g in a.finding("pageable-memcpy").record.groups} == {"HtoD", "DtoH"}


def test_cudnn_benchmark_s_own_timing_syncs_are_cudnn_setup_s(analysis_of):
    # gpu/multiscale_benchmark: cudnn.benchmark times its candidate algorithms for every new input size,
    # with syncs inside aten::cudnn_convolution; those are the set-up cudnn-setup reports, not the user's
    import raw

    name = "gpu/multiscale_benchmark"
    syncs = [e for e in raw.in_steps(name, raw.complete(name)) if str(e["name"]).endswith("Synchronize")]
    convs = raw.complete(name, "cpu_op", "aten::cudnn_convolution")
    assert sum(1 for s in syncs if any(raw.inside(c, s) for c in convs)) > 1000
    analysis = analysis_of(name)
    assert analysis.finding("host-sync") is None and analysis.finding("cudnn-setup") is not None


def test_a_value_test_goes_with_its_read(analysis_of):
    """savings/h100/sync_isfinite_check: `assert torch.isfinite(h).all()` after each of 16 blocks. The isfinite and
    the all exist only for the read: the fix removes them with it (measured 19.0% unprofiled; the reads alone had
    replayed to 4.9%), and the text names the test and torch._assert_async."""
    name = "savings/h100/sync_isfinite_check__broken"
    a = analysis_of(name)
    f = a.finding("host-sync")
    trace = a.facts.trace
    isfinite, reads = _named(trace, "aten::isfinite"), _named(trace, "aten::is_nonzero")
    in_steps = [i for i in isfinite if a.facts.event_step[i] >= 0]
    assert len(in_steps) == len([i for i in reads if a.facts.event_step[i] >= 0]) == 16 * len(a.facts.steps)
    assert f.record.check == "aten::isfinite > aten::all"
    removed = set(f.edit.remove.tolist())
    assert set(in_steps) <= removed and set(_named(trace, "aten::all").tolist()) & removed
    assert "torch._assert_async" in f.fix
    from pista.analysis import analyze

    replayed = analyze(a.facts, replay=True)
    [g] = [g for g in replayed.findings if g.rule == "host-sync"]
    assert g.impact.unprofiled_share > 0.10 and replayed.top_fix.rule == "host-sync"


def test_a_read_without_a_test_keeps_its_producers(analysis_of):
    """The twin: loss.item() reads a value the backward needs; nothing before it is a test."""
    f = analysis_of("savings/h100/sync_loss_item__broken").finding("host-sync")
    assert f.record.check == "" and "_assert_async" not in f.fix
