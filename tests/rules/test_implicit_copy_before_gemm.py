from __future__ import annotations

import numpy as np
import pytest
import raw

from pista.analysis import analyze
from pista.i18n import localize_finding, rule_docs
from pista.rules import implicit_copy_before_gemm
from pista.rules.implicit_copy_before_gemm import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def _named(facts, name):
    trace = facts.trace
    return np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))


@pytest.fixture
def always(monkeypatch):
    """The rule with its silence threshold off, to see what it measures on healthy traces."""
    monkeypatch.setattr(implicit_copy_before_gemm, "IMPLICIT_MIN_STEP_SHARE", 0.0)


def _raw_cost_per_step(name: str) -> float:
    """µs per step the GPU would gain without the memsets, from the raw events: each memset is
    followed on its stream by the GEMM of the same op (External id); if the GEMM's launch call had
    returned by the memset's end, the memset and the gap after it, else the memset alone."""
    work = sorted(raw.device_work(name), key=lambda e: (e["tid"], float(e["ts"])))
    launches = {e["args"]["correlation"]: e for e in raw.events(name)
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    total = 0.0
    for fill, nxt in zip(work, work[1:], strict=False):
        if not fill["name"].startswith("Memset") or nxt["tid"] != fill["tid"] or nxt["cat"] != "kernel":
            continue
        if nxt["args"].get("External id") != fill["args"].get("External id"):
            continue
        fill_end = float(fill["ts"]) + float(fill["dur"])
        launch = launches[nxt["args"]["correlation"]]
        queued = float(launch["ts"]) + float(launch["dur"]) <= fill_end
        total += float(nxt["ts"]) - float(fill["ts"]) if queued else float(fill["dur"])
    return total / len(raw.steps(name))


@pytest.mark.usefixtures("always")
def test_finds_the_memset_before_the_compiled_addmm(load_facts):
    # seed_mm4096_compile: the program writes no memset, yet torch's table lists "Memset (Device)" x3
    facts = load_facts("seed_mm4096_compile")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm4096_compile")
    r = finding.record
    memsets = _named(facts, "Memset (Device)")
    assert r.pairs == memsets.size == 3
    assert r.device_us == pytest.approx(trace.dur[memsets].sum() / 1000)
    launches = _named(facts, "cudaMemsetAsync")
    assert r.host_api_us == pytest.approx(trace.dur[launches].sum() / 1000)
    assert r.gemm_kernels == ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT",)
    assert [(g.op, g.count, g.steps) for g in r.groups] == [("aten::addmm", 3, (2, 3, 4))]
    shown = [e for e in finding.evidence if e.name == "Memset (Device)"]
    assert {(e.ts_us, e.dur_us) for e in shown} == {(trace.ts[i] / 1000, trace.dur[i] / 1000) for i in memsets}
    assert sorted(e.step for e in shown) == [2, 3, 4]
    assert all("aten::addmm" in e.note for e in shown)
    # each memset is followed on its stream by the GEMM, which starts after it ends
    gemms = [e for e in finding.evidence if "bias" in e.name]
    for m, g in zip(shown, gemms, strict=True):
        assert g.lane == m.lane and g.step == m.step and g.ts_us >= m.ts_us + m.dur_us
    # the GPU waited for the host to launch each GEMM: the memsets cost only their own 0.77 µs
    assert r.queued == 0 and r.cost_us == pytest.approx(r.device_us)


@pytest.mark.usefixtures("always")
def test_the_same_memset_comes_before_a_plain_mm(load_facts):
    # the mechanism is cuBLAS's, not the epilogue's: seed_mm4096_warm's plain aten::mm has it too
    (finding,) = _findings(load_facts, "seed_mm4096_warm")
    r = finding.record
    assert r.pairs == 3 and r.groups[0].op == "aten::mm"
    assert r.gemm_kernels == ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",)


@pytest.mark.usefixtures("always")
@pytest.mark.parametrize("name", ["seed_mm4096_warm", "seed_mm4096_compile", "gpu/bias_addmm"])
def test_impact_is_the_gpu_time_the_memsets_take_from_the_raw_events(load_facts, name):
    (finding,) = _findings(load_facts, name)
    per_step = _raw_cost_per_step(name)
    # µs timestamps of ~5e12 read as floats: sub-ns rounding apart
    assert finding.impact.us == pytest.approx(per_step, abs=0.002)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=1e-4)
    assert finding.severity.value == "info"


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "seed_mm4096_compile", "gpu/bias_addmm", "gpu/bias_unfused",
                                  "gpu/gpt_bf16_fused", "gpu/resnet50_bf16", "series_linear_train",
                                  "gpu/kernel_variability", "seed_mm4096_compile_cold"])
def test_silent_where_the_memset_costs_nothing_measurable(load_facts, name):
    # REVIEW.md: the 4-byte memset before every cooperative GEMM is normal
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_warm", "gpu/cpu_only", "gpu/host_sync_item"])
def test_silent_without_a_library_memset_before_a_gemm(load_facts, name, always):
    # gpu/host_sync_item's memsets come from aten::mean, before a reduction, not a GEMM
    assert _findings(load_facts, name) == []


@pytest.mark.usefixtures("always")
def test_spanish_renders_every_field(load_facts):
    (finding,) = _findings(load_facts, "seed_mm4096_compile")
    es = localize_finding(finding, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(finding, part), part
    assert all(e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    docs = rule_docs(ID, "es")
    assert "Impacto:" in docs and "epílogo" in docs
