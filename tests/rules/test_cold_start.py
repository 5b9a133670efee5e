from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.cold_start import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def _events(facts, name):
    trace = facts.trace
    return np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))


def test_fires_on_the_unwarmed_profile(load_facts):
    # seed_mm64_cold: schedule(wait=0, warmup=0, active=3) with no warm-up, steps 0..2
    facts = load_facts("seed_mm64_cold")
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    trace = facts.trace
    durs = {n: int(trace.dur[_events(facts, f"ProfilerStep#{n}")[0]]) for n in (0, 1, 2)}
    assert finding.metrics["kind"] == "step"
    assert finding.metrics["first_us"] == pytest.approx(durs[0] / 1000)
    assert finding.metrics["median_others_us"] == pytest.approx(np.median([durs[1], durs[2]]) / 1000)
    assert finding.metrics["ratio"] > 100
    first = finding.evidence[0]
    step0 = _events(facts, "ProfilerStep#0")[0]
    assert (first.name, first.step) == ("ProfilerStep#0", 0)
    assert first.ts_us == trace.ts[step0] / 1000 and first.dur_us == trace.dur[step0] / 1000
    # the ops that filled it: aten::mm carries the most self time (torch: 102.823 ms of 138.464)
    assert finding.evidence[1].name == "aten::mm" and finding.evidence[1].step == 0
    assert finding.evidence[-1].name in ("ProfilerStep#1", "ProfilerStep#2")


def test_fires_on_repeated_regions_without_steps(load_facts):
    # seed_mm4096_compile_cold: no schedule, two calls of the compiled matmul_add
    facts = load_facts("seed_mm4096_compile_cold")
    (finding,) = _findings(load_facts, "seed_mm4096_compile_cold")
    calls = _events(facts, "matmul_add")
    calls = calls[facts.depth[calls] == 0]
    calls = calls[np.argsort(facts.trace.ts[calls])]
    assert finding.metrics["kind"] == "region"
    assert finding.evidence[0].ts_us == facts.trace.ts[calls[0]] / 1000
    assert finding.evidence[0].step is None
    assert finding.metrics["first_us"] == pytest.approx(facts.trace.dur[calls[0]] / 1000)


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "seed_mm4096_compile", "gpu/cpu_only"])
def test_silent_after_warm_up(load_facts, name):
    assert _findings(load_facts, name) == []


def _host_only(trace):
    """The same trace with every device-side event (kernels, copies, GPU regions, flows) removed."""
    import dataclasses

    from pista.trace.model import DEVICE_CATEGORIES

    keep = ~trace.category_mask(DEVICE_CATEGORIES | {"ac2g"})
    columns = {f.name: getattr(trace, f.name)[keep] for f in dataclasses.fields(trace)
               if isinstance(getattr(trace, f.name), np.ndarray)}
    raw_args = [a for a, k in zip(trace.raw_args, keep.tolist(), strict=True) if k]
    return dataclasses.replace(trace, raw_args=raw_args, **columns)


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
