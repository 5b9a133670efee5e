from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import raw
from conftest import FIXTURES

from pista.analysis import analyze

RULE = "gemm-alignment"
NAME = "gpu/gpt2_conv1d"
VOCAB = 50257


def _in_steps(e: dict) -> bool:
    return any(float(s["ts"]) <= float(e["ts"]) < float(s["ts"]) + float(s["dur"]) for s in raw.steps(NAME))


def _kernels_under(op: dict) -> list[dict]:
    kernels = {k["args"]["correlation"]: k for k in raw.complete(NAME, "kernel") if "correlation" in k.get("args", {})}
    return [kernels[c["args"]["correlation"]] for c in raw.complete(NAME)
            if c.get("cat") in ("cuda_runtime", "cuda_driver") and c.get("args", {}).get("correlation") in kernels
            and raw.inside(op, c)]


def _mm_calls(misaligned: bool) -> list[tuple[dict, dict, float]]:
    """The bf16 aten::mm/addmm calls in the steps, with their kernel and FLOPs (2 M N K), on the vocabulary's
    dimension or on aligned ones."""
    out = []
    for op in raw.complete(NAME, "cpu_op"):
        if op["name"] not in ("aten::mm", "aten::addmm") or not _in_steps(op):
            continue
        dims = op["args"]["Input Dims"]
        first = 1 if op["name"] == "aten::addmm" else 0  # addmm(bias, a, b)
        a, b = dims[first], dims[first + 1]
        types = op["args"]["Input type"][first:first + 2]
        # both matrices bf16 (an outer autocast addmm records its fp32 weight: its dtype is not told)
        if not all("BFloat16" in t for t in types) or (VOCAB in a + b) != misaligned:
            continue
        if any(d % 8 for d in a + b) and not misaligned:
            continue
        kernel = max(_kernels_under(op), key=lambda k: float(k["dur"]))  # the GEMM, not a bias copy beside it
        out.append((op, kernel, 2.0 * a[0] * a[1] * b[1]))
    return out


def test_the_lm_head_on_an_odd_vocabulary_runs_on_fallback_kernels(analysis_of):
    finding = analysis_of(NAME).finding(RULE)
    r = finding.record
    odd = _mm_calls(misaligned=True)
    steps = len(raw.steps(NAME))
    assert r.odd == (VOCAB,) and r.calls == len(odd) == 3 * steps
    assert r.kernel_us == pytest.approx(sum(float(k["dur"]) for _, k, _ in odd) / steps, rel=1e-6)
    assert all("cutlass_75" in k["name"] for _, k, _ in odd)
    aligned = _mm_calls(misaligned=False)
    reference = sum(f for _, _, f in aligned) / sum(float(k["dur"]) for _, k, _ in aligned) / 1e6  # TFLOP/s
    assert r.reference_tflops == pytest.approx(reference, rel=1e-3)
    saved = sum(float(k["dur"]) - f / reference / 1e6 for _, k, f in odd) / steps
    assert r.gpu_saved_us == pytest.approx(saved, rel=1e-3)
    assert all(g.tflops < 0.25 * reference for g in r.groups)
    assert "50304" in finding.fix and "50304" in finding.advice


def test_a_host_bound_step_hides_most_of_the_gpu_time_saved(analysis_of):
    # the GPU is busy ~30% of this profiled window: padding's 6.4 ms of GPU time count for that share
    # (unprofiled, padding took 22.08 -> 20.61 ms: the step turned host-bound)
    finding = analysis_of(NAME).finding(RULE)
    r = finding.record
    steps = raw.steps(NAME)
    lo, hi = float(steps[0]["ts"]), max(float(s["ts"]) + float(s["dur"]) for s in steps)
    busy = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in raw.busy_intervals(NAME)) / (hi - lo)
    assert r.busy_percent == pytest.approx(100 * busy, abs=2.0) and r.busy_percent < 50
    assert finding.impact.us == pytest.approx(r.gpu_saved_us * r.busy_percent / 100, rel=1e-3)
    assert finding.severity.value == "info"


OTHERS = sorted(str(p.relative_to(FIXTURES)).removesuffix(".json.gz")
                for p in [*FIXTURES.glob("*.json.gz"), *FIXTURES.glob("gpu/*.json.gz")])


@pytest.mark.parametrize("name", [n for n in OTHERS if n != NAME])
def test_silent_on_aligned_or_unrated_gemms(name):
    # gpu/gemm_new_shapes' M=7777 runs as fast as its aligned sizes; the CPU traces' GEMMs are fp32
    assert analyze(FIXTURES / f"{name}.json.gz", rules=[RULE]).finding(RULE) is None


# -- a sequence length is no vocabulary (issue 35, review 3) --------------------------------------------------

TIMESFORMER = "foreign/tl_h100_timesformer"
OWLV2 = Path(os.environ.get("PISTA_FOREIGN_HELDOUT", "/work/foreign_traces/heldout")) / "tl_h100_owlv2.json.gz"


def _attention_bmms(name: str) -> list[dict]:
    """The steps' bf16 aten::bmm calls whose two matrices share a dimension twice among M, N and K (q @ k^T is
    T x d by d x T, scores @ v is T x T by T x d), from the raw events."""
    out = []
    for op in raw.complete(name, "cpu_op", "aten::bmm"):
        (b, m, k), (_, k2, n) = op["args"]["Input Dims"][:2]
        if [m, n, k].count(m) >= 2 or [m, n, k].count(n) >= 2:
            out.append(op)
    return out


def test_the_attentions_bmm_over_tokens_is_left_to_manual_attention(analysis_of):
    # timesformer's spatial attention runs bmm over 3137 tokens (1 + 196 x 16) on fallback kernels: SDPA, which
    # manual-attention advises, removes them; "pad 3137 to 3200 ... for a vocabulary" was the advice
    assert any(op["args"]["Input Dims"][0][1:] == [3137, 64] for op in _attention_bmms(TIMESFORMER))
    analysis = analysis_of(TIMESFORMER)
    assert analysis.finding("manual-attention") is not None
    assert analysis.finding(RULE) is None


def test_owlv2_s_attention_is_left_to_manual_attention():
    if not OWLV2.exists():
        pytest.skip(f"{OWLV2} is not on this machine")
    analysis = analyze(OWLV2, rules=[RULE, "manual-attention"], replay=False)
    assert analysis.finding("manual-attention") is not None and analysis.finding(RULE) is None


def test_a_sequence_length_is_padded_as_a_sequence(monkeypatch):
    # the same bmm where no written-out attention claims it: the odd dimension is a sequence length, padded
    # to a multiple of 8 (3144: 0.2% more tokens), never "a vocabulary"
    from pista.rules import gemm_alignment

    monkeypatch.setattr(gemm_alignment, "matmul_kernels", lambda facts: np.empty(0, np.int64))
    finding = analyze(FIXTURES / f"{TIMESFORMER}.json.gz", rules=[RULE], replay=False).finding(RULE)
    r = finding.record
    assert r.odd[0] == 3137 and 3137 in r.sequence and r.pad_to == 3144
    assert "sequence" in finding.advice and "vocabulary" not in finding.advice
    assert "pad_to_multiple_of=8" in finding.advice and "scaled_dot_product_attention" in finding.advice
    assert "3144" in finding.fix and "vocabulary" not in finding.fix
    from pista.i18n import localize_finding

    es = localize_finding(finding, "es")
    assert "longitud de secuencia" in es.advice and "vocabulario" not in es.advice


def test_padding_a_sequence_that_costs_more_than_it_gives_back_is_not_advised(monkeypatch):
    # pad_loader_eager_infer's fixed twin pads each batch to its longest row: 97 and 100 tokens. Padding 100 to
    # 104 adds 4% to every token's work, more GPU time than the 100-token bmm's whole kernel time
    from pista.rules import gemm_alignment

    name = "savings/h100/pad_loader_eager_infer__fixed"
    monkeypatch.setattr(gemm_alignment, "matmul_kernels", lambda facts: np.empty(0, np.int64))
    r = analyze(FIXTURES / f"{name}.json.gz", rules=[RULE], replay=False).finding(RULE).record
    kernels = {k["args"]["External id"]: k for k in raw.complete(name, "kernel") if "External id" in k.get("args", {})}
    on_100 = sum(float(kernels[op["args"]["External id"]]["dur"]) for op in _attention_bmms(name)
                 if 100 in op["args"]["Input Dims"][0] and op["args"]["External id"] in kernels)
    device = sum(float(k["dur"]) for k in raw.device_work(name) if raw.launched_at(name, k) >= 0)
    assert 0 < on_100 < (104 / 100 - 1) * device
    assert 100 not in r.odd and r.odd == (97,) and r.pad_to == 104
    # and where manual-attention claims the bmm, as it does there, nothing is left
    monkeypatch.undo()
    assert analyze(FIXTURES / f"{name}.json.gz", rules=[RULE], replay=False).finding(RULE) is None


def test_a_vocabulary_is_still_a_vocabulary(analysis_of):
    finding = analysis_of("savings/h100/align_vocab__broken").finding(RULE)
    assert finding.record.sequence == () and finding.record.pad_to == 50304
    assert "vocabulary" in finding.advice and "50304" in finding.fix
