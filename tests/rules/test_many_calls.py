from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.many_calls import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


# -- plain interval arithmetic over the raw JSON (µs), independent of pista's facts -------------

def merge(ivs):
    out = []
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def intersect(xs, ys):
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def total(ivs):
    return sum(b - a for a, b in ivs)


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


def test_fires_on_autocast_casts_in_one_finding(analysis_of):
    analysis = analysis_of("big_gpt_eager_20steps")
    found = [f for f in analysis.findings if f.rule == ID]
    assert len(found) == 1  # one finding, however many ops
    r = found[0].record
    cast = r.calls[0]
    facts = analysis.facts
    trace = facts.trace
    names = trace.name_array[trace.name]
    ops = np.flatnonzero(facts.is_host & (names == "aten::to") & (facts.event_step >= 0))
    outer = ops[names[facts.parent[ops]] != "aten::to"]  # an aten::to inside an aten::to counts once
    assert (cast.name, cast.kind, cast.source) == ("aten::to", "op", "cast")
    assert cast.calls == outer.size and cast.calls_per_step == pytest.approx(outer.size / 20)
    assert round(cast.calls_per_step) == 271
    assert cast.cost_us_per_step == pytest.approx(trace.dur[outer].sum() / 1000 / 20)
    # evidence: its first calls of the first profiled step, as recorded
    first = outer[np.argsort(trace.ts[outer])][:2]
    assert [(e.name, e.ts_us, e.dur_us) for e in found[0].evidence[:2]] == [
        ("aten::to", trace.ts[i] / 1000, trace.dur[i] / 1000) for i in first]
    assert "keep the weights in bf16" in found[0].fix


def test_impact_is_the_gpu_idle_under_the_calls_from_the_raw_events(analysis_of):
    import raw

    name = "big_gpt_eager_20steps"
    finding = analysis_of(name).finding(ID)
    assert [c.name for c in finding.record.calls] == ["aten::to"]
    per_step = _idle_under(name, "aten::to")
    assert finding.impact.us == pytest.approx(per_step, rel=1e-3)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=1e-3)
    # only the idle counts: 8.9 ms of calls per step, 7.3 ms of them with the GPU waiting
    assert finding.impact.us < finding.record.calls[0].cost_us_per_step
    assert finding.severity.value == "warning"  # 13.9% of the step
    assert "upper bound" in finding.basis


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


def test_fires_on_autocast_casts_of_another_model(analysis_of):
    finding = analysis_of("gpu/gpt_autocast").finding(ID)
    assert finding is not None and [(c.name, c.source) for c in finding.record.calls] == [("aten::to", "cast")]
    assert finding.severity.value == "warning"


def test_silent_on_compiling(load_facts):
    # gpu/recompile calls PythonDispatchMode 1100 times a step, all inside Dynamo's compile: recompilation's
    assert _findings(load_facts, "gpu/recompile") == []


def test_every_field_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    en = analysis_of("big_gpt_eager_20steps").finding(ID)
    es = localize_finding(en, "es")
    for part in ("title", "message", "advice", "fix", "basis"):
        assert getattr(es, part) and getattr(es, part) != getattr(en, part), part
    assert all(e.note for e in es.evidence)
    assert [e.note for e in es.evidence] != [e.note for e in en.evidence]
    assert "conversiones de tipo" in es.message
