from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import pytest
import raw

from pista.analysis import analyze
from pista.rules._one_time import LIBRARY
from pista.rules.cold_start import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "lazy-loading"]


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def _events(facts, name):
    trace = facts.trace
    return np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))


def _idle_us(name: str, lo: float, hi: float) -> float:
    """µs of [lo, hi) with no device work running, from the raw events."""
    busy = sum(max(0.0, min(hi, b) - max(lo, a)) for a, b in raw.busy_intervals(name))
    return (hi - lo) - busy


def test_fires_on_the_unwarmed_profile(load_facts):
    # seed_mm64_cold: schedule(wait=0, warmup=0, active=3) with no warm-up, steps 0..2
    facts = load_facts("seed_mm64_cold")
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    trace = facts.trace
    r = finding.record
    durs = {n: int(trace.dur[_events(facts, f"ProfilerStep#{n}")[0]]) for n in (0, 1, 2)}
    assert (r.kind, r.name, r.step, r.other_steps) == ("step", "ProfilerStep#0", 0, (1, 2))
    assert r.first_us == pytest.approx(durs[0] / 1000)
    assert r.median_others_us == pytest.approx(np.median([durs[1], durs[2]]) / 1000)
    assert r.ratio > 100
    # the profiler's buffer request and the module loads are inside it, and this finding owns them
    (request,) = _events(facts, "Activity Buffer Request")
    assert r.profiler_us == pytest.approx(trace.dur[request] / 1000)
    loads = np.concatenate([_events(facts, "Lazy Function Loading"), _events(facts, "Runtime Triggered Module Loading")])
    assert r.loading_us == pytest.approx(trace.dur[loads].sum() / 1000)
    assert r.queries == 32  # cuBLASLt's first GEMM (torch's table: 30 + 1 + 1 cudaOccupancy* calls)
    # what filled it: aten::mm's own time (cuBLAS's set-up), then aten::add's (torch: 102.823 ms of 138.464)
    assert [o.name for o in r.ops[:2]] == ["aten::mm", "aten::add"] and r.cause == LIBRARY
    first = finding.evidence[0]
    step0 = _events(facts, "ProfilerStep#0")[0]
    assert (first.name, first.step) == ("ProfilerStep#0", 0)
    assert first.ts_us == trace.ts[step0] / 1000 and first.dur_us == trace.dur[step0] / 1000
    assert finding.evidence[1].name == "aten::mm" and finding.evidence[1].step == 0
    assert finding.evidence[-1].name in ("ProfilerStep#1", "ProfilerStep#2")
    assert "aten::mm" in finding.fix and "schedule(wait=1, warmup=1, active=3)" in finding.fix


def test_impact_is_the_first_steps_idle_excess_from_the_raw_events(load_facts):
    name = "seed_mm64_cold"
    (finding,) = _findings(load_facts, name)
    steps = raw.steps(name)
    idle = [_idle_us(name, float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in steps]
    total = idle[0] - statistics.median(idle[1:])  # one-time: all of it, over the window
    assert finding.impact.once and finding.impact.us == pytest.approx(total, rel=0.01)
    assert finding.impact.share == pytest.approx(min(1.0, total / raw.window_us(name)), abs=0.01)
    assert finding.severity.value == "warning"  # 99% of the window, but once: it slows no later step
    assert "one-time" in finding.basis and finding.impact.once


def test_one_finding_for_the_cold_step(load_facts):
    # the seed gave five findings for step 0 (cold-start, dead-window, lazy-loading, gemm-heuristics,
    # profiler-overhead): the other four restated the same time
    fired = {f.rule for f in analyze(load_facts("seed_mm64_cold"), rules=ONE_TIME_RULES).findings}
    assert fired == {ID}


def _without_steps(trace):
    """The same trace with its ProfilerStep annotations removed."""
    from pista.trace.facts import STEP_NAME

    keep = np.array([not STEP_NAME.match(n) for n in trace.name_array[trace.name]], dtype=bool)
    columns = {f.name: getattr(trace, f.name)[keep] for f in dataclasses.fields(trace)
               if isinstance(getattr(trace, f.name), np.ndarray)}
    raw_args = [trace.raw(i) for i in np.flatnonzero(keep).tolist()]  # raw_args go by file row
    return dataclasses.replace(trace, raw_args=raw_args, flows={}, **columns)


def test_fires_on_repeated_regions_without_steps(load_facts):
    # seed_mm64_cold without its ProfilerStep events: the three matmul_add calls are compared instead
    from pista.trace.facts import derive

    facts = derive(_without_steps(load_facts("seed_mm64_cold").trace))
    assert not facts.steps
    (finding,) = analyze(facts, rules=[ID]).findings
    trace = facts.trace
    calls = _events(facts, "matmul_add")
    calls = calls[facts.is_host[calls]]
    calls = calls[np.argsort(trace.ts[calls])]
    r = finding.record
    assert (r.kind, r.name, r.step, r.others) == ("region", "matmul_add", None, 2)
    assert r.first_us == pytest.approx(trace.dur[calls[0]] / 1000)
    assert finding.evidence[0].ts_us == trace.ts[calls[0]] / 1000 and finding.evidence[0].step is None
    assert finding.impact.once and "one-time" in finding.basis


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "seed_mm4096_compile", "gpu/cpu_only",
                                  "big_gpt_eager_20steps"])
def test_silent_after_warm_up(load_facts, name):
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["gpu/profiler_first_step", "seed_mm4096_compile_cold"])
def test_silent_where_the_first_step_is_slow_only_by_the_profilers_buffer_request(load_facts, name):
    # gpu/profiler_first_step: step 0 is 1.8x the others, all of it a 2.6 ms Activity Buffer Request;
    # seed_mm4096_compile_cold: the first call is 7.4x the second, 2.9 of its 3.7 ms excess the request
    assert _findings(load_facts, name) == []
    assert [f.rule for f in analyze(load_facts(name), rules=ONE_TIME_RULES).findings] == ["profiler-overhead"]


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/capture_mlp",
                                  "gpu/capture_transformer", "gpu/capture_mm4096_compile"])
def test_healthy_traces_stay_quiet(load_facts, name):
    # warmed-up captures: none of the one-time rules says anything above info
    mine = analyze(load_facts(name), rules=ONE_TIME_RULES).findings
    assert all(f.severity.value == "info" for f in mine), [(f.rule, f.severity) for f in mine]


def _host_only(trace):
    """The same trace with every device-side event (kernels, copies, GPU regions, flows) removed."""
    from pista.trace.model import DEVICE_CATEGORIES

    keep = ~trace.category_mask(DEVICE_CATEGORIES | {"ac2g"})
    columns = {f.name: getattr(trace, f.name)[keep] for f in dataclasses.fields(trace)
               if isinstance(getattr(trace, f.name), np.ndarray)}
    raw_args = [trace.raw(i) for i in np.flatnonzero(keep).tolist()]  # raw_args go by file row
    return dataclasses.replace(trace, raw_args=raw_args, flows={}, **columns)


def test_host_only_copy_of_the_cold_trace(load_facts):
    # cold-start needs only the host side, so it still fires; the GPU rules stay silent, none crash
    from pista.rules import catalogue
    from pista.trace.facts import derive

    facts = derive(_host_only(load_facts("seed_mm64_cold").trace))
    assert not facts.has_gpu and len(facts.steps) == 3
    mine = ["dominant-event", "many-calls", "gemm-heuristics", "implicit-copy-before-gemm", "profiler-overhead",
            "kernel-variability", "dead-window", "cold-start", "lazy-loading"]
    assert set(mine) <= {r.id for r in catalogue()}
    fired = {f.rule for f in analyze(facts, rules=mine).findings}
    assert "cold-start" in fired
    assert not fired & {"dominant-event", "gemm-heuristics", "implicit-copy-before-gemm", "kernel-variability"}
