from __future__ import annotations

import pytest
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


# -- elementwise code written out op by op (issue 35, review 3: the qwen05 silences) ------------------------

# the ops Qwen2's RMSNorm and rotary embedding are written with, which the model runs nowhere else
NORM_OPS = {"aten::pow", "aten::mean", "aten::rsqrt"}
ROTARY_OPS = {"aten::neg", "aten::cat"}
PRIMITIVE = {"aten::" + n for n in ("add", "mul", "copy_", "pow", "mean", "rsqrt", "neg", "cat", "silu", "cos", "sin")}


def _kernel_us_by_op(name: str) -> dict[str, float]:
    """µs of kernel time per launching op name, inside the steps, from the raw events (External id)."""
    step = raw.steps(name)
    lo, hi = float(step[0]["ts"]), float(step[-1]["ts"]) + float(step[-1]["dur"])
    ops = {e["args"]["External id"]: e["name"] for e in raw.complete(name, "cpu_op")
           if "External id" in e.get("args", {}) and lo <= float(e["ts"]) < hi}
    out: dict[str, float] = {}
    for k in raw.complete(name, "kernel"):
        op = ops.get(k.get("args", {}).get("External id"))
        if op is not None:
            out[op] = out.get(op, 0.0) + float(k["dur"])
    return out


def _ops_in_steps(name: str, op: str) -> int:
    step = raw.steps(name)
    lo, hi = float(step[0]["ts"]), float(step[-1]["ts"]) + float(step[-1]["dur"])
    return sum(1 for e in raw.complete(name, "cpu_op", op) if lo <= float(e["ts"]) < hi)


@pytest.mark.parametrize("name", ["foreign/tl_h100_qwen05", "foreign/tl_mi300_qwen05"])
def test_rmsnorm_and_rotary_written_out_are_named_with_their_modules(analysis_of, name):
    from pista.rules.unfused_elementwise import WrittenOut

    finding = analysis_of(name).finding(RULE)
    r = finding.record
    assert isinstance(r, WrittenOut)
    runs = {u.idiom: u for u in r.runs}
    # one RMSNorm run per aten::pow (2 per layer and the final norm), one rotary run per layer (q's neg and k's)
    assert runs["rmsnorm"].count == _ops_in_steps(name, "aten::pow") == 49
    assert runs["rotary"].count == _ops_in_steps(name, "aten::neg") // 2 == 24
    assert runs["rmsnorm"].module == "Qwen2RMSNorm" and runs["rotary"].module == "Qwen2Attention"
    assert runs["rotary"].frame.endswith("apply_rotary_pos_emb")
    assert runs["rmsnorm"].ops[-7:] == ("aten::copy_", "aten::pow", "aten::mean", "aten::add", "aten::rsqrt",
                                        "aten::mul", "aten::copy_", "aten::mul")[-7:]
    # the runs hold every kernel of the ops only the norm and the rotary run, and only primitive ops' kernels
    by_op = _kernel_us_by_op(name)
    assert sum(by_op.get(o, 0.0) for o in NORM_OPS | ROTARY_OPS) <= r.runs_us <= sum(by_op.get(o, 0.0) for o in PRIMITIVE)
    assert r.gpu_share_percent >= 10.0 and r.eager_percent > r.gpu_share_percent
    # fused is one pass per run, not nothing: the kernels shrink, none is removed
    assert 0 < r.fused_us < r.runs_us and r.saving_us == pytest.approx(r.runs_us - r.fused_us, rel=1e-6)
    kernels, durations = finding.edit.device_dur
    assert finding.edit.remove.size == 0 and (durations > 0).all()
    assert durations.sum() / 1000.0 == pytest.approx(r.fused_us * r.steps, rel=0.01)
    assert finding.severity.value == "critical"  # 23-31% of the step: the GEMMs are not the cost
    text = finding.message + finding.advice
    assert "Qwen2RMSNorm" in text and "F.rms_norm" in finding.advice and "rotary" in finding.advice
    assert "torch.compile" in finding.fix


def test_written_out_replayed_saving_on_qwen05(load_facts):
    # the engine replays the shrunk kernels: on the H100 trace it predicts 14.4 ms a step (29.7%); the same
    # model's shapes measured on an H100 (torch 2.11, random weights): 29.9 ms eager, 18.2 ms compiled (-39%)
    from pista.analysis import analyze

    analysis = analyze(load_facts("foreign/tl_h100_qwen05"))
    finding = analysis.finding(RULE)
    assert analysis.top_fix.rule == RULE
    assert 0.2 <= finding.impact.rank_share <= 0.39 * 1.5


@pytest.mark.parametrize("name", ["savings/h100/healthy_gpt_bf16__broken", "savings/h100/healthy_resnet_cl__broken",
                                  "savings/h100/healthy_mlp_large__broken", "savings/h100/healthy_compiled_bf16__broken",
                                  "gpu/gpt_bf16_fused", "gpu/resnet50_bf16", "big_gpt_eager_20steps",
                                  "savings/h100/optim_manual_sgd__broken", "savings/h100/autocast_train_small__broken"])
def test_no_written_out_runs_in_native_ops_loops_or_casts(analysis_of, name):
    # eager models of native fused ops (layer_norm, gelu, batch_norm) are one pass per op; a per-parameter update
    # (mul_ > add_ > add_ 13 times) and gradients cast one by one are other rules' causes
    from pista.rules.unfused_elementwise import WrittenOut

    finding = analysis_of(name).finding(RULE)
    assert finding is None or not isinstance(finding.record, WrittenOut), name


def test_a_chain_that_is_the_whole_run_stays_a_chain(analysis_of):
    # gpu/elementwise_chain's six ops on one tensor are both; the chain's reading is kept as it was
    from pista.rules.unfused_elementwise import UnfusedElementwise

    assert isinstance(analysis_of("gpu/elementwise_chain").finding(RULE).record, UnfusedElementwise)


def test_the_elementwise_rmsnorm_pair(analysis_of):
    # savings/h100/elementwise_rmsnorm (Llama-style RMSNorm and SwiGLU written out; measured 39.9% by compile)
    from conftest import FIXTURES

    from pista.rules.unfused_elementwise import WrittenOut

    if not (FIXTURES / "savings/h100/elementwise_rmsnorm__broken.json.gz").exists():
        pytest.skip("the pair's H100 traces are not captured in this checkout")
    r = analysis_of("savings/h100/elementwise_rmsnorm__broken").finding(RULE).record
    assert isinstance(r, WrittenOut) and {u.idiom for u in r.runs} == {"rmsnorm", "gate"}
    assert {u.module for u in r.runs} == {"LlamaMLPBlock"}
    assert {u.frame.split(": ")[-1] for u in r.runs} == {"rms_norm_manual", "swiglu_manual"}
    assert 0.2 <= r.step_share_percent / 100 <= 0.399 * 1.5
    assert analysis_of("savings/h100/elementwise_rmsnorm__fixed").finding(RULE) is None


def test_written_out_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("foreign/tl_h100_qwen05").finding(RULE), "es")
    assert "escrito operación a operación" in finding.message and "embedding rotatorio" in finding.message
    assert "F.rms_norm" in finding.advice and "Compila el modelo" in finding.advice
    assert "en un tramo escrito" in finding.evidence[0].note
