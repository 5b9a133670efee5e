from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.implicit_copy_before_gemm import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def _named(facts, name):
    trace = facts.trace
    return np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))


def test_fires_on_the_compiled_addmm_with_bias(load_facts):
    # seed_mm4096_compile: torch.compile turns matmul+add into addmm with a bias epilogue; the
    # program writes no memset, yet torch's table lists "Memset (Device)" x3 next to the GEMM
    facts = load_facts("seed_mm4096_compile")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm4096_compile")
    memsets = _named(facts, "Memset (Device)")
    assert finding.metrics["pairs"] == memsets.size == 3
    assert finding.metrics["device_us"] == pytest.approx(trace.dur[memsets].sum() / 1000)
    launches = _named(facts, "cudaMemsetAsync")
    assert finding.metrics["host_api_us"] == pytest.approx(trace.dur[launches].sum() / 1000)
    assert finding.metrics["gemm_kernels"] == ["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT"]
    shown = [e for e in finding.evidence if e.name == "Memset (Device)"]
    assert {(e.ts_us, e.dur_us) for e in shown} == {(trace.ts[i] / 1000, trace.dur[i] / 1000) for i in memsets}
    assert sorted(e.step for e in shown) == [2, 3, 4]
    assert all("aten::addmm" in e.note for e in shown)
    # each memset is followed on its stream by the GEMM, which starts after it ends
    gemms = [e for e in finding.evidence if "bias" in e.name]
    for m, g in zip(shown, gemms, strict=True):
        assert g.lane == m.lane and g.step == m.step and g.ts_us >= m.ts_us + m.dur_us


def test_fires_without_steps(load_facts):
    (finding,) = _findings(load_facts, "seed_mm4096_compile_cold")
    assert finding.metrics["pairs"] == 2 and all(e.step is None for e in finding.evidence)


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "seed_mm64_warm", "gpu/cpu_only"])
def test_silent_without_an_epilogue_gemm(load_facts, name):
    # seed_mm4096_warm has the same memset, but before a plain aten::mm GEMM (no bias epilogue)
    assert _findings(load_facts, name) == []
