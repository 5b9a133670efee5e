"""tanh-gelu: transformers' gelu_new (GPT-2) written out op by op."""

from __future__ import annotations

import pytest
import raw

from pista.i18n import localize_finding

RULE = "tanh-gelu"
CHAIN = ("aten::mul", "aten::pow", "aten::mul", "aten::add", "aten::mul", "aten::tanh", "aten::add", "aten::mul")


def _outer_ops(name: str) -> list[dict]:
    """The steps' cpu_ops that no other cpu_op holds, by thread and time (a sweep keeping the latest end)."""
    ops = sorted(raw.in_steps(name, raw.complete(name, "cpu_op")),
                 key=lambda e: (e["tid"], float(e["ts"]), -float(e["dur"])))
    out, end, tid = [], float("-inf"), None
    for e in ops:
        if e["tid"] != tid:
            end, tid = float("-inf"), e["tid"]
        stop = float(e["ts"]) + float(e["dur"])
        if stop > end:
            out.append(e)
            end = stop
    return out


def _chains(name: str) -> list[list[dict]]:
    ops = _outer_ops(name)
    found = []
    for k, e in enumerate(ops):
        if e["name"] == "aten::tanh" and k >= 5 and tuple(o["name"] for o in ops[k - 5:k + 3]) == CHAIN:
            found.append(ops[k - 5:k + 3])
    return found


def test_fires_on_gpt2_s_gelu_new_in_decoding(analysis_of):
    name = "gpu/kv_flash"
    finding = analysis_of(name).finding(RULE)
    assert finding is not None
    chains = _chains(name)
    steps = len(raw.steps(name))
    assert finding.record.chains_per_step == len(chains) / steps == 12  # one per block
    spans = raw.merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for c in chains for e in c])
    idle = raw.total(raw.intersect(raw.idle_in_steps(name), spans)) / steps
    assert finding.record.idle_us_per_step == pytest.approx(idle, rel=0.01)
    assert finding.impact.us == pytest.approx(idle * 7 / 8, rel=0.01)
    assert "approximate='tanh'" in finding.fix and "gelu_pytorch_tanh" in finding.fix


def test_the_other_rules_leave_its_idle(analysis_of):
    from pista.rules import tanh_gelu
    from pista.rules._idle import intersect
    from pista.rules._launches import launch_bound_idle

    analysis = analysis_of("gpu/kv_flash")
    facts = analysis.facts
    gelu = tanh_gelu.claimed_idle(facts)
    assert gelu.total > 0
    assert intersect(launch_bound_idle(facts), gelu).total == 0
    assert sum(f.impact.share for f in analysis.findings) <= 1.0


@pytest.mark.parametrize("name", ["gpu/gpt2_conv1d", "big_gpt_eager_20steps", "series_mlp_eager", "gpu/cpu_only"])
def test_silent_under_one_percent_or_without_the_formula(analysis_of, name):
    # gpt2_conv1d holds six chains a step, but under 1% of its 75 ms step waits on them
    assert analysis_of(name).finding(RULE) is None


def test_spanish_names_the_change(analysis_of):
    finding = localize_finding(analysis_of("gpu/kv_flash").finding(RULE), "es")
    assert "gelu_pytorch_tanh" in finding.fix and "operaciones" in finding.message
