from __future__ import annotations

import pytest
import raw
from conftest import FIXTURES

from pista.findings import analyze

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
