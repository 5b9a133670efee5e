from __future__ import annotations

import statistics
from collections import defaultdict

import numpy as np
import pytest
import raw

from pista.analysis import analyze
from pista.i18n import localize_finding, rule_docs
from pista.rules import kernel_variability
from pista.rules.kernel_variability import ID, KV_P95_RATIO

# tests/fixtures/gpu/kernel_variability.py: 8 muls on a 64 MiB tensor per step, 6 active steps
# (2..7); in steps 3 and 6 a second stream runs large GEMMs at the same time
CONTENDED = {3, 6}


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_contended_kernel(load_facts):
    facts = load_facts("gpu/kernel_variability")
    trace = facts.trace
    (finding,) = _findings(load_facts, "gpu/kernel_variability")
    r = finding.record
    assert "vectorized_elementwise_kernel" in r.name and "MulFunctor" in r.name
    assert r.launch_config == "grid [32768,1,1] block [128,1,1]"
    assert r.input_dims == "[[4096, 8192], [], [4096, 8192]]" and r.launch == 0
    kernels = np.flatnonzero(facts.is_device_work & (trace.name_array[trace.name] == r.name))
    dur = trace.dur[kernels] / 1000
    assert r.calls == kernels.size == 48
    assert (r.min_us, r.max_us) == (dur.min(), dur.max())
    assert r.median_us == pytest.approx(np.median(dur))
    assert r.p95_us == pytest.approx(np.percentile(dur, 95))
    assert len(r.durations_us) == 48
    # the distribution, per step: the contended steps stand out, the others agree
    slow = {s for s, med in r.step_median_us.items() if med >= KV_P95_RATIO * r.median_us}
    assert slow == CONTENDED == set(r.slow_steps)
    # the evidence's slowest calls are from the contended steps and are real events
    real = {(trace.ts[i] / 1000, trace.dur[i] / 1000) for i in kernels}
    for ev in finding.evidence[:-1]:
        assert ev.step in CONTENDED and (ev.ts_us, ev.dur_us) in real
    assert finding.evidence[-1].step not in CONTENDED
    assert "steps 3, 6" in finding.advice


def test_impact_is_the_time_above_the_median_from_the_raw_events(load_facts):
    name = "gpu/kernel_variability"
    (finding,) = _findings(load_facts, name)
    muls = [float(k["dur"]) for k in raw.complete(name, "kernel") if "MulFunctor" in k["name"]]
    median = statistics.median(muls)
    per_step = sum(max(0.0, d - median) for d in muls) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=1e-6)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), rel=1e-4)
    # 40 µs of a step that lasts as long as its GPU work (the contended steps run a second stream)
    assert finding.severity.value == ("warning" if finding.impact.share >= 0.05 else "info")
    assert "upper bound" in finding.basis


@pytest.mark.parametrize("name", ["big_gpt_eager_20steps", "seed_mm4096_warm", "series_mlp_eager",
                                  "seed_mm4096_compile_cold", "gpu/cpu_only", "gpu/gpt_bf16_fused"])
def test_silent_on_steady_kernels(load_facts, name):
    assert _findings(load_facts, name) == []


def test_calls_whose_inputs_differ_are_not_compared(load_facts):
    # gpu/resnet50_bf16: each cuDNN convolution launches nhwcAddPaddingKernel twice with the same
    # grid, once on the weights (~2 µs) and once on the input (~86 µs): the same op call, different
    # tensors. Batch-norm kernels launched outside any op have no inputs to compare.
    name = "gpu/resnet50_bf16"
    per_call: dict[int, list[float]] = defaultdict(list)
    for k in raw.complete(name, "kernel"):
        if "nhwcAddPaddingKernel" in k["name"] and "External id" in k.get("args", {}):
            per_call[k["args"]["External id"]].append(float(k["dur"]))
    pairs = [sorted(d) for d in per_call.values() if len(d) == 2]
    assert pairs and all(d[1] > 20 * d[0] for d in pairs)  # the premise: two very different launches
    assert _findings(load_facts, name) == []


def test_silent_where_the_variation_costs_too_little_of_the_step(load_facts, monkeypatch):
    monkeypatch.setattr(kernel_variability, "KV_MIN_STEP_SHARE", 0.2)  # above its 9.9%
    assert _findings(load_facts, "gpu/kernel_variability") == []


def test_spanish_renders_every_field(load_facts):
    (finding,) = _findings(load_facts, "gpu/kernel_variability")
    es = localize_finding(finding, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(finding, part), part
    assert all(e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
    assert "Impacto:" in rule_docs(ID, "es")


# --- a first call, and collectives (review 4) ------------------------------------------------------------------

def _slowed(tmp_path, name: str, kernel: str, which: int, factor: float):
    """The trace with the `which`-th call (in time order) of the kernels named starting with `kernel` made `factor`
    times longer, and that call's (ts, dur) in µs."""
    import gzip
    import json

    data = json.loads(gzip.decompress((raw.FIXTURES / f"{name}.json.gz").read_bytes()))
    calls = sorted((e for e in data["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith(kernel)),
                   key=lambda e: float(e["ts"]))
    call = calls[which]
    call["dur"] = float(call["dur"]) * factor
    path = tmp_path / f"{which}.json"
    path.write_text(json.dumps(data))
    return path, (float(call["ts"]), float(call["dur"]))


GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"  # gpu/gpt_bf16_fused: 75 calls, median 87 µs


def test_a_kernels_first_call_slow_once_is_set_up_not_variability(tmp_path):
    # gpu/gpt_bf16_fused is steady (test_silent_on_steady_kernels); the window's first call of this GEMM (the LM
    # head's [8192, 8192] x [8192, 1024], once a step) made 10x slower, as a cold cache or a first launch makes it,
    # is one call paid once: nothing varies from call to call (it was a finding at 3.0% of the step)
    path, _ = _slowed(tmp_path, "gpu/gpt_bf16_fused", GEMM, 0, 10.0)
    assert analyze(path, rules=[ID]).findings == []


def test_the_same_slow_call_later_in_the_window_is_variability(tmp_path):
    # the twin: the same slowdown on a call in the middle of the window is a spread of the steady calls
    calls = [k for k in raw.complete("gpu/gpt_bf16_fused", "kernel") if k["name"].startswith(GEMM)]
    path, (ts, dur) = _slowed(tmp_path, "gpu/gpt_bf16_fused", GEMM, len(calls) // 2, 10.0)
    (finding,) = analyze(path, rules=[ID]).findings
    assert finding.record.name.startswith(GEMM)
    assert (finding.evidence[0].ts_us, finding.evidence[0].dur_us) == (pytest.approx(ts), pytest.approx(dur))


def test_a_collectives_spread_is_the_ranks_not_the_kernels():
    # tokenomics' rtx4090_tp2_llama_dim1024: the first reduce-scatter, NCCL connecting to its peer, takes 4.4x the
    # median of the 9 with the same inputs; a collective's time is its wait for the other rank plus the transfer,
    # which exposed-communication reads. Before: "look at what else runs ... clocks: nvidia-smi"
    name = "foreign/rtx4090_tp2_llama_dim1024"
    scatters = [float(k["dur"]) for k in sorted(raw.complete(name, "kernel"), key=lambda k: k["ts"])
                if k["name"].startswith("ncclDevKernel_ReduceScatter")]
    assert scatters[0] > 4 * statistics.median(scatters)
    assert analyze(raw.FIXTURES / f"{name}.json.gz", rules=[ID]).findings == []
