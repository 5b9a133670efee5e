from __future__ import annotations

import statistics

import pytest
import raw

GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm")
SPEEDUP = 2.7  # the rule's measured bf16/fp32 ratio: re-checked against the twin below


def _fp32_gemm_self_us_per_step(name: str) -> float:
    calls = raw.in_steps(name, [e for e in raw.complete(name, "cpu_op") if e["name"] in GEMMS
                                and e["args"].get("Input type", [None])[0] == "float"])
    return sum(raw.self_us(name, e) for e in calls) / len(raw.steps(name))


@pytest.mark.parametrize("name", ["gpu/cpu_linear_host", "gpu/cpu_mlp", "gpu/cpu_transformer",
                                  "gpu/cpu_linear_1thread"])
def test_fires_on_fp32_gemms_on_a_bf16_cpu(analysis_of, name):
    finding = analysis_of(name).finding("cpu-fp32-gemm")
    assert finding is not None
    expected = _fp32_gemm_self_us_per_step(name) * (1 - 1 / SPEEDUP)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)
    assert finding.impact.share == pytest.approx(expected / raw.median_step_us(name), rel=0.02)
    assert "autocast" in finding.fix and finding.record.ops[0] in GEMMS


def test_the_bf16_twin_saves_what_the_rule_predicts(analysis_of):
    # the same linear step measured both ways: the predicted saving against the real one
    predicted = analysis_of("gpu/cpu_linear_host").finding("cpu-fp32-gemm").impact.us
    measured = raw.median_step_us("gpu/cpu_linear_host") - raw.median_step_us("gpu/cpu_linear_bf16")
    assert 0.6 * measured <= predicted <= 1.4 * measured
    bf16_addmm = statistics.median(float(e["dur"]) for e in raw.complete("gpu/cpu_linear_bf16", "cpu_op", "aten::addmm"))
    fp32_addmm = statistics.median(float(e["dur"]) for e in raw.complete("gpu/cpu_linear_host", "cpu_op", "aten::addmm"))
    assert fp32_addmm / bf16_addmm == pytest.approx(SPEEDUP, rel=0.25)


@pytest.mark.parametrize("name", ["gpu/cpu_linear", "gpu/cpu_linear_bf16", "gpu/cpu_only", "gpu/fp32_gemm",
                                  "seed_mm4096_warm"])
def test_silent_without_host_facts_in_bf16_or_on_the_gpu(analysis_of, name):
    # cpu_linear is the same fp32 step without pista_host (a foreign trace): the CPU is unknown
    assert analysis_of(name).finding("cpu-fp32-gemm") is None
