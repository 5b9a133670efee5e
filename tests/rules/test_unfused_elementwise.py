from __future__ import annotations

import raw

RULE = "unfused-elementwise"
CHAIN = ("aten::mul", "aten::add", "aten::clamp_min", "aten::mul", "aten::sigmoid", "aten::sub")




def _chain_kernels(name: str) -> list[list[dict]]:
    """Per `chain` region: the kernels its ops launched (by correlation id), in stream order."""
    kernels = {k["args"]["correlation"]: k for k in raw.complete(name, "kernel") if "correlation" in k.get("args", {})}
    out = []
    for region in raw.complete(name, "user_annotation", "chain"):
        launched = [kernels[c["args"]["correlation"]] for c in raw.complete(name)
                    if c.get("cat") in ("cuda_runtime", "cuda_driver")
                    and c.get("args", {}).get("correlation") in kernels and raw.inside(region, c)]
        out.append(sorted(launched, key=lambda k: k["ts"]))
    return out


def test_fires_on_six_eager_ops_over_one_tensor(analysis_of):
    finding = analysis_of("gpu/elementwise_chain").finding(RULE)
    assert finding is not None
    (chain,) = finding.record.chains
    assert chain.ops == CHAIN and chain.shape == (64 * 1024 * 1024,) and chain.dtype == "float" and chain.count == 3
    assert finding.record.ceiling_source == "measured" and finding.record.ceiling_tbps == 4.27
    assert "torch.compile" in finding.fix and "mul > add > clamp_min > mul > sigmoid > sub" in finding.fix
    assert len(finding.evidence) == 12  # two chains of six kernels


def test_kernels_stream_at_the_bandwidth_limit(analysis_of):
    # bytes: each op reads its full-size tensor inputs and writes one, 4 bytes an element
    finding = analysis_of("gpu/elementwise_chain").finding(RULE)
    numel = 64 * 1024 * 1024
    moved = ns = 0.0
    for kernels in _chain_kernels("gpu/elementwise_chain"):
        assert len(kernels) == 6
        for k, p in zip(kernels, (2, 2, 2, 3, 2, 2), strict=True):  # the second mul is x * y
            moved += numel * 4 * p
            ns += float(k["dur"]) * 1000.0
    tbps = moved / ns / 1e3
    assert 4.0 <= tbps <= 4.4  # the H200's measured 4.27 TB/s
    assert abs(finding.record.chains[0].tbps - tbps) <= 0.01 * tbps


def test_impact_is_the_passes_fusion_saves(analysis_of):
    name = "gpu/elementwise_chain"
    finding = analysis_of(name).finding(RULE)
    chains = _chain_kernels(name)
    steps = len(raw.steps(name))
    per_step = sum(sum(float(k["dur"]) for k in ks) * (len(ks) - 1) / len(ks) for ks in chains) / steps
    assert abs(finding.impact.us - per_step) <= 0.01 * per_step
    assert abs(finding.impact.share - per_step / raw.step_us(name)) <= 0.002
    assert finding.severity.value == "critical"
    assert "upper bound" in finding.basis


def test_silent_on_one_kernel_or_tiny_ones(analysis_of):
    # compiled: one Triton kernel; one streaming kernel; one add after a GEMM (unfused-epilogue's);
    # 256-element ops far from the bandwidth (launch-bound's)
    for name in ("gpu/elementwise_compiled", "gpu/stream_fp32", "seed_mm4096_warm", "gpu/launch_bound",
                 "gpu/bias_unfused", "series_mlp_compile", "gpu/cpu_only"):
        assert analysis_of(name).finding(RULE) is None, name


def test_info_on_two_small_muls(analysis_of):
    # series_linear_train: PowBackward0's two muls on 4096x4096 fp32, 2.1% of the step
    finding = analysis_of("series_linear_train").finding(RULE)
    assert finding is not None and finding.severity.value == "info"
    assert finding.record.chains[0].ops == ("aten::mul", "aten::mul")


def test_spanish(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("gpu/elementwise_chain").finding(RULE), "es")
    assert "torch.compile" in finding.fix and "medido en la H200 SXM" in finding.message


def test_gelu_s_tanh_formula_gets_its_one_line_fix(analysis_of):
    # gpu/gpt2_conv1d: transformers' gelu_new under autocast runs as fp32 mul/pow/tanh passes, forward and
    # backward; F.gelu(approximate='tanh') is the fix, not "torch.compile the module"
    import raw

    from rules.test_tanh_gelu import _chains

    name = "gpu/gpt2_conv1d"
    finding = analysis_of(name).finding("unfused-elementwise")
    launched = {e["args"]["External id"] for c in _chains(name) for e in c}
    forward = sum(float(k["dur"]) for k in raw.complete(name, "kernel")
                  if k["args"].get("External id") in launched) / len(raw.steps(name))
    assert forward > 0
    assert finding.record.tanh_gelu_percent >= 20.0
    assert "approximate='tanh'" in finding.advice and "gelu_pytorch_tanh" in finding.advice
    assert analysis_of("gpu/elementwise_chain").finding("unfused-elementwise").record.tanh_gelu_percent == 0
