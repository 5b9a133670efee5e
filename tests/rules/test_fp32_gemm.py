from __future__ import annotations

import numpy as np
import pytest


def test_fires_on_the_fp32_matmul_with_tf32_off(analysis_of):
    analysis = analysis_of("gpu/fp32_gemm")
    finding = analysis.finding("fp32-gemm")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}))
    assert len(kernels) == 3  # one 4096^3 matmul per profiled step
    assert finding.metrics["kernels"] == 3 and finding.metrics["ops"] == ["aten::mm"]
    shown = [e for e in finding.evidence if e.lane.startswith("GPU")]
    assert {(e.name, e.ts_us, e.dur_us, e.step) for e in shown} == {
        (trace.event_name(i), trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in kernels}
    assert all("_ffma_" in e.name and "tf32" not in e.name for e in shown)
    ops = [e for e in finding.evidence if e.name == "aten::mm"]
    assert len(ops) == 3 and all("[[4096, 4096], [4096, 4096]]" in e.note for e in ops)
    # 2*4096^3 flops per kernel; the README's ceiling for fp32 with TF32 off is 51.2 TFLOP/s
    expected = 3 * 2 * 4096**3 / trace.dur[kernels].sum() / 1e3
    assert finding.metrics["tflops"] == pytest.approx(expected)
    assert 45 < finding.metrics["tflops"] < 55


def test_silent_with_tf32_on(analysis_of):
    # same matmul, set_float32_matmul_precision("high"): sm90_xmma_gemm_f32f32_tf32f32_f32 kernels
    assert analysis_of("gpu/tf32_gemm").finding("fp32-gemm") is None


@pytest.mark.parametrize("name", ["seed_mm4096_warm", "series_linear_train", "gpu/recompile", "gpu/cpu_only"])
def test_silent_on_bf16_negligible_or_cpu_gemms(analysis_of, name):
    # bf16 nvjet kernels; gpu/recompile has two tiny fp32 SIMT GEMMs (14 µs of 19 ms of GPU time)
    assert analysis_of(name).finding("fp32-gemm") is None
