"""straggler: a cross-rank rule. The per-trace check never fires; pista.distributed does, on the
gloo folders where one rank was slowed by a sleep (tests/fixtures/gloo/README.md)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from pista.distributed import analyze_ranks
from pista.findings import analyze
from pista.rules import get_rule
from pista.rules.straggler import ID, LATE_MIN_SHARE_OF_STEP, SEVERITY

GLOO = FIXTURES / "gloo"


@pytest.mark.parametrize("name, rank", [("straggler_2", 1), ("straggler_2", 0), ("straggler_4", 2)])
def test_one_trace_alone_never_shows_a_straggler(name, rank):
    assert analyze(GLOO / name / f"rank-{rank}.json.gz").finding(ID) is None


@pytest.mark.parametrize("name, slow", [("straggler_2", 1), ("straggler_4", 2)])
def test_fires_for_the_slowed_rank_only(name, slow):
    result = analyze_ranks(GLOO / name, engine="inline", rules=[ID])
    (finding,) = [f for f in result.findings if f.rule == ID]
    assert finding.severity == SEVERITY and finding.title == get_rule(ID).title
    m = finding.metrics
    assert m["rank"] == slow and m["world"] == len(result.ranks)
    assert m["late_ms"] >= LATE_MIN_SHARE_OF_STEP * m["median_step_ms"]
    # the others waited for it: their exposed communication dwarfs its own
    assert m["peers_exposed_ms"] > 2 * m["own_exposed_ms"]
    assert len(finding.evidence) == 3 and all(e.step in range(2, 7) for e in finding.evidence)


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_silent_on_balanced_jobs(name):
    result = analyze_ranks(GLOO / name, engine="inline", rules=[ID])
    assert result.findings == []
    # the scheduler noise is there (ranks are not perfectly aligned), just not a straggler's signature
    lates = [t.late_ms for t in result.cross.timings]
    assert max(lates) > 0 and max(lates) < LATE_MIN_SHARE_OF_STEP * result.cross.median_step_ms
