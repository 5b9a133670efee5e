from __future__ import annotations

import json
import statistics

import pytest
import raw

from pista.analysis import analyze
from pista.rules._cudnn import SETUP_MIN_US
from pista.rules.cudnn_setup import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "cudnn-setup", "lazy-loading"]
ATTENTION = "aten::_scaled_dot_product_cudnn_attention"


def _findings(load_facts, name, rules=(ID,)):
    return analyze(load_facts(name), rules=list(rules)).findings


def _idle_us(busy, a: float, b: float) -> float:
    return (b - a) - sum(max(0.0, min(b, t) - max(a, s)) for s, t in busy)


def _in_steps(name: str, e: dict) -> bool:
    return any(float(s["ts"]) <= float(e["ts"]) < float(s["ts"]) + float(s["dur"]) for s in raw.steps(name))


def _step_of(name: str, e: dict) -> int:
    (step,) = [int(s["name"].split("#")[1]) for s in raw.steps(name)
               if float(s["ts"]) <= float(e["ts"]) < float(s["ts"]) + float(s["dur"])]
    return step


def _attention_calls(name: str) -> tuple[list[dict], list[dict]]:
    """SDPA's cuDNN calls in the steps, (slow, the others): slow ones hold the GPU idle 500 µs or more."""
    busy = raw.busy_intervals(name)
    calls = [e for e in raw.complete(name, "cpu_op", ATTENTION) if _in_steps(name, e)]
    slow = [e for e in calls if _idle_us(busy, float(e["ts"]), float(e["ts"]) + float(e["dur"])) >= SETUP_MIN_US]
    return slow, [e for e in calls if e not in slow]


def test_decoding_with_a_growing_kv_cache_builds_a_cudnn_graph_every_token(load_facts):
    # gpu/kv_decode: GPT-2 fp16 batch 1, greedy decoding; SDPA's cuDNN backend, a new KV length per token
    name = "gpu/kv_decode"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    slow, others = _attention_calls(name)
    assert (r.calls, r.ops, r.kind, r.benchmark) == (len(slow), (ATTENTION,), "attention", False)
    assert r.in_steps == tuple(sorted(_step_of(name, e) for e in slow)) and len(r.in_steps) == len(raw.steps(name))
    # one slow call per token, on a key length no call had before
    lengths = [e["args"]["Input Dims"][1][2] for e in slow]
    earlier = {e["args"]["Input Dims"][1][2] for e in raw.complete(name, "cpu_op", ATTENTION)
               if float(e["ts"]) < float(slow[0]["ts"])}
    assert lengths == sorted(set(lengths)) and not set(lengths) & earlier and r.new_shapes == len(slow)
    busy = raw.busy_intervals(name)
    idle = [_idle_us(busy, float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in slow]
    typical = statistics.median(_idle_us(busy, float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in others)
    assert r.per_call_us == pytest.approx(statistics.median(idle), rel=1e-3)
    assert r.typical_us == pytest.approx(typical, rel=1e-2)
    per_step = (sum(idle) - typical * len(slow)) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=0.01)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=0.01) and finding.impact.share > 0.7
    assert finding.severity.value == "critical"
    assert "sdpa_kernel" in finding.fix and "static" in finding.fix


def test_it_is_the_fix_to_start_with_and_the_idle_is_told_once(analysis_of):
    analysis = analysis_of("gpu/kv_decode")
    assert analysis.top_fix.rule == ID
    fired = {f.rule: f.impact.share for f in analysis.findings}
    # the slow calls held kernel loads (lazy-loading's before) and the idle before the next tiny
    # kernel (launch-bound's): each ns is one finding's
    assert "lazy-loading" not in fired
    assert sum(fired.values()) <= 1.0 + 1e-6
    assert fired["launch-bound"] < 0.3


def test_cudnn_benchmark_on_changing_sizes_times_algorithms_every_step(load_facts):
    # gpu/multiscale_benchmark: ResNet-18, a new input size every step, cudnn.benchmark=True, no record_shapes
    name = "gpu/multiscale_benchmark"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    assert r.benchmark and r.kind == "conv" and r.new_shapes is None
    assert set(r.ops) == {"aten::cudnn_convolution", "aten::convolution_backward"}
    assert r.launches_per_call >= 4 and r.syncs > 0
    assert finding.impact.share > 0.9
    assert "cudnn.benchmark = False" in finding.fix
    assert [f.rule for f in _findings(load_facts, name, ONE_TIME_RULES)] == [ID]


def test_new_sizes_without_benchmark_build_a_plan_in_every_convolution(load_facts):
    name = "gpu/multiscale_plain"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    assert not r.benchmark and r.kind == "conv"
    busy = raw.busy_intervals(name)
    convs = [e for e in raw.complete(name, "cpu_op") if e["name"] in ("aten::cudnn_convolution",
                                                                     "aten::convolution_backward")
             and _in_steps(name, e)]
    slow = [e for e in convs if _idle_us(busy, float(e["ts"]), float(e["ts"]) + float(e["dur"])) >= SETUP_MIN_US]
    assert r.calls == len(slow)
    assert r.in_steps == tuple(sorted({_step_of(name, e) for e in slow})) and len(r.in_steps) == len(raw.steps(name))
    assert r.typical_us is not None and r.typical_us < SETUP_MIN_US
    assert finding.severity.value == "critical" and "bucket" in finding.fix


@pytest.mark.parametrize("name", ["gpu/kv_flash", "gpu/resnet50_bf16", "gpu/gpt_bf16_fused", "gpu/gpt_autocast",
                                  "big_gpt_eager_20steps", "seed_mm4096_warm", "gpu/cpu_only"])
def test_silent_where_shapes_are_fixed_or_cudnn_is_not_used(load_facts, name):
    # kv_flash: the same decoding pinned to flash/efficient attention; resnet50_bf16: cuDNN convolutions
    # on one input size; the GPTs run SDPA on one length
    assert _findings(load_facts, name) == []


def test_the_evidence_shows_the_new_lengths(load_facts):
    (finding,) = _findings(load_facts, "gpu/kv_decode")
    shown = [json.loads(e.detail.dims)[1][2] for e in finding.evidence]
    assert len(shown) == 3 and len(set(shown)) == 3
    assert all(e.name == ATTENTION for e in finding.evidence)


# -- a first pass in a window without steps (issue 35, item 2) ------------------------------------------------

LAUNCHES = ("cudaLaunchKernel", "cudaMemsetAsync", "cudaMemcpyAsync")


def test_a_cold_forward_without_steps_sets_its_shapes_up_once():
    # foreign/hta_alexnet (A100, no ProfilerStep, no shapes recorded): AlexNet's warm-up forward then a measured
    # one; the warm-up's convolutions build their cuDNN plans (1.05 s for the second), the measured pass reuses
    # them. Before: "1075.612 ms per step", and "bucket the input sizes"
    name = "foreign/hta_alexnet"
    analysis = analyze(raw.FIXTURES / f"{name}.json.gz")
    finding = analysis.finding(ID)
    r = finding.record
    assert r.once and finding.impact.once and r.steps == 0
    busy = raw.busy_intervals(name)
    convs = sorted(raw.complete(name, "cpu_op", "aten::cudnn_convolution"), key=lambda e: float(e["ts"]))
    idle = {id(e): _idle_us(busy, float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in convs}
    # the model's region waits until a launch inside its first convolution: that call is the dead window's
    # (dead-window, reported before)
    region = raw.complete(name, "user_annotation", "[param|pytorch.model.alex_net|0|0|0]")[0]
    first_launch = min(float(e["ts"]) for e in raw.complete(name) if e["name"] in LAUNCHES
                       and float(e["ts"]) > float(region["ts"]))
    slow = [e for e in convs if idle[id(e)] >= SETUP_MIN_US and float(e["ts"]) > first_launch]
    others = [e for e in convs if idle[id(e)] < SETUP_MIN_US]
    assert r.calls == len(slow)
    # every convolution runs again after the last slow one without set-up: the shapes repeat
    assert any(float(e["ts"]) > max(float(s["ts"]) for s in slow) for e in others)
    typical = statistics.median(idle[id(e)] for e in others)
    assert finding.impact.us == pytest.approx(sum(idle[id(e)] for e in slow) - typical * len(slow), rel=1e-3)
    assert "per step" not in finding.message and "bucket" not in finding.fix
    assert "one iteration before profiling" in finding.fix


def test_cudnn_benchmark_in_a_first_iteration_without_steps_is_paid_once(tmp_path):
    # foreign/kineto_resnet50_autograd_api (kineto's sample: ResNet-50 training, cudnn.benchmark, no
    # ProfilerStep): the first iteration times every algorithm; later ones reuse the choice. Before: critical,
    # "1883.944 ms per step" and "set torch.backends.cudnn.benchmark = False". With its Optimizer.step# regions
    # the first iteration is cold-start's whole (tests/test_cold_iterations.py); without them (an optimizer
    # that records none) the first pass is this rule's
    path = raw.cut("foreign/kineto_resnet50_autograd_api", tmp_path, lambda e: str(e.get("name", "")).startswith(
        "Optimizer."), "no_optimizer_regions")
    finding = analyze(path).finding(ID)
    assert finding.record.benchmark and finding.record.once and finding.impact.once
    assert "benchmark = False" not in finding.advice and "keep it" in finding.advice


def test_shapes_that_keep_changing_without_steps_stay_a_recurring_cost(tmp_path):
    # the twin: gpu/kv_decode without its steps: each token's length is new, and never seen again after the
    # last one; the cost stays recurring, over the window
    finding = analyze(raw.without_steps("gpu/kv_decode", tmp_path)).finding(ID)
    assert finding is not None and not finding.record.once and not finding.impact.once
    assert "in the window" in finding.message
