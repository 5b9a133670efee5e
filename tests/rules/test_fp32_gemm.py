from __future__ import annotations

import gzip
import json
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
import raw
from conftest import fixture

from pista.analysis import analyze
from pista.efficiency import card_named
from pista.i18n import localize_finding, rule_docs
from pista.rules import fp32_gemm
from pista.rules.fp32_gemm import ID


def test_fires_on_the_fp32_matmul_with_tf32_off(analysis_of):
    analysis = analysis_of("gpu/fp32_gemm")
    finding = analysis.finding(ID)
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}))
    assert len(kernels) == 3  # one 4096^3 matmul per profiled step
    r = finding.record
    assert r.kernels == 3 and r.ops == ("aten::mm",) and r.shape == (1, 4096, 4096, 4096)
    shown = [e for e in finding.evidence if e.lane.startswith("GPU")]
    assert {(e.name, e.ts_us, e.dur_us, e.step) for e in shown} == {
        (trace.event_name(i), trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in kernels}
    assert all("_ffma_" in e.name and "tf32" not in e.name for e in shown)
    ops = [e for e in finding.evidence if e.name == "aten::mm"]
    assert len(ops) == 3 and all("[[4096, 4096], [4096, 4096]]" in e.note for e in ops)
    # 2*4096^3 flops per kernel; the README's ceiling for fp32 with TF32 off is 50.9 TFLOP/s
    expected = 3 * 2 * 4096**3 / trace.dur[kernels].sum() / 1e3
    assert r.tflops == pytest.approx(expected)
    assert 45 < r.tflops < 55
    assert r.target == "tf32" and r.target_tflops == 355.2 and r.target_measured
    assert "set_float32_matmul_precision('high')" in finding.fix


def test_impact_is_the_time_saved_at_the_tf32_ceiling_from_the_raw_events(analysis_of):
    name = "gpu/fp32_gemm"
    finding = analysis_of(name).finding(ID)
    ideal = 2 * 4096**3 / 355.2e12 * 1e6  # µs per call at the H200's measured TF32 ceiling
    calls = [float(k["dur"]) for k in raw.complete(name, "kernel")]
    per_step = sum(d - ideal for d in calls) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=1e-6)
    assert finding.impact.share == pytest.approx(min(1.0, per_step / raw.step_us(name)), rel=1e-6)
    # 2.30 of each 2.68 ms call; the same matmul in TF32 (gpu/tf32_gemm) really took 0.343 ms
    tf32 = [float(k["dur"]) for k in raw.complete("gpu/tf32_gemm", "kernel") if "tf32" in k["name"]]
    assert finding.impact.us == pytest.approx(np.mean(calls) - np.mean(tf32), rel=0.05)
    assert finding.severity.value == "critical"
    assert "TF32 ceiling" in finding.basis and "upper bound" in finding.basis


def test_silent_with_tf32_on(analysis_of):
    # same matmul, set_float32_matmul_precision("high"): sm90_xmma_gemm_f32f32_tf32f32_f32 kernels
    assert analysis_of("gpu/tf32_gemm").finding(ID) is None


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "series_linear_train", "gpu/recompile", "gpu/cpu_only",
                                  "gpu/resnet50_bf16"])
def test_silent_on_bf16_negligible_or_cpu_gemms(analysis_of, name):
    # bf16 nvjet kernels; gpu/recompile has two tiny fp32 SIMT GEMMs (14 µs of 19 ms of GPU time)
    assert analysis_of(name).finding(ID) is None


def test_no_tf32_advice_on_a_card_without_tf32(monkeypatch):
    # the same trace read as if from a V100 (Volta: fp16 tensor cores, no TF32)
    v100 = card_named("Tesla V100-SXM2-16GB")
    monkeypatch.setattr(fp32_gemm, "card_of", lambda trace: v100)
    (finding,) = analyze(fixture("gpu/fp32_gemm"), rules=[ID]).findings
    r = finding.record
    assert r.target == "fp16" and r.card == "V100 SXM2" and not r.target_measured
    assert r.target_tflops == pytest.approx(v100.ceiling("fp16"))
    for text in (finding.message, finding.advice, finding.fix, finding.basis):
        assert "allow_tf32" not in text and "matmul_precision" not in text and "bfloat16" not in text, text
        assert "TF32 ceiling" not in text
    assert "float16" in finding.advice and "GradScaler" in finding.advice and "no TF32" in finding.advice
    es = localize_finding(finding, "es")
    assert "allow_tf32" not in es.advice + es.fix and "float16" in es.fix


def test_silent_on_a_card_without_tensor_cores(monkeypatch):
    monkeypatch.setattr(fp32_gemm, "card_of", lambda trace: card_named("Tesla P100-PCIE-16GB"))
    assert analyze(fixture("gpu/fp32_gemm"), rules=[ID]).findings == []


def test_spanish_renders_every_field(analysis_of):
    finding = analysis_of("gpu/fp32_gemm").finding(ID)
    es = localize_finding(finding, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(finding, part), part
    assert all(e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    assert "Impacto:" in rule_docs(ID, "es")


def test_fires_without_record_shapes_on_the_kernels_names(analysis_of):
    # a compiled MLP profiled without record_shapes: inductor's extern mm/addmm run cuBLAS ffma and
    # CUTLASS simt sgemm kernels, and their ops carry no `Input type`
    name = "gpu/compile_float_arg"
    finding = analysis_of(name).finding(ID)
    assert finding is not None
    simt = [float(k["dur"]) for k in raw.complete(name, "kernel") if "_ffma_" in k["name"] or "simt_sgemm" in k["name"]]
    assert finding.record.kernels == len(simt) == 24
    # no shapes, so no FLOPs: each call saves its time times 1 - fp32/tf32 ceilings (50.9 and 355.2
    # TFLOP/s measured on the H200), inside the profiled steps
    per_step = sum(simt) * (1 - 50.9 / 355.2) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=1e-3)
    assert finding.record.tflops is None and finding.record.shape is None
    assert any("record_shapes=False" in e.note for e in finding.evidence)


def _renamed(name: str, tmp_path, device: str) -> str:
    import gzip
    import json

    with gzip.open(fixture(name), "rt") as f:
        data = json.load(f)
    for p in data.get("deviceProperties", []):
        p["name"] = device
    path = tmp_path / "renamed.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(data, f)
    return str(path)


@pytest.mark.parametrize("device", ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4060"])
def test_on_a_geforce_card_bf16_not_tf32(device, tmp_path):
    """GeForce Ampere/Ada run TF32 at the fp32 rate (GA102 and Ada whitepapers): advising TF32 there
    saves nothing. The same fp32 matmul read as an RTX 4090's (in the table) or an RTX 4060's (not in
    it) advises bf16 autocast, its saving the calls' time at twice the fp32 rate, not TF32's 7x."""
    name = "gpu/fp32_gemm"
    finding = analyze(_renamed(name, tmp_path, device)).finding(ID)
    r = finding.record
    assert r.target == "bf16" and r.geforce
    calls = [float(k["dur"]) for k in raw.complete(name, "kernel")]
    card = card_named(device)
    if card is not None:
        assert card.tflops["tf32"] == card.tflops["fp32"]  # no TF32 gain on GeForce
        ideal = 2 * 4096**3 / (card.ceiling("bf16") * 1e12) * 1e6
        saved = sum(max(0.0, d - ideal) for d in calls)
    else:
        assert r.assumed_speedup == 2.0 and "2x faster" in finding.message
        saved = sum(d / 2 for d in calls)
    assert finding.impact.us == pytest.approx(saved / len(raw.steps(name)), rel=1e-3)
    assert "bfloat16" in finding.fix and "set_float32_matmul_precision" not in finding.fix
    assert "7x" not in finding.message


def test_without_device_properties_the_kernels_names_give_the_architecture():
    """torch 1.8's trace of resnet50 (kineto's sample, no deviceProperties) ran on a V100: its kernels
    are cuBLAS's and cuDNN's volta_* builds. Volta has no TF32: the advice is fp16 autocast, not
    'TF32 assumed 7x faster'."""
    import gzip
    import json
    import re

    from conftest import FIXTURES

    path = FIXTURES / "foreign" / "kineto_resnet50_autograd_api.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert not doc.get("deviceProperties")
    arch = {m.group(1) for e in doc["traceEvents"] if e.get("cat") in ("Kernel", "kernel")
            and (m := re.match(r"(volta|turing|ampere|sm\d\d)_", e["name"]))}
    assert arch == {"volta"}
    finding = analyze(str(path)).finding(ID)
    assert finding.record.target == "fp16" and "no TF32" in finding.advice and "float16" in finding.fix


def test_cudnns_fp32_gemms_for_convolutions_are_named_as_convolutions():
    """kineto's fp32 ResNet-50 on a V100 (HTA's ns_resolution sample): cuDNN runs convolutions as volta_sgemm
    kernels under aten::cudnn_convolution / convolution_backward; the GEMM ops (mm/addmm, the FC) are a
    few. The finding names the convolutions first and says how many kernels are theirs; it is printed (the
    engine once dropped it as 'restated' after channels-last, as profiled, where the profiled host bounds
    the step) and leads."""
    name = "foreign/hta_ns_resolution"
    kernels = [e for e in raw.complete(name, "kernel") if "sgemm" in e["name"]]
    ops = {e["args"]["External id"]: e["name"] for e in raw.complete(name, "cpu_op") if "External id" in e.get("args", {})}
    conv = [k for k in kernels if "conv" in ops.get(k["args"].get("External id"), "")]
    assert len(conv) > len(kernels) / 2
    analysis = analyze(fixture(name))
    f = next(f for f in analysis.findings if f.rule == "fp32-gemm")
    # with cuDNN's own fp32 convolution kernels (scudnn, dgrad/wgrad engines on float: review 5), counted from the
    # raw names here
    own = re.compile(r"scudnn|(dgrad|wgrad|fprop)\w*engine<float|winograd\w*<float|convolve\w*<float", re.I)
    named = [e for e in raw.complete(name, "kernel") if own.search(e["name"]) and e not in conv]
    assert named
    assert f.record.conv_kernels == len(conv) + len(named)
    assert "conv" in f.record.ops[0] and "for convolutions" in f.message
    assert analysis.top_fix is f


# --- fp32 GEMMs off the critical path (review 4: silences) ------------------------------------------------------

SEVIT_WARM = raw.FIXTURES / "foreign" / "a4000_sevit_warm.json.gz"
DFIDX = next((p for p in (Path("/work/foreign_traces/_cache/hta_v100_dfidx.json.gz"),
                          Path("/work/review4/traces/hta_v100_dfidx.json.gz")) if p.exists()), None)


def test_fp32_gemms_the_step_does_not_wait_for_are_said_as_information():
    # an RTX A4000 (sm_86) forward recorded with CUDA activity alone: ampere_sgemm_* kernels take 56% of the GPU
    # time, 27% of the window, and the GPU idles half of it; the host's last runtime call ends after the last
    # kernel, so the host sets the window's end and faster GEMMs do not shorten it. It was silent
    events = raw.events(str(SEVIT_WARM.relative_to(raw.FIXTURES)))
    kernels = [e for e in events if e.get("cat") == "Kernel"]
    sgemm = sum(float(k["dur"]) for k in kernels if "sgemm" in k["name"])
    host_end = max(float(e["ts"]) + float(e["dur"]) for e in events if e.get("cat") == "cuda_runtime")
    assert host_end > max(float(k["ts"]) + float(k["dur"]) for k in kernels)
    props = json.loads(gzip.decompress(SEVIT_WARM.read_bytes()))["deviceProperties"][0]
    assert (props["computeMajor"], props["computeMinor"]) == (8, 6) and "GeForce" not in props["name"]
    finding = analyze(SEVIT_WARM).finding(ID)
    r = finding.record
    assert r.off_path and finding.severity.value == "info" and finding.impact.us == 0
    assert r.gemm_us == pytest.approx(sgemm)
    # a workstation Ampere: TF32 at twice the fp32 rate (not the data-centre parts' 7x): half the GEMM time
    assert r.target == "tf32" and r.assumed_speedup == 2.0 and r.saved_us == pytest.approx(sgemm / 2)
    assert "does not wait for them" in finding.message and "set_float32_matmul_precision('high')" in finding.advice
    assert "saves none of the step" in finding.basis
    es = localize_finding(finding, "es")
    assert "no los espera" in es.message and "no ahorra nada del paso" in es.basis


@pytest.mark.skipif(DFIDX is None, reason="hta_v100_dfidx is not on this machine (tests/fixtures/foreign/remote.json)")
def test_a_v100_steps_fp32_gemms_off_the_critical_path_get_fp16_advice():
    # HTA's df_index_resolver trace: a compiled model trained with DDP on a V100, 5 steps; volta_sgemm takes 23% of
    # each step while the backward thread issues 374 all-reduces one by one with the GPU idle. It was silent
    with gzip.open(DFIDX, "rt") as f:
        data = json.load(f)
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    sgemm = sum(float(e["dur"]) for e in events if e.get("cat") == "kernel" and "sgemm" in e["name"])
    finding = analyze(DFIDX).finding(ID)
    r = finding.record
    assert r.off_path and finding.impact.us == 0 and r.target == "fp16" and "V100" in (r.card or "")
    assert r.gemm_us == pytest.approx(sgemm)
    assert r.gemm_us / len(steps) > 0.2 * statistics.median(float(s["dur"]) for s in steps)
    assert "torch.float16" in finding.advice and "has no TF32" in finding.advice


def test_an_overhead_bound_step_keeps_fp32_gemm_quiet():
    # the twin: gpu/recompile_limit's 68 µs of fp32 GEMMs with the GPU busy 9% (overhead-bound): the host's
    # dispatch is the step, overhead-bound says so, and a dtype is beside the point
    assert analyze(fixture("gpu/recompile_limit"), rules=[ID], replay=False).finding(ID) is not None
    analysis = analyze(fixture("gpu/recompile_limit"))  # the engine's replay: nothing saved
    assert analysis.summary.verdict == "overhead-bound" and analysis.finding(ID) is None


def test_fp32_gemms_on_the_critical_path_keep_their_replayed_saving():
    # the twin: gpu/fp32_gemm's GEMM is the step: its saving is the replay's, not information
    finding = analyze(fixture("gpu/fp32_gemm")).finding(ID)
    assert not finding.record.off_path and finding.impact.replayed and finding.impact.us > 0
    assert finding.severity.value == "critical"


def _raw_kernels(name: str) -> list[dict]:
    doc = json.loads(gzip.decompress(Path(fixture(name)).read_bytes()))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel"]


def test_cudnn_fp32_convolutions_count_before_tf32(analysis_of):
    """Review 5: on cards with tensor cores but no TF32 (V100, T4) cuDNN's own fp32 convolution kernels (scudnn,
    dgrad/wgrad engines on float, winograd on float) are what fp16 autocast moves onto the tensor cores; they had
    been left out (t4_resnet50_bottleneck: 58% of the GPU time, no finding). hta_ns_resolution is a V100 fp32
    ResNet: the kernels are counted here from the raw events by their names."""
    import re

    conv = re.compile(r"scudnn|(dgrad|wgrad|fprop)\w*engine<float|winograd\w*<float|convolve\w*<float", re.I)
    half = re.compile(r"h884|h1688|s884|s1688|hmma|f16|bf16|tf32", re.I)
    kernels = [e for e in _raw_kernels("foreign/hta_ns_resolution") if conv.search(e["name"]) and not half.search(e["name"])]
    assert len(kernels) > 500
    f = analysis_of("foreign/hta_ns_resolution").finding(ID)
    assert f.record.conv_kernels >= len(kernels) * 0.9 and f.record.target == "fp16"
    # each convolution kernel is priced at most CONV_TENSOR_CORE_SPEEDUP faster, not at the ceilings' ratio
    conv_us = sum(float(e["dur"]) for e in kernels)
    assert f.record.saved_us <= f.record.gemm_us - conv_us / fp32_gemm.CONV_TENSOR_CORE_SPEEDUP * 0.99 + 1e-6


def test_fp32_convolutions_on_a_tf32_card_stay_cudnns(analysis_of):
    """The twin: on an H100 cuDNN runs fp32 convolutions in TF32 by default; a bf16 conv net's kernels are not
    fp32 at all."""
    assert analysis_of("savings/h100/cl_batchnorm__broken").finding(ID) is None
