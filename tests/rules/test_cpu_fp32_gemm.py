from __future__ import annotations

import gzip
import json

import pytest
import raw
from conftest import fixture

import pista
from pista.rules.cpu_fp32_gemm import CPU_BF16_SPEEDUP

GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm")


def _gemm_self_us_per_step(name: str, fp32_only: bool = True) -> float:
    calls = raw.in_steps(name, [e for e in raw.complete(name, "cpu_op") if e["name"] in GEMMS
                                and (not fp32_only or e["args"].get("Input type", [None])[0] == "float")])
    return sum(raw.self_us(name, e) for e in calls) / len(raw.steps(name))


@pytest.mark.parametrize("name", ["gpu/cpu_linear_host", "gpu/cpu_mlp", "gpu/cpu_transformer"])
def test_fires_on_fp32_gemms_on_a_bf16_cpu(analysis_of, name):
    finding = analysis_of(name).finding("cpu-fp32-gemm")
    assert finding is not None and finding.record.known_cpu
    expected = _gemm_self_us_per_step(name) * (1 - 1 / CPU_BF16_SPEEDUP)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)
    assert finding.impact.share == pytest.approx(expected / raw.median_step_us(name), rel=0.02)
    assert "autocast" in finding.fix and finding.record.ops[0] in GEMMS


def test_the_bf16_twin_saves_what_the_rule_predicts(analysis_of):
    # the same linear step measured both ways: the GEMMs' speed-up is the constant, and the predicted
    # saving is within 15% of the steps' real difference
    fp32, bf16 = _gemm_self_us_per_step("gpu/cpu_linear_host"), _gemm_self_us_per_step("gpu/cpu_linear_bf16", False)
    assert fp32 / bf16 == pytest.approx(CPU_BF16_SPEEDUP, rel=0.05)
    predicted = analysis_of("gpu/cpu_linear_host").finding("cpu-fp32-gemm").impact.us
    measured = raw.median_step_us("gpu/cpu_linear_host") - raw.median_step_us("gpu/cpu_linear_bf16")
    assert 0.85 * measured <= predicted <= 1.15 * measured


def test_with_idle_cores_it_counts_the_time_left_after_the_threads_fix(analysis_of):
    # 1 thread of 2: cpu-threads claims half the GEMM time; bf16 saves on the other half only, and the
    # free, exact fix comes first
    analysis = analysis_of("gpu/cpu_linear_1thread")
    bf16, threads = analysis.finding("cpu-fp32-gemm"), analysis.finding("cpu-threads")
    gemm = _gemm_self_us_per_step("gpu/cpu_linear_1thread")
    assert bf16.impact.us == pytest.approx(gemm * 0.5 * (1 - 1 / CPU_BF16_SPEEDUP), rel=0.01)
    assert threads.impact.us + bf16.impact.us < gemm
    assert analysis.top_fix is threads


def test_a_trace_from_elsewhere_gets_a_conditional_info(analysis_of):
    # cpu_linear is cpu_linear_host's workload without pista_host: the CPU is unknown, so the saving
    # is conditional (info), and the text says how to check the CPU
    finding = analysis_of("gpu/cpu_linear").finding("cpu-fp32-gemm")
    assert finding is not None and not finding.record.known_cpu and finding.severity.value == "info"
    assert "avx512_bf16" in finding.message and "avx512_bf16" in finding.fix
    expected = _gemm_self_us_per_step("gpu/cpu_linear") * (1 - 1 / CPU_BF16_SPEEDUP)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)


def test_silent_where_the_cpu_has_no_bf16(tmp_path):
    with gzip.open(fixture("gpu/cpu_linear_host")) as fh:
        doc = json.load(fh)
    doc["pista_host"]["bf16_gemm"] = False
    path = tmp_path / "no_bf16.json"
    path.write_text(json.dumps(doc))
    assert pista.analyze(str(path)).finding("cpu-fp32-gemm") is None


@pytest.mark.parametrize("name", ["gpu/cpu_linear_bf16", "gpu/cpu_only", "gpu/python_loop_cpu", "gpu/fp32_gemm",
                                  "seed_mm4096_warm"])
def test_silent_in_bf16_on_small_gemms_or_on_the_gpu(analysis_of, name):
    # cpu_only and python_loop_cpu: 17 and 2.1 MFLOP per call, dispatch more than arithmetic
    assert analysis_of(name).finding("cpu-fp32-gemm") is None


def test_without_record_shapes_the_gemms_are_taken_as_fp32_and_it_says_so(tmp_path):
    """A CPU trace recorded without record_shapes holds no dtype: monisha_trace (79% of its CPU time in
    aten::mm/addmm) got no word of its GEMMs. gpu/cpu_linear with every op's shapes and types taken out
    gets the conditional info, its saving from all the GEMMs' own time, and says the dtype is unknown."""
    name = "gpu/cpu_linear"
    with gzip.open(fixture(name)) as fh:
        doc = json.load(fh)
    for e in doc["traceEvents"]:
        for key in ("Input type", "Input Dims", "Concrete Inputs", "Input Strides"):
            (e.get("args") or {}).pop(key, None)
    path = tmp_path / "no_shapes.json"
    path.write_text(json.dumps(doc))
    finding = pista.analyze(str(path)).finding("cpu-fp32-gemm")
    assert finding is not None and not finding.record.dtype_known and finding.severity.value == "info"
    assert "record_shapes" in finding.message
    expected = _gemm_self_us_per_step(name, fp32_only=False) * (1 - 1 / CPU_BF16_SPEEDUP)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)
