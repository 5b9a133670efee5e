"""manual-attention on the H200 attention twins (tests/fixtures/gpu/README.md)."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest
import raw

from pista.i18n import localize_finding

RULE = "manual-attention"
# unprofiled median steps (ms), written-out attention against F.scaled_dot_product_attention
UNPROFILED = {"gpu/attn_manual": (37.31, 17.40), "gpu/attn_hf_eager": (36.06, 23.08)}


def _between_matmuls(name: str) -> list[dict]:
    """Per attention, the outermost ops of the main thread between the matmul before a softmax and the
    matmul after it."""
    from rules.test_tanh_gelu import _outer_ops

    ops = _outer_ops(name)
    out = []
    for k, e in enumerate(ops):
        if e["name"] != "aten::softmax":
            continue
        lo = max(j for j in range(k - 5, k) if ops[j]["name"] == "aten::matmul")
        hi = min(j for j in range(k + 1, k + 4) if ops[j]["name"] == "aten::matmul")
        out += ops[lo + 1:hi]
    return out


@pytest.mark.parametrize("name", sorted(UNPROFILED))
def test_counts_the_kernels_between_the_attention_s_matmuls(analysis_of, name):
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    r = finding.record
    steps = len(raw.steps(name))
    assert r.layers_per_step == 6 and r.score_shape == (8, 12, 1024, 1024)
    # forward: the kernels launched under the ops between the matmuls (by External id, children included)
    ops = _between_matmuls(name)
    ids = {c["args"]["External id"] for e in ops for c in raw.complete(name, "cpu_op")
           if raw.inside(e, c) and "External id" in c.get("args", {})}
    kernels = [k for k in raw.device_work(name) if k.get("args", {}).get("External id") in ids]
    assert r.forward_us == pytest.approx(sum(float(k["dur"]) for k in kernels) / steps, rel=0.01)
    assert r.backward_us > 0.5 * r.forward_us  # their backward nodes pass over the scores again
    assert finding.impact.us == pytest.approx(r.gpu_saved_us * r.busy_percent / 100, rel=1e-6)


@pytest.mark.parametrize("name", sorted(UNPROFILED))
def test_the_saving_is_within_what_sdpa_saved_unprofiled(analysis_of, name):
    manual, sdpa = UNPROFILED[name]
    impact = analysis_of(name).finding(RULE).impact.us / 1000
    assert 0.6 * (manual - sdpa) <= impact <= manual - sdpa  # 15.2 of 19.9 ms; 8.8 of 13.0 ms
    assert analysis_of(name).top_fix.rule == RULE


@pytest.mark.parametrize("name", ["gpu/attn_sdpa", "big_gpt_eager_20steps", "gpu/gpt2_conv1d", "gpu/kv_flash",
                                  "gpu/capture_transformer", "gpu/resnet50_bf16", "gpu/cpu_transformer"])
def test_silent_with_fused_attention_or_none(analysis_of, name):
    assert analysis_of(name).finding(RULE) is None


def test_spanish_names_the_change(analysis_of):
    finding = localize_finding(analysis_of("gpu/attn_manual").finding(RULE), "es")
    assert "scaled_dot_product_attention" in finding.fix and "puntuaciones" in finding.message


def test_unfused_elementwise_leaves_the_scores_passes_to_it(analysis_of):
    # gpu/attn_manual: the scores' dropout backward > mul chain was told twice (4.1% there)
    from pista.rules._attention import score_kernels

    analysis = analysis_of("gpu/attn_manual")
    scores = set(score_kernels(analysis.facts).tolist())
    assert scores
    assert analysis.finding("unfused-elementwise") is None  # its one chain was the scores' (dropout backward > mul)


@pytest.mark.parametrize("name", ["gpu/attn_manual", "gpu/attn_hf_eager"])
def test_the_call_given_follows_the_mask_the_trace_shows(analysis_of, name):
    """A mask applied between the matmuls (masked_fill, an added mask) may be causal or padding: the advice gives
    both calls, not is_causal=True alone (issue 35: OWLv2's and TimeSformer's encoders were told is_causal=True)."""
    f = analysis_of(name).finding(RULE)
    ops = {e["name"] for e in raw.complete(name, "cpu_op")}
    assert ops & {"aten::masked_fill", "aten::masked_fill_", "aten::add", "aten::where"}
    assert "is_causal=True) for a causal" in f.advice and "attn_mask=mask" in f.advice
    no_mask = dataclasses.replace(f, record=msgspec.structs.replace(f.record, ops=("aten::mul", "aten::softmax")))
    assert "is_causal" not in localize_finding(no_mask, "en").advice
