from __future__ import annotations

import json

import pytest
import raw

from pista.analysis import analyze
from pista.rules.gemm_heuristics import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "lazy-loading"]


def _findings(load_facts, name, rules=(ID,)):
    return analyze(load_facts(name), rules=list(rules)).findings


def _waits(name: str) -> list[tuple[dict, float, float]]:
    """Each aten::mm call with its start and the start of the launch under it (µs)."""
    launches = [e for e in raw.complete(name, "cuda_driver") + raw.complete(name, "cuda_runtime")
                if str(e["name"]).startswith(("cuLaunchKernel", "cudaLaunchKernel"))]
    out = []
    for mm in raw.complete(name, "cpu_op", "aten::mm"):
        first = min(float(e["ts"]) for e in launches if raw.inside(mm, e))
        out.append((mm, float(mm["ts"]), first))
    return sorted(out, key=lambda x: x[1])


def _idle_us(name: str, a: float, b: float) -> float:
    return (b - a) - sum(max(0.0, min(b, t) - max(a, s)) for s, t in raw.busy_intervals(name))


def test_fires_when_the_gemm_shape_changes_every_step(load_facts):
    # gpu/gemm_new_shapes: x @ w with a new M each profiled step (1000, 3000, 7777)
    name = "gpu/gemm_new_shapes"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    waits = _waits(name)
    assert (r.calls, r.shapes, r.in_steps, r.steps) == (3, 3, (2, 3, 4), 3)
    assert [json.loads(n.dims) for n in r.new] == [mm["args"]["Input Dims"] for mm, _, _ in waits]
    assert [n.wait_us for n in r.new] == pytest.approx([b - a for _, a, b in waits])
    assert all(n.op == "aten::mm" and n.kernel.startswith("nvjet_") for n in r.new)
    assert r.typical_us is None  # no GEMM on a shape seen before: the impact is an upper bound
    assert r.loads == 3 and r.queries == 0  # a new kernel each time; cuBLASLt asks no occupancy query
    assert [e.name for e in finding.evidence[::2]] == ["aten::mm"] * 3
    assert "pad or bucket" in finding.fix


def test_impact_is_the_idle_wait_before_each_launch(load_facts):
    name = "gpu/gemm_new_shapes"
    (finding,) = _findings(load_facts, name)
    per_step = sum(_idle_us(name, a, b) for _, a, b in _waits(name)) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=0.01)
    assert finding.impact.share == pytest.approx(min(1.0, per_step / raw.step_us(name)), abs=0.01)
    assert finding.severity.value == "critical"
    assert "upper bound" in finding.basis
    # the kernel loads inside those calls are this finding's, not lazy-loading's
    assert [f.rule for f in _findings(load_facts, name, ONE_TIME_RULES)] == [ID]


def test_silent_on_cub_sorts(load_facts):
    # big_gpt_eager_20steps: 2 occupancy queries every step before CUB's radix sort and scan in
    # aten::embedding_dense_backward (issue 15): not a GEMM, and no GEMM waits on a new shape
    name = "big_gpt_eager_20steps"
    facts = load_facts(name)
    names = facts.trace.name_array[facts.trace.name]
    assert sum(1 for n in names if str(n).startswith("cudaOccupancy")) == 40
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_cold", "gpu/window_sync_cold", "seed_mm64_warm", "seed_mm4096_compile",
                                  "seed_mm4096_compile_cold", "gpu/recompile", "gpu/cpu_only"])
def test_silent_without_gemms_on_changing_shapes(load_facts, name):
    # the cold traces' first GEMM (its 32 occupancy queries and cuBLAS's set-up) is cold-start's or
    # dead-window's; gpu/recompile's new shapes run inside compiling (recompilation's)
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/capture_mlp",
                                  "gpu/capture_linear", "gpu/capture_mm4096"])
def test_healthy_traces_stay_quiet(load_facts, name):
    mine = _findings(load_facts, name, ONE_TIME_RULES)
    assert all(f.severity.value == "info" for f in mine), [(f.rule, f.severity) for f in mine]


def test_overhead_bound_leaves_its_wait_to_it(analysis_of):
    # the new-shape GEMMs' host wait is this rule's; overhead-bound counts only the rest of the idle, so
    # the two together stay within the GPU's idle per step (computed from the raw steps)
    name = "gpu/gemm_new_shapes"
    a = analysis_of(name)
    heuristics, rest = a.finding(ID), a.finding("overhead-bound")
    idle = raw.total(raw.idle_in_steps(name)) / len(raw.steps(name))
    assert heuristics.impact.us + rest.impact.us <= idle * 1.01
    assert rest.record.elsewhere.others == ("gemm-heuristics",)
    assert rest.record.elsewhere.others_us >= 0.9 * heuristics.impact.us


def test_without_steps_shapes_that_keep_changing_stay_recurring(tmp_path):
    # issue 35: a first pass over shapes that repeat is one-time in a window without steps; gpu/gemm_new_shapes
    # without its steps is the twin that must not become one: a new M each call, never seen again
    finding = analyze(raw.without_steps("gpu/gemm_new_shapes", tmp_path)).finding("gemm-heuristics")
    assert finding is not None and not finding.record.once and not finding.impact.once
    assert "pad or bucket" in finding.fix
