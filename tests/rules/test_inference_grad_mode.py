"""inference-grad-mode: inference loops run without torch.inference_mode()/no_grad() (grad_mode.py)."""

from __future__ import annotations

import pytest
import raw

from pista.i18n import localize_finding

RULE = "inference-grad-mode"
NODE_US, INFLATION = 5.6, 2.0  # the rule's measured cost per node and the profiler's inflation


def _nodes_per_step(name: str) -> float:
    """Per step: the distinct Sequence numbers of the cpu_ops starting in it (the number moves on once
    per node built; one number alone builds none), averaged."""
    ops = raw.complete(name, "cpu_op")
    counts = []
    for s in raw.steps(name):
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        seqs = {e["args"]["Sequence number"] for e in ops
                if lo <= float(e["ts"]) < hi and "Sequence number" in e.get("args", {})}
        counts.append(len(seqs) if len(seqs) > 1 else 0)
    return sum(counts) / len(counts)


def test_fires_on_gpt2_decoding_in_grad_mode(analysis_of):
    name = "gpu/gpt2_flash_grad"
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    nodes = _nodes_per_step(name)
    assert nodes > 400  # twelve blocks of views, matmuls, adds
    assert finding.record.nodes_per_step == pytest.approx(nodes)
    assert finding.record.steps == finding.record.of_steps == len(raw.steps(name))
    assert not finding.record.capped
    assert finding.impact.us == pytest.approx(nodes * NODE_US * INFLATION, rel=1e-6)
    assert finding.impact.share == pytest.approx(finding.impact.us / raw.median_step_us(name), rel=0.01)
    assert finding.severity.value == "critical"  # a quarter of the profiled token (unprofiled: 20% measured)
    assert "torch.inference_mode()" in finding.fix
    assert [e.name for e in finding.evidence][:1] == ["aten::view"]  # the op that builds most nodes


def test_counts_resnet_nodes(analysis_of):
    name = "gpu/resnet50_grad"
    finding = analysis_of(name).finding(RULE)
    nodes = _nodes_per_step(name)
    assert finding.record.nodes_per_step == pytest.approx(nodes)
    assert finding.impact.us == pytest.approx(nodes * NODE_US * INFLATION, rel=1e-6)
    assert finding.severity.value == "warning"


@pytest.mark.parametrize("name", ["gpu/gpt2_flash_nograd", "gpu/resnet50_nograd", "gpu/kv_flash"])
def test_silent_under_inference_mode_or_no_grad(analysis_of, name):
    assert analysis_of(name).finding(RULE) is None


@pytest.mark.parametrize("name", ["big_gpt_eager_20steps", "series_mlp_eager", "gpu/attn_manual", "gpu/cpu_transformer"])
def test_silent_on_training(analysis_of, name):
    assert analysis_of(name).finding(RULE) is None


def test_silent_where_no_op_builds_a_node(analysis_of):
    # matmul + add on tensors that need no grad: the ops carry a Sequence number, one and the same
    name = "seed_mm64_warm"
    assert _nodes_per_step(name) == 0
    assert any("Sequence number" in e.get("args", {}) for e in raw.complete(name, "cpu_op"))
    assert analysis_of(name).finding(RULE) is None


def test_the_per_op_rules_leave_its_idle(analysis_of):
    from pista.rules import inference_grad_mode
    from pista.rules._idle import intersect
    from pista.rules._launches import launch_bound_idle
    from pista.rules._repeated import many_calls_idle

    analysis = analysis_of("gpu/gpt2_flash_grad")
    facts = analysis.facts
    grad = inference_grad_mode.claimed_idle(facts)
    assert grad.total == pytest.approx(analysis.finding(RULE).impact.us * 1000 * len(facts.steps), rel=0.001)
    assert intersect(launch_bound_idle(facts), grad).total == 0
    assert intersect(many_calls_idle(facts), grad).total == 0
    assert sum(f.impact.share for f in analysis.findings) <= 1.0
    overhead = analysis.finding("overhead-bound")
    assert overhead is not None and RULE in overhead.message


def test_spanish(analysis_of):
    finding = localize_finding(analysis_of("gpu/gpt2_flash_grad").finding(RULE), "es")
    assert "torch.inference_mode()" in finding.fix and "nodos de autograd" in finding.message


def test_says_memory_grows_only_where_steps_call_cudamalloc(analysis_of):
    def malloc_steps(name):
        calls = [float(e["ts"]) for e in raw.complete(name, "cuda_runtime", "cudaMalloc")]
        return sum(any(float(s["ts"]) <= t < float(s["ts"]) + float(s["dur"]) for t in calls) for s in raw.steps(name))

    decode, resnet = analysis_of("gpu/gpt2_flash_grad").finding(RULE), analysis_of("gpu/resnet50_grad").finding(RULE)
    assert decode.record.malloc_steps == malloc_steps("gpu/gpt2_flash_grad") == 7  # the KV cache keeps each graph
    assert malloc_steps("gpu/gpt2_flash_nograd") == 0
    assert "memory grows" in decode.message and "aten::cat" in decode.message
    assert resnet.record.malloc_steps == 0 and "memory grows" not in resnet.message


def test_bert_captured_by_pista_profile(analysis_of):
    # an architecture the rule was not tuned on (an encoder, exact GELU, pista's own capture)
    name = "gpu/bert_as_written"
    finding = analysis_of(name).finding(RULE)
    assert finding.record.nodes_per_step == pytest.approx(_nodes_per_step(name))
    assert finding.severity.value == "critical"
    assert analysis_of("gpu/bert_fixed").finding(RULE) is None


def test_without_steps_it_says_the_condition_and_stays_info(tmp_path):
    # a forward profiled alone, its backward outside the window, looks like inference: without
    # ProfilerStep markers the finding is info and says so (gpu/gpt2_flash_grad's events, steps dropped)
    from pista.analysis import analyze

    path = raw.without_steps("gpu/gpt2_flash_grad", tmp_path)
    finding = analyze(path).finding(RULE)
    assert finding is not None and not finding.record.has_steps
    assert finding.severity.value == "info" and "does not apply" in finding.message
    seqs = {e["args"]["Sequence number"] for e in raw.complete("gpu/gpt2_flash_grad", "cpu_op")
            if "Sequence number" in e.get("args", {})}
    assert finding.record.nodes_per_step == len(seqs)


def test_a_cpu_inference_loop_costs_its_nodes_at_the_cpu_twins_rate(analysis_of):
    # gpu/cpu_infer_grad: a 16-block MLP on one CPU core, grad mode on; unprofiled inference_mode saved
    # 91-117 µs of a 715 µs step (cpu_infer.py - pair): about 2 µs a node, not the CUDA twins' 5.6
    name = "gpu/cpu_infer_grad"
    finding = analysis_of(name).finding(RULE)
    nodes = _nodes_per_step(name)
    assert nodes == 49  # 16 x (t, addmm, gelu) and the argmax's
    assert not finding.record.gpu and finding.record.node_us == 2.0
    assert finding.impact.us == pytest.approx(nodes * 2.0 * INFLATION, rel=1e-6)
    assert 0.10 < finding.impact.share < 0.20  # measured unprofiled: 13-16% of the step
    assert analysis_of("gpu/cpu_infer_nograd").finding(RULE) is None
