from __future__ import annotations

import raw

RULE = "autocast-casts"


def _in_steps(name: str, e: dict) -> bool:
    """Within a step's time span (the backward runs on the autograd thread, not the step's)."""
    return any(float(s["ts"]) <= float(e["ts"]) < float(s["ts"]) + float(s["dur"]) for s in raw.steps(name))


def _launched_under(name: str, outer: dict, kernels: dict) -> list[dict]:
    """Kernels (by correlation id) launched by runtime calls inside `outer`."""
    return [kernels[c["args"]["correlation"]] for c in raw.complete(name)
            if c.get("cat") in ("cuda_runtime", "cuda_driver") and c.get("args", {}).get("correlation") in kernels
            and raw.inside(outer, c)]


def _weight_casts(name: str) -> tuple[list[dict], list[dict], list[dict]]:
    """Forward weight-cast kernels (an aten::_to_copy inside an aten::linear, of the linear's weight or
    bias shape), backward ones (ToCopyBackward0 with the same autograd sequence number), and the host
    ops that dispatched them (the aten::to around each forward _to_copy, each ToCopyBackward0)."""
    kernels = {k["args"]["correlation"]: k for k in raw.complete(name, "kernel") if "correlation" in k.get("args", {})}
    linears = [e for e in raw.complete(name, "cpu_op", "aten::linear") if _in_steps(name, e)]
    tos = raw.complete(name, "cpu_op", "aten::to")
    forward, seqs, ops = [], set(), []
    for copy in raw.complete(name, "cpu_op", "aten::_to_copy"):
        outer = [lin for lin in linears if raw.inside(lin, copy)]
        if not outer:
            continue
        shape = copy["args"]["Input Dims"][0]
        if any(shape in lin["args"]["Input Dims"][1:] for lin in outer):
            forward += _launched_under(name, copy, kernels)
            seqs.add(copy["args"]["Sequence number"])
            ops += [to for to in tos if raw.inside(to, copy) and any(raw.inside(lin, to) for lin in outer)]
    backward = []
    for node in raw.complete(name, "cpu_op", "ToCopyBackward0"):
        if node["args"].get("Sequence number") in seqs and _in_steps(name, node):
            backward += _launched_under(name, node, kernels)
            ops.append(node)
    return forward, backward, ops


def _exposed_us(name: str, op: dict) -> float:
    lo, hi = float(op["ts"]), float(op["ts"]) + float(op["dur"])
    return (hi - lo) - sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in raw.busy_intervals(name))


def test_fires_on_fp32_weights_under_autocast(analysis_of):
    for name in ("gpu/gpt_autocast", "big_gpt_eager_20steps", "series_mlp_eager"):
        finding = analysis_of(name).finding(RULE)
        assert finding is not None, name
        r = finding.record
        assert (r.source_dtype, r.target_dtype, r.ops) == ("float", "c10::BFloat16", ("aten::linear",))
        assert "model.to(torch.bfloat16)" in finding.advice and "master" in finding.fix
        assert {e.name for e in finding.evidence} == {"aten::_to_copy", "ToCopyBackward0"}


def test_counts_the_weights_of_the_gpt(analysis_of):
    # 6 blocks x (qkv, proj, fc, out) x (weight, bias) + the head's weight and bias; each cast
    # forward and its gradient cast back
    r = analysis_of("gpu/gpt_autocast").finding(RULE).record
    assert r.weights == 6 * 4 * 2 + 2 and r.casts_per_step == 2 * r.weights
    # the activation casts and the loss's .float() are counted apart
    assert r.other_cast_us > 0 and abs(r.cast_us - r.weight_us - r.other_cast_us) < 0.01


def test_an_addmm_s_input_is_no_weight(analysis_of):
    # gpu/gpt2_conv1d: transformers' GPT-2 (6 blocks, d=768, vocab 50257, batch 8 x 512 tokens), whose
    # Conv1D layers are addmm(bias, x, w): x, the activation, is the second argument, not a weight
    name = "gpu/gpt2_conv1d"
    r = analysis_of(name).finding(RULE).record
    d, vocab, blocks = 768, 50257, 6
    params = {(d, 3 * d), (3 * d,), (d, d), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (vocab, d)}
    assert {s.shape for s in r.shapes} <= params
    tokens = 8 * 512
    addmm_inputs = {tuple(e["args"]["Input Dims"][1]) for e in raw.complete(name, "cpu_op", "aten::addmm")}
    assert addmm_inputs and all(shape[0] == tokens for shape in addmm_inputs)
    assert not addmm_inputs & {s.shape for s in r.shapes}
    # each block's 4 Conv1D weights and biases, its 2 LayerNorms' are not GEMM arguments; the head's weight
    assert r.weights == blocks * 4 * 2 + 1
    assert set(r.ops) == {"aten::addmm", "aten::linear"}


def test_impact_is_the_weight_casts_kernel_and_exposed_host_time(analysis_of):
    name = "gpu/gpt_autocast"
    finding = analysis_of(name).finding(RULE)
    forward, backward, ops = _weight_casts(name)
    steps = len(raw.steps(name))
    assert len(forward) == len(backward) == 50 * steps and len(ops) == 2 * 50 * steps
    kernels = sum(float(k["dur"]) for k in forward + backward) / steps
    exposed = sum(_exposed_us(name, op) for op in ops) / steps
    # the kernels count at the GPU's busy share of the window: a host-bound step hides the rest
    s = raw.steps(name)
    lo, hi = float(s[0]["ts"]), float(s[-1]["ts"]) + float(s[-1]["dur"])
    busy = raw.total(raw.intersect(raw.busy_intervals(name), [(lo, hi)])) / (hi - lo)
    per_step = kernels * busy + exposed
    assert abs(finding.record.weight_us - kernels) <= 0.01 * kernels
    assert abs(finding.record.exposed_host_us - exposed) <= 0.01 * exposed
    assert abs(finding.record.host_us - sum(float(op["dur"]) for op in ops) / steps) <= 0.01 * exposed
    assert abs(finding.record.forward_us - sum(float(k["dur"]) for k in forward) / steps) <= 0.01 * kernels
    assert abs(finding.impact.us - per_step) <= 0.01 * per_step
    assert abs(finding.impact.share - per_step / raw.step_us(name)) <= 0.002
    assert finding.severity.value == "warning"  # 8.1% of a host-bound 25 ms step, most of it dispatch
    # not an upper bound: REVIEW.md's GPT saved 3.0 ms a step with bf16 parameters, its casts 0.85 ms
    assert "the casts alone" in finding.basis and "upper bound" not in finding.basis


def test_silent_with_bf16_weights_or_without_autocast(analysis_of):
    # gpt_bf16_fused casts only the loss (.float() of the logits); series_linear_train's one
    # explicit .to() per step is not autocast's; the seeds cast nothing
    for name in ("gpu/gpt_bf16_fused", "series_linear_train", "gpu/resnet50_bf16", "seed_mm4096_warm",
                 "seed_mm64_warm", "seed_mm4096_compile", "gpu/cpu_only"):
        assert analysis_of(name).finding(RULE) is None, name


def test_spanish(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("gpu/gpt_autocast").finding(RULE), "es")
    assert "copia maestra fp32" in finding.fix and "por paso" in finding.message
