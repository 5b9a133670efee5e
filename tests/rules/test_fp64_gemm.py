from __future__ import annotations

import raw

# H200 ceilings (shared/traces/README.md, measured 2026-12-03): TF32 355.2 TFLOP/s
TF32_CEILING = 355.2


def test_fires_on_a_double_precision_matmul(analysis_of):
    name = "gpu/fp64_gemm"
    finding = analysis_of(name).finding("fp64-gemm")
    assert finding is not None
    kernels = [k for k in raw.complete(name, "kernel") if "f64f64" in k["name"]]
    steps = raw.steps(name)
    lo, hi = float(steps[0]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"]) + 1e5
    calls = [k for k in kernels if lo <= float(k["ts"]) < hi]
    flops = 2 * 4096 ** 3  # the capture script's 4096^3 matmul
    saved = sum(float(k["dur"]) - flops / (TF32_CEILING * 1e6) for k in calls) / len(steps)
    assert abs(finding.impact.us - saved) <= 0.01 * saved
    assert abs(finding.record.tflops - flops * len(calls) / sum(float(k["dur"]) for k in calls) / 1e6) < 0.5
    assert finding.record.target == "tf32" and finding.severity.value == "critical"
    assert "float32" in finding.fix


def test_silent_without_fp64(analysis_of):
    for name in ("gpu/fp32_gemm", "gpu/tf32_gemm", "seed_mm4096_warm", "gpu/cpu_only"):
        assert analysis_of(name).finding("fp64-gemm") is None
