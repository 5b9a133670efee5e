"""graph-break: a torch.compile'd function that Dynamo breaks into several graphs a call."""

from __future__ import annotations

import re

import pytest
import raw

from pista.i18n import localize_finding
from pista.rules._common import PROFILER_HOST_INFLATION

RULE = "graph-break"
REGION = re.compile(r"^Torch-Compiled Region: (\d+)/")
GRAPH = "## Call CompiledFxGraph "


def _broken_calls(name: str) -> list[tuple[dict, list[dict]]]:
    """Per outermost compiled region call in the steps that holds another region: its graph calls in
    time order (raw events; holding = same thread, inside its span)."""
    events = raw.in_steps(name, raw.complete(name))
    regions = [e for e in events if REGION.match(str(e["name"]))]
    graphs = [e for e in events if str(e["name"]).startswith(GRAPH)]
    out = []
    for r in regions:
        if any(o is not r and raw.inside(o, r) for o in regions):
            continue  # held by another region: not the outermost
        if not any(o is not r and raw.inside(r, o) for o in regions):
            continue  # holds no other region: no break
        out.append((r, sorted((g for g in graphs if raw.inside(r, g)), key=lambda g: float(g["ts"]))))
    return out


def _gaps_us(name: str) -> list[float]:
    return [float(b["ts"]) - (float(a["ts"]) + float(a["dur"]))
            for _, gs in _broken_calls(name) for a, b in zip(gs, gs[1:], strict=False)]


@pytest.mark.parametrize(("name", "graphs", "cause", "measured_us"), [
    # unprofiled, paired against graph_break_whole in one process (tests/fixtures/gpu/README.md)
    ("gpu/graph_break_branch", 2, "branch", 16.9),
    ("gpu/graph_break_item", 2, "read", 19.1),
    ("gpu/graph_break_two", 3, "branch", 35.0),
])
def test_impact_is_the_host_time_between_the_graphs(analysis_of, name, graphs, cause, measured_us):
    finding = analysis_of(name).finding(RULE)
    calls = _broken_calls(name)
    steps = len(raw.steps(name))
    assert finding is not None and len(calls) == steps  # every step's call breaks
    r = finding.record
    assert (r.calls, r.graphs_per_call, r.causes[0]) == (len(calls), graphs, cause)
    gap = sum(_gaps_us(name))
    assert r.gap_us_per_step == pytest.approx(gap / steps, rel=0.01) and r.idle_us_per_step is None
    assert finding.impact.us == pytest.approx(gap / steps / PROFILER_HOST_INFLATION, rel=0.01)
    # the profiled estimate lands within a fifth of what removing the breaks saved unprofiled
    assert finding.impact.us == pytest.approx(measured_us, rel=0.2)
    assert not finding.impact.once and finding.severity.value == "warning"


def test_names_the_cause_and_its_fix(analysis_of):
    two = analysis_of("gpu/graph_break_two").finding(RULE)
    assert set(two.record.causes) == {"branch", "read"}
    assert "aten::is_nonzero" in two.message and "aten::item" in two.message
    assert "torch.where" in two.advice and "capture_scalar_outputs" in two.advice and "fullgraph=True" in two.advice
    item = analysis_of("gpu/graph_break_item").finding(RULE)
    assert "aten::is_nonzero" not in item.record.ops_between and "torch.where" not in item.fix
    assert "TORCH_LOGS" in item.fix and "read it every N steps" in item.fix
    assert analysis_of("gpu/graph_break_two").top_fix is two


def test_evidence_is_the_broken_call_and_the_graph_after_each_break(analysis_of):
    finding = analysis_of("gpu/graph_break_two").finding(RULE)
    call, *after = finding.evidence
    assert REGION.match(call.name) and call.detail.graphs == 3
    assert after and all(e.name.startswith(GRAPH) for e in after)
    first_call_gaps = _gaps_us("gpu/graph_break_two")[:len(after)]
    assert [e.detail.gap_us for e in after] == pytest.approx(first_call_gaps, rel=0.01)


@pytest.mark.parametrize("name", ["gpu/graph_break_whole", "seed_mm4096_compile", "seed_mm64_compile",
                                  "series_mlp_compile", "gpu/capture_mlp_compile", "gpu/recompile",
                                  "gpu/recompile_limit", "gpu/compile_warmup", "gpu/elementwise_compiled",
                                  "big_gpt_eager_20steps"])
def test_silent_without_a_break(analysis_of, name):
    assert not _broken_calls(name)
    assert analysis_of(name).finding(RULE) is None


def test_spanish(analysis_of):
    es = localize_finding(analysis_of("gpu/graph_break_branch").finding(RULE), "es")
    assert "torch.where" in es.fix and "rompe el grafo una vez por llamada" in es.fix


def test_breaks_seen_through_aot_autograd_s_compiled_function():
    """Review 4 (rtx4090d_graph_breaks, fetched: no licence to commit it): a torch version that records no
    `## Call CompiledFxGraph`; each of the 3 training calls runs Torch-Compiled Region 0/0 holding 1/0, 2/0 and 3/0,
    each region one AOTAutograd `CompiledFunction`: 3 breaks a call, counted from the raw events."""
    import json
    import os
    from pathlib import Path

    from pista.analysis import analyze

    cache = Path(os.environ.get("PISTA_FOREIGN_CACHE") or Path.home() / ".cache" / "pista" / "foreign")
    path = cache / "rtx4090d_graph_breaks.json"
    if not path.exists():
        pytest.skip("rtx4090d_graph_breaks.json not fetched (scripts/fetch_foreign.py)")
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    tops = [e for e in events if e["name"] == "Torch-Compiled Region: 0/0"]
    graphs = [e for e in events if e["name"] == "CompiledFunction"]
    per_call = [sum(1 for g in graphs if t["ts"] <= g["ts"] <= t["ts"] + t["dur"]) for t in tops]
    f = next(f for f in analyze(str(path), replay=False).findings if f.rule == "graph-break")
    assert per_call == [4, 4, 4] and f.record.calls == len(tops)
    assert f.record.graphs_per_call == pytest.approx(4.0)
