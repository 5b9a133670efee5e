from __future__ import annotations

import numpy as np


def _named(trace, name: str) -> np.ndarray:
    return np.flatnonzero(trace.name_array[trace.name] == name)


def test_fires_on_pageable_copies_both_ways(analysis_of):
    analysis = analysis_of("gpu/pageable_memcpy")
    finding = analysis.finding("pageable-memcpy")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    htod = _named(trace, "Memcpy HtoD (Pageable -> Device)")
    dtoh = _named(trace, "Memcpy DtoH (Device -> Pageable)")
    pinned = _named(trace, "Memcpy HtoD (Pinned -> Device)")
    assert len(htod) == len(dtoh) == len(pinned) == 3  # one of each per profiled step
    dirs = finding.metrics["directions"]
    assert dirs["HtoD"]["copies"] == 3 and dirs["DtoH"]["copies"] == 3
    assert dirs["HtoD"]["bytes"] == 3 * 64 * 2**20  # 64 MiB tensors in the capture script
    assert dirs["HtoD"]["device_us"] == trace.dur[htod].sum() / 1000
    # torch's table: Memcpy HtoD (Pinned -> Device) 3.639 ms for the same 192 MiB
    assert dirs["HtoD"]["pinned_bandwidth_gb_s"] > 5 * dirs["HtoD"]["bandwidth_gb_s"]
    real = {(trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in np.concatenate([htod, dtoh])}
    copies = [e for e in finding.evidence if e.name.startswith("Memcpy")]
    assert {e.name for e in copies} == {"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"}
    assert {(e.ts_us, e.dur_us, e.step) for e in copies} <= real
    # the host call of a pageable copy lasts as long as the copy: it blocks
    calls = [e for e in finding.evidence if e.name == "cudaMemcpyAsync"]
    for call, copy in zip(calls, copies, strict=True):
        assert call.dur_us >= copy.dur_us


def test_fires_on_the_data_loader_s_batch_copy(analysis_of):
    finding = analysis_of("gpu/gpu_idle_dataloader").finding("pageable-memcpy")
    assert finding is not None
    assert "'data_loading'" in finding.message  # the record_function region around the copy
    assert finding.metrics["bytes"] == 3 * 2 * 2**20


def test_silent_on_pinned_and_scalar_copies(analysis_of):
    # .item() reads back 4 bytes through pinned memory
    assert analysis_of("gpu/host_sync_item").finding("pageable-memcpy") is None
    assert analysis_of("series_linear_train").finding("pageable-memcpy") is None  # device-to-device only
    assert analysis_of("gpu/cpu_only").finding("pageable-memcpy") is None
