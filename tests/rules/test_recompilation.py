from __future__ import annotations

import re

import numpy as np
import pytest


def test_fires_when_a_new_shape_recompiles_each_step(analysis_of):
    analysis = analysis_of("gpu/recompile")
    finding = analysis.finding("recompilation")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    names = trace.name_array[trace.name]
    regions = sorted(n for n in set(names) if n.startswith("Torch-Compiled Region: "))
    assert regions == ["Torch-Compiled Region: 0/1", "Torch-Compiled Region: 0/2", "Torch-Compiled Region: 0/3"]
    assert finding.metrics["compile_ids"] == {"0": ["0/1", "0/2", "0/3"]}
    hashes = {n.split()[3] for n in set(names) if n.startswith("## Call CompiledFxGraph")}
    assert finding.metrics["graphs"] == len(hashes) == 3
    # one Dynamo compile per profiled step (a new size each step), each shown with its ts and step
    dynamo = np.flatnonzero((names == "dynamo") & facts.is_host)
    assert finding.metrics["compiles"] == len(dynamo) == 3
    shown = [e for e in finding.evidence if e.name == "dynamo"]
    assert {(e.ts_us, e.dur_us, e.step) for e in shown} == {
        (trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in dynamo}
    assert {e.step for e in shown} == {2, 3, 4}
    notes = {e.step: e.note for e in shown}
    for step, note in notes.items():
        assert re.match(rf"compile 0/{step - 1}:", note)  # compile ids count up with the steps
    # the compiles dominate the steps (torch: ProfilerStep* 896.080 ms, dynamo 672.992 ms)
    assert finding.metrics["compile_us"] >= trace.dur[dynamo].sum() / 1000
    assert finding.metrics["compile_share_percent"] > 50
    assert "input shapes per call" in finding.message


@pytest.mark.parametrize("name", ["seed_mm64_compile", "seed_mm4096_compile", "series_mlp_compile",
                                  "seed_mm4096_compile_cold", "seed_mm64_warm", "gpu/cpu_only"])
def test_silent_when_compiled_before_the_window(analysis_of, name):
    # seed_mm64_compile runs 'Torch-Compiled Region: 0/1' (recompiled once during warm-up) in every
    # step, but nothing compiles inside the window and no second id appears
    assert analysis_of(name).finding("recompilation") is None
