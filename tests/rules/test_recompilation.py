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
    r = finding.record
    [frame] = r.frames
    assert (frame.frame, frame.ids, frame.entries, frame.compiles) == (0, ("0/1", "0/2", "0/3"), 4, 3)
    hashes = {n.split()[3] for n in set(names) if n.startswith("## Call CompiledFxGraph")}
    assert r.graphs == len(hashes) == 3
    # one Dynamo compile per profiled step (a new size each step), each shown with its ts and step
    dynamo = np.flatnonzero((names == "dynamo") & facts.is_host)
    assert r.compiles == len(dynamo) == 3 and r.autotunes == 3
    shown = [e for e in finding.evidence if e.name == "dynamo"]
    assert {(e.ts_us, e.dur_us, e.step) for e in shown} == {
        (trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in dynamo}
    assert {e.step for e in shown} == {2, 3, 4}
    notes = {e.step: e.note for e in shown}
    for step, note in notes.items():
        assert re.match(rf"compile 0/{step - 1}:", note)  # compile ids count up with the steps
    # the compiles dominate the steps (torch: ProfilerStep* 896.080 ms, dynamo 672.992 ms)
    assert r.compile_us >= trace.dur[dynamo].sum() / 1000
    assert r.step_share_percent > 50
    assert len(r.shapes) == 3 and "input shapes per call" in finding.message.lower()


def test_steady_state_recompiles_cost_every_step(analysis_of):
    from pista.rules.recompilation import STEADY

    finding = analysis_of("gpu/recompile").finding("recompilation")
    r = finding.record
    assert r.kind == STEADY and r.steps_compiling == (2, 3, 4)
    assert finding.severity.value == "critical"
    assert "one-time" not in finding.basis and "recurs" in finding.basis
    assert "mark_dynamic" in finding.fix
    # frame 0 holds 4 of its 8 entries (0/0 before the window), one more per step
    assert r.near_limit == (0,) and r.recompile_limit == 8
    assert "recompile_limit" in finding.message and "4 more step(s)" in finding.message


def test_a_compile_warm_up_in_the_window_is_one_time(analysis_of):
    # gpu/compile_warmup: torch.compile profiled from its first call; step 0 compiles (2.35 s of
    # Dynamo + 66 ms of autotuning), steps 1 and 2 run the compiled graph
    from pista.rules.recompilation import WARMUP

    finding = analysis_of("gpu/compile_warmup").finding("recompilation")
    r = finding.record
    assert r.kind == WARMUP and r.steps_compiling == (0,) and r.compiles == 1 and r.autotunes == 1
    assert r.frames[0].ids == ("0/0",) and not r.near_limit
    assert finding.basis.startswith("one-time")
    assert "warm up before profiling" in finding.fix.lower()
    assert "mark_dynamic" not in finding.advice


def test_warns_when_a_frame_nears_the_recompile_limit(analysis_of):
    # gpu/recompile_limit: 6 shapes compiled before the window (0/0-0/5), then cached ones reused:
    # nothing compiles inside, but the next new shapes would push frame 0 past 8 entries
    from pista.rules.recompilation import NEAR_LIMIT

    finding = analysis_of("gpu/recompile_limit").finding("recompilation")
    r = finding.record
    assert r.kind == NEAR_LIMIT and r.compiles == 0 and r.near_limit == (0,)
    assert r.frames[0].entries == 6 and r.frames[0].ids == ("0/3", "0/4", "0/5")
    assert finding.impact.us == 0 and finding.severity.value == "warning"  # documented exception
    assert "recompile_limit" in finding.message and "eager" in finding.message


@pytest.mark.parametrize("name", ["seed_mm64_compile", "seed_mm4096_compile", "series_mlp_compile",
                                  "seed_mm4096_compile_cold", "seed_mm64_warm", "gpu/cpu_only",
                                  "gpu/capture_mlp_compile"])
def test_silent_when_compiled_before_the_window(analysis_of, name):
    # seed_mm64_compile runs 'Torch-Compiled Region: 0/1' (recompiled once during warm-up) in every
    # step, but nothing compiles inside the window and 2 entries are far from the limit
    assert analysis_of(name).finding("recompilation") is None


COMPILE_TOP = re.compile(r"^dynamo$|^CachingAutotuner\.")


@pytest.mark.parametrize("name", ["gpu/recompile", "gpu/compile_warmup"])
def test_impact_is_the_compile_time_with_the_gpu_idle_from_the_raw_events(analysis_of, name):
    import raw

    finding = analysis_of(name).finding("recompilation")
    events = raw.complete(name)
    steps = raw.steps(name)
    spans = [e for e in events if COMPILE_TOP.search(str(e["name"])) and any(raw.inside(s, e) for s in steps)]
    spans = [e for e in spans if not any(o is not e and raw.inside(o, e) for o in spans)]  # top-level ones
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    user_work = []
    for w in raw.device_work(name):
        launch = runtime.get(w.get("args", {}).get("correlation"))
        if launch is not None and not any(raw.inside(s, launch) for s in spans):
            user_work.append((float(w["ts"]), float(w["ts"]) + float(w["dur"])))
    hidden = sum(max(0.0, min(b, float(s["ts"]) + float(s["dur"])) - max(a, float(s["ts"])))
                 for s in spans for a, b in _union(user_work))
    total = sum(float(s["dur"]) for s in spans) - hidden
    # gpu/recompile compiles in every step (a guard keeps failing); gpu/compile_warmup once, its first compile
    assert finding.impact.once == (name == "gpu/compile_warmup")
    if finding.impact.once:
        assert finding.impact.us == pytest.approx(total, rel=0.01)
        assert finding.impact.share == pytest.approx(min(1.0, total / raw.window_us(name)), abs=0.002)
    else:
        assert finding.impact.us == pytest.approx(total / len(steps), rel=0.01)
        assert finding.impact.share == pytest.approx(min(1.0, total / len(steps) / raw.step_us(name)), abs=0.002)


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def test_every_field_renders_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    for name in ("gpu/recompile", "gpu/compile_warmup", "gpu/recompile_limit"):
        english = analysis_of(name).finding("recompilation")
        spanish = localize_finding(english, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(spanish, part) != getattr(english, part), (name, part)
        assert all(e.note and e.note != n.note for e, n in zip(spanish.evidence, english.evidence, strict=True))


def test_a_single_recompile_reads_as_one_time_in_both_languages(analysis_of):
    import msgspec

    from pista.i18n._fluent import finding_text
    from pista.rules.recompilation import ONCE

    record = msgspec.structs.replace(analysis_of("gpu/recompile").finding("recompilation").record, kind=ONCE,
                                 steps_compiling=(2,), shapes=(), near_limit=())

    def en(part):
        return finding_text("recompilation", part, record, "en")

    for part in ("message", "advice", "fix", "basis"):
        assert en(part) != finding_text("recompilation", part, record, "es"), part
    assert en("basis").startswith("one-time") and "TORCH_LOGS" in en("advice")
