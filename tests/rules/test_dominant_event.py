from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES
from torch_table import parse_table

from pista.findings import analyze
from pista.rules.dominant_event import DOMINANT_SHARE, ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_compiled_4096_gemm(load_facts):
    facts = load_facts("seed_mm4096_compile")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm4096_compile")
    table = parse_table(FIXTURES / "seed_mm4096_compile.table.txt")
    gemm = next(r for r in table.rows if "bias_NNT" in r.name)  # torch: 526.017us, 99.56%, 3 calls
    assert finding.metrics["kind"] == "kernel"
    assert finding.metrics["name"] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT"
    assert finding.metrics["calls"] == gemm.calls == 3
    assert finding.metrics["total_us"] == pytest.approx(gemm.self_device_us, abs=0.001)
    assert finding.metrics["share_percent"] == pytest.approx(100 * gemm.self_device_us / table.self_device_total_us,
                                                             abs=0.01)
    assert finding.metrics["launched_by"] == "aten::addmm"
    # evidence: its three instances, longest first, as they are in the trace
    kernels = np.flatnonzero(facts.is_device_work & (trace.name_array[trace.name] == finding.metrics["name"]))
    assert sorted((e.dur_us, e.ts_us) for e in finding.evidence) == sorted(
        (trace.dur[i] / 1000, trace.ts[i] / 1000) for i in kernels)
    assert [e.dur_us for e in finding.evidence] == sorted((e.dur_us for e in finding.evidence), reverse=True)
    assert sorted(e.step for e in finding.evidence) == [2, 3, 4]


def test_fires_without_steps(load_facts):
    (finding,) = _findings(load_facts, "seed_mm4096_compile_cold")
    assert finding.metrics["calls"] == 2 and all(e.step is None for e in finding.evidence)


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm64_cold", "series_linear_train", "series_mlp_eager"])
def test_silent_when_the_gpu_time_is_spread(load_facts, name):
    # check the premise on torch's own table: no kernel row reaches the share (device-only rows,
    # less the record_function regions mirrored on the GPU timeline)
    facts = load_facts(name)
    regions = {facts.trace.event_name(i)[:52] for i in np.flatnonzero(facts.is_device_annotation)}
    table = parse_table(FIXTURES / f"{name}.table.txt")
    kernels = [r for r in table.rows if r.self_cpu_us == 0 and r.cpu_total_us == 0 and r.calls
               and r.name.removesuffix("...") not in regions]
    assert max(r.self_device_us for r in kernels) < DOMINANT_SHARE * table.self_device_total_us
    assert _findings(load_facts, name) == []


def test_silent_without_a_gpu(load_facts):
    assert _findings(load_facts, "gpu/cpu_only") == []


def test_an_op_dominates_when_no_single_kernel_does(load_facts, monkeypatch):
    # pageable_memcpy: aten::copy_ owns all the device time, split over its H2D and D2H copies
    # (the largest, D2H, is 82%); with the bar above that, the op is named instead of a kernel
    import pista.rules.dominant_event as rule

    facts = load_facts("gpu/pageable_memcpy")
    trace = facts.trace
    monkeypatch.setattr(rule, "DOMINANT_SHARE", 0.9)
    (finding,) = _findings(load_facts, "gpu/pageable_memcpy")
    copies = np.flatnonzero(facts.is_device_work)
    assert {trace.event_name(facts.owner[i]) for i in copies} == {"aten::copy_"}
    assert finding.metrics["kind"] == "op" and finding.metrics["name"] == "aten::copy_"
    assert finding.metrics["share_percent"] == pytest.approx(100.0)
    assert finding.metrics["calls"] == len({int(facts.owner[i]) for i in copies})
    assert all(e.name.startswith("Memcpy") for e in finding.evidence)


def test_a_dominant_copy_gets_transfer_advice_not_kernel_advice(load_facts):
    facts = load_facts("gpu/pageable_memcpy")
    (finding,) = _findings(load_facts, "gpu/pageable_memcpy")
    trace = facts.trace
    copies = facts.is_device_work & trace.category_mask({"gpu_memcpy"})
    assert finding.metrics["kind"] == "copy" and finding.metrics["name"].startswith("Memcpy DtoH")
    assert finding.message.startswith("Copy Memcpy DtoH")
    named = copies & (trace.name_array[trace.name] == finding.metrics["name"])
    assert finding.metrics["total_us"] == pytest.approx(trace.dur[named].sum() / 1000, abs=0.001)
    assert "pinned" in finding.advice and "precision" not in finding.advice
