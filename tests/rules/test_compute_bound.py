from __future__ import annotations


def test_fires_on_the_warm_4096_matmul_add(analysis_of):
    analysis = analysis_of("seed_mm4096_warm")
    finding = analysis.finding("compute-bound")
    assert finding is not None
    assert finding.metrics["gpu_busy_percent"] >= 60
    # evidence: the GEMM kernels, longest first
    assert all(e.name.startswith("nvjet_") for e in finding.evidence)
    assert [e.dur_us for e in finding.evidence] == sorted((e.dur_us for e in finding.evidence), reverse=True)
    assert {e.step for e in finding.evidence} == {2, 3, 4}


def test_fires_on_a_full_fp32_gemm(analysis_of):
    assert analysis_of("gpu/fp32_gemm").finding("compute-bound") is not None


def test_silent_when_host_bound_or_cpu_only(analysis_of):
    for name in ("seed_mm64_warm", "gpu/launch_bound", "gpu/cpu_only"):
        assert analysis_of(name).finding("compute-bound") is None, name
