from __future__ import annotations

import numpy as np
import pytest
import raw
from conftest import FIXTURES
from torch_table import parse_table

from pista.analysis import analyze
from pista.rules.profiler_overhead import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "lazy-loading"]


def _findings(load_facts, name, rules=(ID,)):
    return analyze(load_facts(name), rules=list(rules)).findings


def _profiler_events(name: str) -> list[dict]:
    return [e for e in raw.complete(name, "overhead") if e["name"] in ("Activity Buffer Request", "Buffer Flush")]


def _idle_us(name: str, events: list[dict]) -> float:
    """µs of the events' spans with no device work running."""
    busy = raw.busy_intervals(name)
    total = 0.0
    for e in events:
        a, b = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        total += (b - a) - sum(max(0.0, min(b, t) - max(a, s)) for s, t in busy)
    return total


def test_fires_on_the_buffer_request_of_an_unscheduled_first_step(load_facts):
    # gpu/profiler_first_step: a warm MLP forward under schedule(wait=0, warmup=0, active=3)
    name = "gpu/profiler_first_step"
    facts = load_facts(name)
    trace = facts.trace
    (finding,) = _findings(load_facts, name)
    row = next(r for r in parse_table(FIXTURES / "gpu/profiler_first_step.table.txt").rows
               if r.name == "Activity Buffer Request")
    r = finding.record
    assert r.total_us == pytest.approx(row.cpu_total_us, abs=1.0)  # torch prints ms with 3 decimals
    assert (r.names, r.in_steps, r.steps) == (("Activity Buffer Request",), (0,), 3)
    (request,) = np.flatnonzero(trace.name_array[trace.name] == "Activity Buffer Request")
    assert trace.pid[request] == -1
    host = facts.parent[request]
    assert trace.event_name(host) == "aten::addmm"
    assert [(o.name, o.events) for o in r.ops] == [("aten::addmm", 1)]
    ev = finding.evidence[0]
    assert (ev.name, ev.lane, ev.step) == ("Activity Buffer Request", "profiler overhead", 0)
    assert (ev.ts_us, ev.dur_us) == (trace.ts[request] / 1000, trace.dur[request] / 1000)
    assert f"{100.0 * trace.dur[request] / trace.dur[host]:.1f}% of its wall time" in ev.note
    assert "schedule(wait=1, warmup=1, active=3)" in finding.fix


def test_impact_is_the_idle_time_of_its_events_once(load_facts):
    name = "gpu/profiler_first_step"
    (finding,) = _findings(load_facts, name)
    total = _idle_us(name, _profiler_events(name))
    assert finding.impact.once and finding.impact.us == pytest.approx(total, rel=0.01)
    assert finding.impact.share == pytest.approx(total / raw.window_us(name), abs=0.01)
    assert finding.severity.value == "warning"  # 18% of the window, once, and the program never pays it
    assert "one-time" in finding.basis and finding.impact.once


@pytest.mark.parametrize("name", ["gpu/window_sync_warm", "seed_mm4096_compile_cold"])
def test_fires_without_steps(load_facts, name):
    (finding,) = _findings(load_facts, name)
    assert finding.evidence[0].name == "Activity Buffer Request" and finding.evidence[0].step is None
    work = [e for e in raw.complete(name) if e.get("pid") != -1 and e.get("cat") in (
        "cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset")]
    window = max(float(e["ts"]) + float(e["dur"]) for e in work) - min(float(e["ts"]) for e in work)
    idle = _idle_us(name, _profiler_events(name))
    assert finding.impact.us == pytest.approx(idle, rel=0.01)
    assert finding.impact.share == pytest.approx(idle / window, abs=0.01)
    assert finding.impact.once and "does not pay it" in finding.basis


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "gpu/cpu_only"])
def test_silent_without_overhead_events(load_facts, name):
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_cold", "gpu/window_sync_cold"])
def test_silent_inside_a_cold_step_or_a_dead_window(load_facts, name):
    # the buffer request is part of the first step's (first call's) set-up: cold-start's, dead-window's
    assert _findings(load_facts, name) == []
    assert ID not in {f.rule for f in _findings(load_facts, name, ONE_TIME_RULES)}


def test_silent_where_it_costs_under_one_percent_of_the_step(load_facts):
    # big_gpt_eager_20steps: a 2.97 ms buffer request and an 89 µs flush in one of 20 steps of 52.7 ms
    name = "big_gpt_eager_20steps"
    share = _idle_us(name, _profiler_events(name)) / len(raw.steps(name)) / raw.step_us(name)
    assert 0.001 < share < 0.01
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/capture_mlp",
                                  "gpu/capture_mm64", "gpu/capture_mm4096"])
def test_healthy_traces_stay_quiet(load_facts, name):
    mine = _findings(load_facts, name, ONE_TIME_RULES)
    assert all(f.severity.value == "info" for f in mine), [(f.rule, f.severity) for f in mine]


def test_an_empty_window_is_not_profiler_overhead(tmp_path):
    # issue 35, item 6: a window that recorded no op, region or device work, only runtime calls (a foreign
    # trace: 5 device queries and a synchronize) was read as 8.4% profiler overhead "inflating the ops it lands
    # in"; here gpu/window_sync_warm cut to its runtime calls and the profiler's own events (64% before). The
    # twin, the whole trace, still reports its buffer request inside aten::mm
    def program(e: dict) -> bool:
        return e.get("ph") == "X" and e.get("cat") not in ("overhead", "Trace", "cuda_runtime", "cuda_driver")

    empty = raw.cut("gpu/window_sync_warm", tmp_path, program, "empty")
    assert not [e for e in raw.complete(str(empty)) if program(e)]
    assert analyze(empty).finding("profiler-overhead") is None
    whole = analyze(FIXTURES / "gpu/window_sync_warm.json.gz").finding("profiler-overhead")
    request = raw.complete("gpu/window_sync_warm", "overhead", "Activity Buffer Request")[0]
    assert whole is not None and whole.record.total_us == pytest.approx(float(request["dur"]))


def test_an_op_called_several_times_is_shared_against_all_its_calls():
    """The overhead inside an op's calls is a share of those calls' time together, never over 100% (review 6:
    cs521a_myconv_eager read "24.2 ms inside cudaLaunchKernel (273.2% of its 8.85 ms)", the longest call's; that
    trace has no licence to commit): the text of that record's figures, and of a call the events overrun."""
    from pista.i18n._fluent import catalogue
    from pista.i18n.args.profiler_overhead import _op
    from pista.rules.profiler_overhead import InflatedOp

    say = catalogue("profiler_overhead", "en").line
    text = _op(InflatedOp("cudaLaunchKernel", 24_200.0, 24_300.0, 17, 4), say)
    assert "(99.6% of the 24.3" in text and "of its 4 calls)" in text
    assert "100.0%" in _op(InflatedOp("aten::empty", 3_340.0, 3_330.0, 1, 1), say)
