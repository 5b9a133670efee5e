from __future__ import annotations

import numpy as np
import pytest
import raw
from raw import idle_in_steps, intersect, merge, subtract, total  # noqa: F401

from pista.analysis import analyze
from pista.rules.many_calls import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings









def _idle_under(name: str, op: str) -> float:
    """From the raw JSON: per step, the GPU idle inside the steps while the host is inside a call of
    `op` (any thread), leaving out the profiler's own buffer requests."""
    import raw

    steps = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in raw.steps(name)]
    busy = raw.busy_intervals(name)
    idle = []
    for lo, hi in steps:
        cur = lo
        for a, b in busy:
            if b <= lo or a >= hi:
                continue
            if a > cur:
                idle.append((cur, a))
            cur = max(cur, b)
        if cur < hi:
            idle.append((cur, hi))
    idle = merge(idle)
    profiler = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name, "overhead")
                      if e["name"] in ("Activity Buffer Request", "Buffer Flush")])
    if profiler:
        lo, hi = min(idle[0][0], profiler[0][0]), max(idle[-1][1], profiler[-1][1])
        outside = merge([(lo, profiler[0][0])] + [(profiler[k][1], profiler[k + 1][0])
                                                   for k in range(len(profiler) - 1)] + [(profiler[-1][1], hi)])
        idle = intersect(idle, outside)
    calls = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name, "cpu_op", op)
                   if any(lo <= float(e["ts"]) < hi for lo, hi in steps)])
    return total(intersect(idle, calls)) / len(steps)


def test_fires_on_a_per_sample_python_loop(analysis_of):
    # gpu/python_loop_cpu: 128 separate (16x256 @ 256x256) matmuls per step on the CPU, where one
    # batched matmul would do; on a CPU-only trace the calls' host time is the step
    analysis = analysis_of("gpu/python_loop_cpu")
    found = [f for f in analysis.findings if f.rule == ID]
    assert len(found) == 1  # one finding, however many ops
    call = found[0].record.calls[0]
    trace = analysis.facts.trace
    names = trace.name_array[trace.name]
    ops = np.flatnonzero(analysis.facts.is_host & (names == "aten::matmul") & (analysis.facts.event_step >= 0))
    assert (call.name, call.kind, call.source) == ("aten::matmul", "op", "loop")
    assert call.calls == ops.size and call.calls_per_step == pytest.approx(128)
    assert call.cost_us_per_step == pytest.approx(trace.dur[ops].sum() / 1000 / 3)
    assert "batch the calls into one op on stacked tensors" in found[0].fix


def test_impact_is_the_host_time_of_the_calls_on_a_cpu_trace(analysis_of):
    import raw

    name = "gpu/python_loop_cpu"
    finding = analysis_of(name).finding(ID)
    steps = raw.steps(name)
    # x[i] (aten::select) and the matmul, 128 each per step
    calls = [e for e in raw.complete(name, "cpu_op") if e["name"] in ("aten::matmul", "aten::select")
             and any(raw.inside(s, e) for s in steps)]
    assert [c.name for c in finding.record.calls] == ["aten::matmul", "aten::select"]
    per_step = total(merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in calls])) / len(steps)
    assert finding.impact.us == pytest.approx(per_step, rel=1e-3)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=1e-3)
    assert finding.severity.value == "critical" and "upper bound" in finding.basis


def test_casts_and_the_optimizer_are_other_rules_facts(analysis_of):
    # autocast's 271 aten::to per step (and their 123 ToCopyBackward0) are autocast-casts' finding;
    # a foreach optimizer's calls unfused-optimizer's: told once, there
    for name in ("big_gpt_eager_20steps", "gpu/gpt_autocast", "gpu/adamw_foreach_bf16"):
        a = analysis_of(name)
        assert a.finding(ID) is None, name
    assert analysis_of("gpu/gpt_autocast").finding("autocast-casts") is not None


def test_silent_on_the_tiny_op_loop_that_launch_bound_explains(analysis_of):
    # gpu/launch_bound calls aten::mul and aten::add 100 times a step each, but the GPU's wait there is
    # the tiny kernels' launches: launch-bound's finding, not restated here
    analysis = analysis_of("gpu/launch_bound")
    assert analysis.finding(ID) is None
    assert analysis.finding("launch-bound") is not None


@pytest.mark.parametrize("name", ["seed_mm64_warm", "series_mlp_eager", "series_linear_train",
                                  "seed_mm4096_compile_cold", "gpu/cpu_only", "seed_mm4096_warm"])
def test_silent_on_ordinary_models(load_facts, name):
    assert _findings(load_facts, name) == []


def test_silent_on_another_op_s_internals(analysis_of):
    # resnet50_bf16 calls aten::empty 637 and aten::zeros 106 times a step, all inside batch_norm and
    # convolution_backward: nothing the user calls in a loop (a healthy trace, bf16 channels_last)
    for name in ("gpu/resnet50_bf16", "gpu/capture_transformer"):
        assert analysis_of(name).finding(ID) is None, name


def test_silent_on_compiling(load_facts):
    # gpu/recompile calls PythonDispatchMode 1100 times a step, all inside Dynamo's compile: recompilation's
    assert _findings(load_facts, "gpu/recompile") == []


def test_every_field_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    en = analysis_of("gpu/python_loop_cpu").finding(ID)
    es = localize_finding(en, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(en, part), part
    assert all(e.note for e in es.evidence)
    assert [e.note for e in es.evidence] != [e.note for e in en.evidence]


def test_a_models_own_layers_are_not_a_loop(analysis_of):
    # gpu/bert_as_written: BERT-base's 74 aten::linear a step are its 12 blocks' layers, spread through the
    # forward between ever different ops; their per-op cost is overhead-bound's and launch-bound's
    from collections import Counter

    from rules.test_tanh_gelu import _outer_ops

    name = "gpu/bert_as_written"
    ops = _outer_ops(name)
    calls = [k for k, e in enumerate(ops) if e["name"] == "aten::linear"]
    assert len(calls) / len(raw.steps(name)) == 74
    between = Counter(tuple(e["name"] for e in ops[a + 1:b]) for a, b in zip(calls, calls[1:], strict=False))
    assert between.most_common(1)[0][1] < 0.6 * sum(between.values())
    assert analysis_of(name).finding("many-calls") is None
    # a loop over slices still is one: the same aten::select between every two matmuls
    loop = analysis_of("gpu/python_loop_cpu").finding("many-calls")
    assert loop is not None and loop.record.calls[0].source == "loop"


# -- a kernel's launches and its GPU time apart (issue 35, item 6) -----------------------------------------

def test_a_repeated_kernel_says_its_launch_calls_and_its_gpu_time_apart(load_facts):
    # savings/h100/anomaly_ctx__broken: an eq kernel launched 106x a step. Before, "X each, Y per step" summed
    # each launch call with its kernel, read as GPU time (issue 35: 181.7 ms of copies claimed, 82.7 ms on the
    # GPU); now the launch calls and the device's time are given apart
    name = "savings/h100/anomaly_ctx__broken"
    (finding,) = _findings(load_facts, name)
    (row,) = [c for c in finding.record.calls if c.kind == "kernel"]
    steps = raw.steps(name)
    runtime = {e["args"]["correlation"]: e for e in raw.complete(name, "cuda_runtime") + raw.complete(name, "cuda_driver")
               if "correlation" in e.get("args", {})}
    kernels = [k for k in raw.complete(name, "kernel") if k["name"] == row.name and any(
        float(s["ts"]) <= float(runtime[k["args"]["correlation"]]["ts"]) < float(s["ts"]) + float(s["dur"]) for s in steps)]
    assert row.calls == len(kernels)
    assert row.gpu_us_per_step == pytest.approx(sum(float(k["dur"]) for k in kernels) / len(steps))
    launches = sum(float(runtime[k["args"]["correlation"]]["dur"]) for k in kernels)
    assert row.launch_us_per_step == pytest.approx(launches / len(steps))
    assert f"{row.gpu_us_per_step:.3f} µs on the GPU per step" in finding.message


def test_a_blocking_copy_and_its_launch_call_count_once(load_facts):
    # foreign/hta_negq_rank0: each pageable device-to-host copy runs inside its cudaMemcpyAsync, which blocks
    # until the copy is done; the call's cost is the union of the two, not their sum
    from pista.rules._repeated import launch_and_run

    name = "foreign/hta_negq_rank0"
    facts = load_facts(name)
    trace = facts.trace
    copies = np.flatnonzero(trace.name_array[trace.name] == "Memcpy DtoH (Device -> Pageable)")
    runtime = {e["args"]["correlation"]: e for e in raw.complete(name, "cuda_runtime")}
    expected = []
    for e in raw.complete(name, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)"):
        call = runtime[e["args"]["correlation"]]
        a, b = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        c, d = float(call["ts"]), float(call["ts"]) + float(call["dur"])
        expected.append(max(b, d) - min(a, c) if min(b, d) > max(a, c) else (b - a) + (d - c))
    got = launch_and_run(facts, copies[np.argsort(trace.ts[copies], kind="stable")]) / 1000.0
    assert sorted(got.tolist()) == pytest.approx(sorted(expected), abs=0.01)
    summed = sum(float(e["dur"]) + float(runtime[e["args"]["correlation"]]["dur"])
                 for e in raw.complete(name, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)"))
    assert sum(got) < summed


def test_calls_whose_time_is_their_output_are_not_a_per_call_toll():
    """monisha_trace (a CPU training run, fetched by scripts/fetch_foreign.py: skipped without it): 100 aten::randn
    of about 2.9 ms each. The time is the random numbers themselves, a hundred times the dispatcher's per-call toll:
    one batched randn makes the same numbers in about the same time, so 'batch the calls' (the review: Start here,
    5%) saves nothing, and many-calls stays quiet."""
    import json
    import os
    from pathlib import Path

    from pista.rules._repeated import OUTPUT_BOUND_CALL_NS

    path = Path(os.environ.get("PISTA_FOREIGN_CACHE") or Path.home() / ".cache" / "pista" / "foreign") / "monisha_trace.json"
    if not path.exists():
        pytest.skip("monisha_trace.json is fetched by scripts/fetch_foreign.py (not redistributable)")
    events = json.loads(path.read_text())["traceEvents"]
    randn = [float(e["dur"]) for e in events if e.get("ph") == "X" and e.get("name") == "aten::randn"]
    assert len(randn) >= 64 and sum(randn) / len(randn) * 1000 >= OUTPUT_BOUND_CALL_NS  # µs -> ns: ~2.9 ms a call
    assert ID not in {f.rule for f in analyze(str(path)).findings}


def test_short_calls_of_an_output_op_are_still_a_toll(tmp_path):
    """The twin: gpu/python_loop_cpu's 128 per-sample aten::matmul a step (38 µs a call), renamed aten::randn: a
    loop of short calls is the per-call toll whatever the op, and is still reported as the loop it is."""
    import gzip
    import json

    from conftest import fixture

    with gzip.open(fixture("gpu/python_loop_cpu"), "rt") as f:
        data = json.load(f)
    for e in data["traceEvents"]:
        if e.get("name") == "aten::matmul":
            e["name"] = "aten::randn"
    path = tmp_path / "loop_randn.json.gz"
    with gzip.open(path, "wt") as out:
        json.dump(data, out)
    before = analyze(fixture("gpu/python_loop_cpu")).finding(ID)
    after = analyze(str(path)).finding(ID)
    assert after is not None and after.record.calls[0].name == "aten::randn"
    assert after.record.calls[0].calls == before.record.calls[0].calls
    assert after.impact.share == pytest.approx(before.impact.share, rel=1e-6)


def test_a_chain_of_identical_layers_is_not_a_loop(analysis_of):
    """param_linear_kineto (review 5): 21 Linear+ReLU layers trained 40 times, 840 aten::linear with an aten::relu
    between them and nothing indexed: a model's layers, whose per-op cost overhead-bound tells, not "a loop of
    calls" to batch with torch.stack. gpu/python_loop_cpu's matmuls, each after an aten::select, stay a loop."""
    name = "foreign/param_linear_kineto"
    linears = [e for e in raw.complete(name, "cpu_op", "aten::linear")]
    slicing = [e for e in raw.complete(name, "cpu_op") if e["name"] in ("aten::select", "aten::slice", "aten::narrow")]
    assert len(linears) == 840 and not slicing
    calls = analysis_of(name).finding("many-calls")
    assert calls is None or all(c["name"] != "aten::linear" for c in calls.metrics["calls"])
    assert "overhead-bound" in analysis_of(name).rules_fired
    loop = analysis_of("gpu/python_loop_cpu").finding("many-calls")
    assert loop is not None and any(c["name"] == "aten::matmul" for c in loop.metrics["calls"])
