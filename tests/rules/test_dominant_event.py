from __future__ import annotations

import dataclasses
import gzip
import json

import numpy as np
import pytest
import raw
from conftest import FIXTURES, fixture
from torch_table import parse_table

from pista.analysis import analyze
from pista.i18n import localize_finding
from pista.rules import _dominant, dominant_event
from pista.rules._dominant import DOMINANT_SHARE
from pista.rules.dominant_event import ID

MINE = ["compute-bound", "dominant-event", "kernel-variability", "fp32-gemm", "implicit-copy-before-gemm"]


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_compiled_4096_gemm(load_facts):
    facts = load_facts("seed_mm4096_compile")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm4096_compile")
    r = finding.record
    table = parse_table(FIXTURES / "seed_mm4096_compile.table.txt")
    gemm = next(row for row in table.rows if "bias_NNT" in row.name)  # torch: 526.017us, 99.56%, 3 calls
    assert r.kind == "kernel"
    assert r.name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT"
    assert r.calls == gemm.calls == 3
    assert r.total_us == pytest.approx(gemm.self_device_us, abs=0.001)
    assert r.share_percent == pytest.approx(100 * gemm.self_device_us / table.self_device_total_us, abs=0.01)
    assert r.launched_by == "aten::addmm"
    # 2*4096^3 FLOP per call in 175.3 µs: 784 TFLOP/s, above the H200's measured 757
    assert r.rate.dtype == "bf16" and r.rate.tflops == pytest.approx(2 * 4096**3 / 175.339e-6 / 1e12, rel=0.01)
    assert r.cause == "at-ceiling" and r.shape == (1, 4096, 4096, 4096)
    # evidence: its three instances, longest first, as they are in the trace
    kernels = np.flatnonzero(facts.is_device_work & (trace.name_array[trace.name] == r.name))
    assert sorted((e.dur_us, e.ts_us) for e in finding.evidence) == sorted(
        (trace.dur[i] / 1000, trace.ts[i] / 1000) for i in kernels)
    assert [e.dur_us for e in finding.evidence] == sorted((e.dur_us for e in finding.evidence), reverse=True)
    assert sorted(e.step for e in finding.evidence) == [2, 3, 4]


def test_the_warm_4096_gemm_at_the_ceiling_is_info_with_no_impact_and_no_optimise_advice(analysis_of):
    analysis = analysis_of("seed_mm4096_warm")
    finding = analysis.finding(ID)
    r = finding.record
    assert r.cause == "at-ceiling" and r.rate.tflops == pytest.approx(803, rel=0.05)
    assert finding.impact.us == 0.0 and finding.impact.share == 0.0
    assert finding.severity.value == "info"
    # REVIEW.md calls "optimise the dominant kernel" for a GEMM at 81% of peak misleading
    text = (finding.message + finding.advice + finding.fix).lower()
    assert "optimi" not in text and "start gpu-side" not in text
    assert finding.advice.startswith("Leave ") and "803 TFLOP/s" in finding.message
    assert "757 TFLOP/s bf16 ceiling" in finding.message and "measured" in finding.basis
    # compute-bound is folded in: one finding about the GPU being the limit
    assert analysis.finding("compute-bound") is None


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "gpu/resnet50_bf16", "gpu/gpt_bf16_fused", "gpu/bias_addmm"])
def test_no_warning_on_healthy_traces_near_the_card_s_peak(name):
    # issue 14: busy >90% with work near the card's peak: no warning or critical unless it saves >= 5%
    for f in analyze(fixture(name), rules=MINE).findings:
        assert f.severity.value == "info" or f.impact.share >= 0.05, (name, f.rule, f.impact)


def test_impact_is_the_time_above_the_ceiling_from_the_raw_events(load_facts, monkeypatch):
    # with a ceiling of 1000 TFLOP/s the warm 4096 GEMM (803) runs below it: each call could save
    # its time minus 2*4096^3 FLOP / 1000 TFLOP/s (80% of it is near the ceiling, NEAR_PEAK_SHARE: raised here,
    # the arithmetic of the claim is what is tested)
    card = dominant_event.card_of(load_facts("seed_mm4096_warm").trace)
    faster = dataclasses.replace(card, measured=dict(card.measured, bf16=1000.0))
    monkeypatch.setattr(dominant_event, "card_of", lambda trace: faster)
    monkeypatch.setattr(dominant_event, "NEAR_PEAK_SHARE", 0.85)
    (finding,) = _findings(load_facts, "seed_mm4096_warm")
    name = "seed_mm4096_warm"
    ideal = 2 * 4096**3 / 1000e12 * 1e6  # µs per call at the ceiling
    calls = [float(k["dur"]) for k in raw.complete(name, "kernel") if k["name"].startswith("nvjet_")]
    assert len(calls) == 3
    per_step = sum(d - ideal for d in calls if ideal < 0.9 * d) / len(raw.steps(name))
    assert finding.record.cause == "below-ceiling"
    assert finding.impact.us == pytest.approx(per_step, rel=1e-6)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), rel=1e-4)
    assert finding.severity.value == "warning"  # 34 µs of a 213 µs step (its GPU work outlasts the host's 160)
    assert "1000 TFLOP/s" in finding.basis and "less per step" in finding.message
    assert "max-autotune" in finding.advice  # a big, well-shaped GEMM: autotuning is what is left


def test_fires_without_steps(tmp_path):
    doc = json.loads(gzip.decompress(fixture("seed_mm4096_warm").read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    path = tmp_path / "no_steps.json"
    path.write_text(json.dumps(doc))
    (finding,) = analyze(path, rules=[ID]).findings
    assert finding.record.calls == 3 and finding.record.steps == 1
    assert all(e.step is None for e in finding.evidence)


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


@pytest.mark.parametrize("name", ["seed_mm64_compile", "gpu/trailing_sync", "gpu/recompile", "seed_mm4096_compile_cold"])
def test_silent_when_the_host_is_the_limit(analysis_of, name):
    # one kernel dominates the GPU time, but the GPU waits for the host: a faster kernel saves nothing
    analysis = analysis_of(name)
    assert analysis.summary.verdict == "overhead-bound"
    assert analysis.finding(ID) is None


def test_silent_without_a_gpu(load_facts):
    assert _findings(load_facts, "gpu/cpu_only") == []


def test_an_op_dominates_when_no_single_kernel_does(load_facts, monkeypatch):
    # pageable_memcpy: aten::copy_ owns all the device time, split over its H2D and D2H copies
    # (the largest, D2H, is 82%); with the bar above that, the op is named instead of a kernel
    facts = load_facts("gpu/pageable_memcpy")
    trace = facts.trace
    monkeypatch.setattr(_dominant, "DOMINANT_SHARE", 0.9)
    (finding,) = _findings(load_facts, "gpu/pageable_memcpy")
    copies = np.flatnonzero(facts.is_device_work)
    assert {trace.event_name(facts.owner[i]) for i in copies} == {"aten::copy_"}
    assert finding.record.kind == "op" and finding.record.name == "aten::copy_"
    assert finding.record.share_percent == pytest.approx(100.0)
    assert finding.record.calls == len({int(facts.owner[i]) for i in copies})
    assert all(e.name.startswith("Memcpy") for e in finding.evidence)


def test_a_dominant_copy_is_left_to_the_copy_rules(analysis_of):
    # a Memcpy DtoH holds 81.7% of gpu/pageable_memcpy's device time: its cost and its fix (pinned
    # memory) are pageable-memcpy's finding, told once there
    a = analysis_of("gpu/pageable_memcpy")
    assert a.finding(ID) is None
    assert any(g.direction == "DtoH" for g in a.finding("pageable-memcpy").record.groups)


def test_an_fp32_gemm_points_at_its_precision(analysis_of):
    finding = analysis_of("gpu/fp32_gemm").finding(ID)
    assert finding.record.cause == "precision" and finding.record.rate.dtype == "fp32"
    assert finding.impact.us == 0.0  # fp32-gemm says what TF32 saves
    assert "fp32-gemm" in finding.advice and "fp32-gemm" in finding.basis


def test_a_kernel_without_flops_says_so(analysis_of):
    # gpu/stream_fp32: one elementwise mul is the whole GPU time; pista counts FLOPs of GEMM ops only
    finding = analysis_of("gpu/stream_fp32").finding(ID)
    assert finding.record.cause == "no-flops" and finding.record.rate.tflops is None
    assert finding.impact.us == 0.0 and "no FLOP count" in finding.basis
    assert "torch.compile" in finding.advice


def test_spanish_renders_every_field(analysis_of, load_facts, monkeypatch):
    english = [analysis_of(n).finding(ID) for n in ("seed_mm4096_warm", "gpu/fp32_gemm", "gpu/stream_fp32")]
    for finding in english:
        es = localize_finding(finding, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(es, part) and getattr(es, part) != getattr(finding, part), (finding.record.cause, part)
        assert all(e.note and e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    from pista.i18n import rule_docs

    docs = rule_docs(ID, "es")
    assert all(s in docs for s in ("Qué:", "Por qué:", "Ejemplo:", "Impacto:", "Solución:"))


def test_a_collectives_kernel_is_left_to_exposed_communication():
    """HTA's hta_sampled_rank0: ncclKernel_SendRecv holds 65% of the GPU time. What it costs the step is its
    exposure (exposed-communication's); 'check it with ncu' at 0 µs said nothing."""
    import raw
    from conftest import fixture

    from pista.analysis import analyze

    name = "foreign/hta_sampled_rank0"
    work = [e for e in raw.complete(name) if e.get("cat") == "kernel"]
    nccl = sum(float(e["dur"]) for e in work if "ncclKernel" in e["name"])
    assert nccl > 0.5 * sum(float(e["dur"]) for e in work)
    rules = {f.rule for f in analyze(fixture(name)).findings}
    assert "dominant-event" not in rules and "exposed-communication" in rules


# -- a GEMM near the ceiling is doing its job (issue 35, review 3) -------------------------------------------

MI300X_CEILING = 620.0  # bf16, published (pista.efficiency)


def _mm_rate(name: str) -> float:
    """TFLOP/s of the steps' (or the window's) aten::mm calls: 2 M N K from their Input Dims over the kernels
    they launched, from the raw events."""
    ops = {e["args"]["External id"]: e for e in raw.complete(name, "cpu_op", "aten::mm") if "External id" in e["args"]}
    flops = sum(2.0 * op["args"]["Input Dims"][0][0] * op["args"]["Input Dims"][0][1] * op["args"]["Input Dims"][1][1]
                for op in ops.values())
    time = sum(float(k["dur"]) for k in raw.complete(name, "kernel") if k.get("args", {}).get("External id") in ops)
    return flops / time / 1e6


@pytest.mark.parametrize("name", ["foreign/tl_compile_triton", "foreign/tl_sglang_prefilldecode"])
def test_a_gemm_near_the_ceiling_gets_no_autotune_advice(analysis_of, name):
    share = _mm_rate(name) / MI300X_CEILING
    assert 0.75 <= share < 0.9, share  # 88.3% and 81.9%: review 3 marked "max-autotune" for them misleading
    finding = analysis_of(name).finding(ID)
    r = finding.record
    assert r.cause == "near-ceiling" and r.rate.ceiling_share == pytest.approx(share, rel=0.01)
    assert finding.impact.us == 0.0 and finding.severity.value == "info"
    assert finding.advice.startswith("Leave aten::mm") and "pick a better kernel" not in finding.advice + finding.fix
    assert "none claimed" in finding.basis
    # the rest of the GPU time is named, and the GPU's idle time where it is most of the window
    assert f"the other {100 - r.share_percent:.0f}% of the GPU time" in finding.advice
    assert ("the GPU is idle" in finding.advice) == (r.gpu_busy_percent < dominant_event.IDLE_NAMED_BELOW)
    es = localize_finding(finding, "es")
    assert es.advice.startswith("Deja aten::mm") and "nada reclamado" in es.basis


def test_below_the_near_peak_share_the_gemm_keeps_its_advice(analysis_of, monkeypatch):
    # the twin: the same GEMM read with a higher bar is below it, and told to autotune with its headroom claimed
    monkeypatch.setattr(dominant_event, "NEAR_PEAK_SHARE", 0.95)
    finding = analyze(fixture("foreign/tl_compile_triton"), rules=[ID], replay=False).finding(ID)
    assert finding.record.cause == "below-ceiling" and finding.impact.us > 0
    assert "max-autotune" in finding.advice
