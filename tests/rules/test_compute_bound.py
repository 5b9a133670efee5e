from __future__ import annotations

import pytest
import raw
from conftest import fixture

from pista.analysis import analyze
from pista.i18n import localize_finding, rule_docs
from pista.rules import compute_bound
from pista.rules.compute_bound import ID

TENSOR_CORE_TYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16"}
H200_CEILING = {"bf16": 756.7, "fp16": 670.6}  # shared/traces/README.md, measured
GEMM_OPERANDS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}


def _raw_headroom_per_step(name: str) -> float:
    """µs per step the bf16/fp16 GEMM kernels spend above the H200's ceiling, from the raw events:
    each op call's FLOPs (its Input Dims) go to the longest kernel it launched; a call within 90% of
    the ceiling counts nothing."""
    ops = {e["args"]["External id"]: e for e in raw.complete(name, "cpu_op")
           if e["name"] in GEMM_OPERANDS and "External id" in e.get("args", {})}
    longest: dict[int, dict] = {}
    for k in raw.complete(name, "kernel"):
        ext = k.get("args", {}).get("External id")
        if ext in ops and (ext not in longest or float(k["dur"]) > float(longest[ext]["dur"])):
            longest[ext] = k
    total = 0.0
    for ext, k in longest.items():
        op = ops[ext]
        i, j = GEMM_OPERANDS[op["name"]]
        dtype = TENSOR_CORE_TYPES.get(op["args"]["Input type"][i])
        if dtype is None:
            continue
        a, b = op["args"]["Input Dims"][i], op["args"]["Input Dims"][j]
        flops = 2.0 * (a[0] * a[1] * a[2] * b[2] if len(a) == 3 else a[0] * a[1] * b[1])
        ideal = flops / (H200_CEILING[dtype] * 1e12) * 1e6
        if ideal < 0.9 * float(k["dur"]):
            total += float(k["dur"]) - ideal
    return total / len(raw.steps(name))


def test_folded_into_dominant_event_where_one_kernel_dominates(analysis_of):
    # the verdict says compute-bound; the one finding is dominant-event's, with the GEMM's efficiency
    for name in ("seed_mm4096_warm", "gpu/fp32_gemm", "gpu/tf32_gemm", "gpu/kernel_variability"):
        analysis = analysis_of(name)
        assert analysis.summary.verdict == "compute-bound"
        assert analysis.finding(ID) is None and analysis.finding("dominant-event") is not None, name


@pytest.mark.parametrize("name", ["gpu/gpt_bf16_fused", "gpu/resnet50_bf16"])
def test_silent_on_healthy_compute_bound_traces(name):
    # GEMMs near the ceiling (GPT: 730-800 TFLOP/s bf16); ResNet's time is in convolutions
    analysis = analyze(fixture(name), rules=[ID, "dominant-event"])
    assert analysis.summary.verdict == "compute-bound" and analysis.findings == []


def test_impact_is_the_gemm_time_above_the_ceiling_from_the_raw_events(monkeypatch):
    name = "gpu/gpt_bf16_fused"
    threshold = compute_bound.MIN_STEP_SHARE
    monkeypatch.setattr(compute_bound, "MIN_STEP_SHARE", 0.0)
    # its GEMM kernels run at 89-105% of the ceiling: counted here call by call, as the rule does below NEAR_PEAK_SHARE
    monkeypatch.setattr(compute_bound, "NEAR_PEAK_SHARE", 2.0)
    (finding,) = analyze(fixture(name), rules=[ID], replay=False).findings
    per_step = _raw_headroom_per_step(name)
    assert per_step > 0
    assert finding.impact.us == pytest.approx(per_step, rel=1e-6)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), rel=1e-6)
    # 53 µs of a 16 ms step: why the rule is silent there
    assert finding.impact.share < threshold and finding.severity.value == "info"
    r = finding.record
    assert r.card == "H200 SXM" and r.ceiling_measured and r.steps == 3
    assert [k.headroom_us for k in r.kernels] == sorted((k.headroom_us for k in r.kernels), reverse=True)
    assert all(k.dtype == "bf16" and k.ceiling_tflops == 756.7 for k in r.kernels)
    assert r.kernels[0].name.startswith("nvjet_")
    assert all(e.name.startswith("nvjet_") for e in finding.evidence)
    # Spanish: every field
    es = localize_finding(finding, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) != getattr(finding, part), part
    assert all(e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    assert "Impacto:" in rule_docs(ID, "es")


def test_silent_when_host_bound_or_cpu_only(analysis_of):
    for name in ("seed_mm64_warm", "gpu/launch_bound", "gpu/cpu_only"):
        assert analysis_of(name).finding(ID) is None, name


# -- GEMMs near the ceiling are left alone (issue 35, review 3) ----------------------------------------------

# the ceilings pista uses: the H100 SXM's datasheet bf16 (989.5) times the share the H200 measured of its own
# (756.7 / 989), and the MI300X's published 620 (pista.efficiency)
CEILING = {"foreign/tl_h100_qwen05": 989.5 * 756.7 / 989, "foreign/tl_mi300_qwen05": 620.0}


def _raw_rates(name: str) -> dict[str, float]:
    """TFLOP/s per GEMM kernel name: the bf16 mm/addmm calls' FLOPs (their Input Dims) over the time of the
    longest kernel each launched, from the raw events."""
    ops = {e["args"]["External id"]: e for e in raw.complete(name, "cpu_op")
           if e["name"] in ("aten::mm", "aten::addmm") and "External id" in e.get("args", {})}
    longest: dict[int, dict] = {}
    for k in raw.complete(name, "kernel"):
        ext = k.get("args", {}).get("External id")
        if ext in ops and (ext not in longest or float(k["dur"]) > float(longest[ext]["dur"])):
            longest[ext] = k
    flops: dict[str, float] = {}
    time: dict[str, float] = {}
    for ext, k in longest.items():
        i, j = GEMM_OPERANDS[ops[ext]["name"]]
        a, b = ops[ext]["args"]["Input Dims"][i], ops[ext]["args"]["Input Dims"][j]
        flops[k["name"]] = flops.get(k["name"], 0.0) + 2.0 * a[0] * a[1] * b[1]
        time[k["name"]] = time.get(k["name"], 0.0) + float(k["dur"])
    return {n: flops[n] / time[n] / 1e6 for n in flops}


@pytest.mark.parametrize("name", sorted(CEILING))
def test_gemms_near_the_ceiling_get_no_autotune_advice(analysis_of, name):
    from pista.rules.compute_bound import NearPeak

    rates = _raw_rates(name)
    assert rates and all(0.75 <= r / CEILING[name] < 0.9 for r in rates.values()), rates
    analysis = analysis_of(name)
    finding = analysis.finding(ID)
    r = finding.record
    assert isinstance(r, NearPeak) and finding.impact.us == 0.0 and finding.severity.value == "info"
    assert {k.name for k in r.kernels} <= set(rates)
    assert all(k.tflops == pytest.approx(rates[k.name], rel=0.01) for k in r.kernels)
    # the larger cost it points at: the elementwise kernels, by the summary's own purposes
    purposes = analysis.summary.gpu_time_by_purpose
    assert r.other == "elementwise" == max(purposes, key=purposes.get) and r.other_us > r.gemm_us / r.steps
    text = finding.message + finding.advice + finding.fix
    assert "Leave the GEMMs" in finding.advice and "Start with" not in text and "pick kernels" not in text
    assert "elementwise" in finding.fix


def test_near_peak_points_at_the_finding_that_names_the_larger_cost():
    from pista.i18n import localize_finding

    finding = analyze(fixture("foreign/tl_h100_qwen05")).finding(ID)
    assert finding.record.named_by == ("unfused-elementwise",) and "see unfused-elementwise" in finding.advice
    es = localize_finding(finding, "es")
    assert "Deja los GEMM" in es.advice and "elemento a elemento" in es.advice and "unfused-elementwise" in es.advice


def test_gemms_below_the_near_peak_share_still_get_their_advice(analysis_of):
    # the twin: gpu/attn_manual's GEMMs below 75% of the H200's ceiling keep the autotune advice
    finding = analysis_of("gpu/attn_manual").finding(ID)
    r = finding.record
    assert not hasattr(r, "named_by") and r.kernels and all(k.ceiling_share < 0.75 for k in r.kernels)
    assert finding.advice.startswith("Start with") and "max-autotune" in finding.advice
