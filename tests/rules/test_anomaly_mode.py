"""anomaly-mode: autograd's anomaly detection left on in training."""

from __future__ import annotations

from pathlib import Path

import pytest
import raw

from pista.i18n import localize_finding

RULE = "anomaly-mode"
CHECKS = ("aten::isnan", "aten::_is_any_true", "aten::item")


def _checks(name: str) -> list[dict]:
    """The check ops directly under a backward node (inside it, with no other op of the node between)."""
    events = raw.in_steps(name, raw.complete(name, "cpu_op"))
    nodes = [e for e in events if e["name"].startswith("autograd::engine::evaluate_function")]
    out = []
    for node in nodes:
        kids = [e for e in events if e is not node and raw.inside(node, e)]
        out += [k for k in kids if k["name"] in CHECKS and not any(o is not k and raw.inside(o, k) for o in kids)]
    return out


@pytest.mark.parametrize(("name", "measured_ms"), [
    # unprofiled, paired with the twin without anomaly mode (tests/fixtures/gpu/README.md)
    ("gpu/anomaly_cnn_on", 8.4),
    ("gpu/anomaly_mlp_on", 4.5),
])
def test_impact_is_the_checks_host_time(analysis_of, name, measured_ms):
    finding = analysis_of(name).finding(RULE)
    checks = _checks(name)
    steps = len(raw.steps(name))
    assert finding is not None and checks
    r = finding.record
    isnan = [c for c in checks if c["name"] == "aten::isnan"]
    assert r.gradients_checked_per_step == pytest.approx(len(isnan) / steps)
    assert finding.impact.us == pytest.approx(sum(float(c["dur"]) for c in checks) / steps, rel=0.01)
    # below what turning it off saved (the forward's tracebacks are not counted), yet most of it
    assert 0.5 * measured_ms * 1000 <= finding.impact.us <= measured_ms * 1000
    assert finding.severity.value == "warning" and r.idle_us_per_step is None
    assert "set_detect_anomaly" in finding.fix


def test_evidence_is_the_costliest_node_s_checks(analysis_of):
    finding = analysis_of("gpu/anomaly_cnn_on").finding(RULE)
    assert [e.name for e in finding.evidence] == list(CHECKS)
    nodes = {e.detail.node for e in finding.evidence}
    assert len(nodes) == 1 and nodes.pop().endswith("Backward0")


@pytest.mark.parametrize("name", ["gpu/anomaly_cnn_off", "gpu/anomaly_mlp_off", "big_gpt_eager_20steps",
                                  "series_mlp_eager", "gpu/cpu_mlp", "gpu/host_sync_item"])
def test_silent_without_it(analysis_of, name):
    assert not any(e["name"] == "aten::isnan" for e in raw.complete(name, "cpu_op"))  # no check to find
    assert analysis_of(name).finding(RULE) is None


def test_spanish(analysis_of):
    es = localize_finding(analysis_of("gpu/anomaly_mlp_on").finding(RULE), "es")
    assert "set_detect_anomaly" in es.fix and "nodos del backward" in es.message


@pytest.mark.parametrize(("name", "forward"), [("savings/h100/anomaly_global__broken", True),
                                               ("savings/h100/anomaly_ctx__broken", False)])
def test_the_forward_s_tracebacks_are_told_apart(name, forward, analysis_of):
    """set_detect_anomaly(True) for the whole run makes each forward op that builds a node record a Python
    traceback (savings/h100/anomaly_global: 76.5% saved unprofiled); detect_anomaly() around backward() only
    does not (anomaly_ctx: 48.2%). Replayed, the first edit takes the forward's traceback time out too."""
    from pista.analysis import analyze

    finding = analysis_of(name).finding(RULE)
    assert finding.record.forward_tracebacks is forward
    replayed = analyze(str(Path(__file__).parents[1] / "fixtures" / f"{name}.json.gz")).finding(RULE)
    assert bool(replayed.edit.host_scale_spans) is forward
    assert ("traceback in every op" in replayed.message) is forward
