from __future__ import annotations

import numpy as np
import pytest


def _waits_before_tiny_kernels(name: str, max_us: float = 5.0) -> float:
    """From the raw JSON: per step, the GPU idle just before each kernel of at most max_us that starts
    on an idle GPU (from the end of the previous device work), inside the steps."""
    import raw

    busy = raw.busy_intervals(name)
    opens = {a: k for k, (a, _) in enumerate(busy)}
    steps = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in raw.steps(name)]
    gaps = []
    for e in raw.complete(name, "kernel"):
        k = opens.get(float(e["ts"]))
        if float(e["dur"]) <= max_us and k:
            gaps.append((busy[k - 1][1], busy[k][0]))
    gaps.sort()
    claimed = 0.0
    for lo, hi in steps:  # gaps are disjoint (one per idle stretch); clip each to the steps
        claimed += sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in set(gaps))
    return claimed / len(steps)


def test_fires_on_hundreds_of_tiny_elementwise_ops(analysis_of):
    analysis = analysis_of("gpu/launch_bound")
    finding = analysis.finding("launch-bound")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    kernels = np.flatnonzero(facts.is_device_work & trace.category_mask({"kernel"}))
    r = finding.record
    # 200 ops per step (100 mul + 100 add) x 3 profiled steps, per the capture script
    assert len(kernels) == 600 and r.kernels == 600
    assert r.kernels_per_step == 200
    assert r.median_kernel_us == np.median(trace.dur[kernels]) / 1000
    names = trace.name_array[trace.name]
    launches = np.flatnonzero(names == "cudaLaunchKernel")
    assert r.median_launch_us == np.median(trace.dur[launches]) / 1000
    assert r.median_launch_us > r.median_kernel_us
    assert not r.compiled
    # evidence: the first kernel of each kind, its launch call and the op (aten::mul / aten::add)
    shown = [e for e in finding.evidence if e.lane.startswith("GPU")]
    assert len(shown) == 2
    for e in shown:
        same = kernels[names[kernels] == e.name]
        first = same[np.argmin(trace.ts[same])]
        assert (e.ts_us, e.dur_us, e.step) == (trace.ts[first] / 1000, trace.dur[first] / 1000, 2)
    assert {e.name for e in finding.evidence if e.name.startswith("aten::")} == {"aten::mul", "aten::add"}
    assert "aten::mul, aten::add" in finding.fix and "torch.compile" in finding.fix
    # it is the top fix: the planted problem is the loop of tiny ops
    assert analysis.to_dict()["summary"]["top_fix"]["rule"] == "launch-bound"


def test_impact_is_the_wait_before_each_tiny_kernel_from_the_raw_events(analysis_of):
    import raw

    name = "gpu/launch_bound"
    finding = analysis_of(name).finding("launch-bound")
    per_step = _waits_before_tiny_kernels(name)
    assert finding.impact.us == pytest.approx(per_step, rel=1e-3)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=1e-3)
    assert finding.severity.value == "critical"  # 95% of the step
    assert "upper bound" in finding.basis


def test_the_same_idle_is_not_restated(analysis_of):
    # overhead-bound keeps only what the tiny kernels do not explain; many-calls' aten::mul/aten::add are
    # the same ops, so it stays silent
    analysis = analysis_of("gpu/launch_bound")
    finding = analysis.finding("launch-bound")
    assert analysis.finding("many-calls") is None
    rest = analysis.finding("overhead-bound")
    assert rest.record.elsewhere.launch_us == pytest.approx(finding.impact.us, rel=1e-6)
    assert rest.impact.us + finding.impact.us <= rest.record.idle_us_per_step * (1 + 1e-9)


def test_fires_on_an_eager_transformer_with_small_kernels(analysis_of):
    import raw

    name = "gpu/capture_transformer"
    finding = analysis_of(name).finding("launch-bound")
    assert finding is not None and finding.record.median_kernel_us <= 5.0
    assert finding.impact.share >= 0.05
    # it says how many of the step's kernels are tiny (an expert review read "267 tiny kernels" as every
    # kernel, GEMMs and optimizer included)
    launched = {c["args"]["correlation"] for c in raw.in_steps(name, raw.complete(name))
                if c.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in c.get("args", {})}
    tiny = [k for k in raw.complete(name, "kernel") if k["args"].get("correlation") in launched and float(k["dur"]) <= 5.0]
    assert finding.record.tiny_per_step == pytest.approx(len(tiny) / len(raw.steps(name)))
    assert f"for the {len(tiny) / 3:.0f} of them that run 5.000 µs or less" in finding.message


def test_inference_is_not_told_about_optimizers(analysis_of):
    # gpu/kv_flash: batch-1 decoding, no optimizer; an optimizer's tiny kernels are unfused-optimizer's to name
    finding = analysis_of("gpu/kv_flash").finding("launch-bound")
    assert finding.impact.share > 0.5 and "optimizer" not in finding.advice + finding.fix


def test_silent_when_kernels_do_real_work(analysis_of):
    # ~100 kernels per step too, but GEMMs of a few µs and more (median 6-18 µs)
    for name in ("series_mlp_eager", "series_mlp_compile", "big_gpt_eager_20steps"):
        assert analysis_of(name).finding("launch-bound") is None, name


def test_silent_with_few_kernels_per_step(analysis_of):
    # 2 tiny kernels per step: overhead-bound, not a launch storm
    assert analysis_of("seed_mm64_warm").finding("launch-bound") is None
    assert analysis_of("seed_mm4096_compile_cold").finding("launch-bound") is None


def test_silent_on_a_healthy_trace(analysis_of):
    for name in ("seed_mm4096_warm", "gpu/fp32_gemm"):
        assert analysis_of(name).finding("launch-bound") is None, name


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("launch-bound") is None


def test_every_field_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    en = analysis_of("gpu/launch_bound").finding("launch-bound")
    es = localize_finding(en, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(en, part), part
    assert all(e.note for e in es.evidence)
    assert [e.note for e in es.evidence] != [e.note for e in en.evidence]
    assert "kernels diminutos" in es.fix


def test_a_cuda_graph_is_told_to_wait_for_static_shapes_where_they_change(analysis_of):
    # gpu/kv_flash: GPT-2 decoding with transformers' dynamic KV cache: every token the cache's aten::cat
    # (24 a token: K and V of 12 layers) and the attention run on a new length (an expert review: graphs
    # need a static cache first)
    import raw

    name = "gpu/kv_flash"
    cats = raw.in_steps(name, raw.complete(name, "cpu_op", "aten::cat"))
    by_step = {}
    for s in raw.steps(name):
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        by_step[s["name"]] = {str(c["args"]["Input Dims"]) for c in cats if lo <= float(c["ts"]) < hi}
    shapes = list(by_step.values())
    assert all(not (a & b) for i, a in enumerate(shapes) for b in shapes[i + 1:])  # no shape seen twice
    finding = analysis_of(name).finding("launch-bound")
    r = finding.record
    assert r.new_shape_op == "aten::cat" and r.new_shape_calls_per_step == len(cats) / len(raw.steps(name)) == 24
    assert "static" in finding.fix and "a preallocated static KV cache" in finding.advice
    # a training loop's shapes repeat: no such condition
    assert analysis_of("gpu/launch_bound").finding("launch-bound").record.new_shape_op == ""
    assert analysis_of("gpu/capture_transformer").finding("launch-bound").record.new_shape_op == ""


def test_a_few_shapes_taken_in_turn_are_not_new_shapes(analysis_of):
    # gpu/recompile_limit: 3 steps on 3 shapes compiled before the window (an expert review: "a shape no
    # other step has" was false there); too few steps to tell a rotation from growth
    finding = analysis_of("gpu/recompile_limit").finding("overhead-bound")
    assert finding.record.new_shape_op == "" and "static" not in finding.advice


# -- CUDA graph replays (issue 35, item 3) ---------------------------------------------------------------------

GRAPH_LAUNCHES = ("cudaGraphLaunch", "hipGraphLaunch")


def test_kernels_a_graph_replays_are_not_launched_one_by_one(load_facts):
    # foreign/hta_negq_rank0 (HolisticTraceAnalysis' sample, A100, 5 steps): 14 cudaGraphLaunch a step beside
    # ~1200 kernels launched one by one. Before: "capture the step as a CUDA graph (torch.compile(mode=
    # 'reduce-overhead'))" to a program that replays graphs, and the graphs' kernels counted as launched one by one
    import raw

    from pista.analysis import analyze

    name = "foreign/hta_negq_rank0"
    analysis = analyze(load_facts(name), rules=["launch-bound"])
    finding = analysis.finding("launch-bound")
    r = finding.record
    steps = raw.steps(name)
    lo, hi = float(steps[0]["ts"]), float(steps[-1]["ts"]) + float(steps[-1]["dur"])
    graphs = [e for e in raw.complete(name, "cuda_runtime") if e["name"] in GRAPH_LAUNCHES and lo <= float(e["ts"]) < hi]
    ids = {e["args"]["correlation"] for e in graphs}
    # every kernel of this trace runs in the steps (705 of them recorded without their launch, HTA's sample for a
    # negative queue length); those a graph launch replays are not counted as launched one by one
    kernels = raw.complete(name, "kernel")
    one_by_one = [k for k in kernels if k["args"]["correlation"] not in ids]
    assert len(graphs) > 0 and len(one_by_one) < len(kernels)
    assert r.graphed == "partly" and r.graph_launches_per_step == pytest.approx(len(graphs) / len(steps))
    assert r.kernels == len(one_by_one)
    assert "capture the step as" not in finding.fix and "reduce-overhead" not in finding.advice
    assert "already replays CUDA graphs" in finding.advice


def test_a_program_without_graphs_is_still_told_to_capture_one(analysis_of):
    # the twin: gpu/launch_bound replays no graph; the advice keeps the CUDA graph
    finding = analysis_of("gpu/launch_bound").finding("launch-bound")
    assert finding.record.graphed == "" and finding.record.graph_launches_per_step == 0
    assert "capture the step as a CUDA graph" in finding.fix


def test_a_graphed_decode_step_gets_no_graph_advice(load_facts):
    # foreign/tl_vllm_graph_exec (TraceLens' vLLM decode on MI300X: one hipGraphLaunch replays 421 of 425
    # kernels): mostly graphed, and no finding tells it to capture a graph or to torch.compile for launches
    import raw

    from pista.analysis import analyze
    from pista.rules._launches import graph_replays

    name = "foreign/tl_vllm_graph_exec"
    analysis = analyze(load_facts(name))
    graphs = [e for e in raw.complete(name) if e["name"] in GRAPH_LAUNCHES]
    ids = {e["args"]["correlation"] for e in graphs}
    kernels = raw.complete(name, "kernel")
    replays = graph_replays(analysis.facts)
    assert replays.per_step == len(graphs)
    assert replays.kernel_share == pytest.approx(sum(k["args"]["correlation"] in ids for k in kernels) / len(kernels))
    assert replays.graphed == "mostly"
    for f in analysis.findings:
        assert "as a CUDA graph" not in f.advice + f.fix, f.rule
