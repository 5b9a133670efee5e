"""straggler: a cross-rank rule. The per-trace check never fires; pista.distributed does, on the
gloo folders where one rank was slowed by a sleep (tests/fixtures/gloo/README.md)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES

from pista.distributed import analyze_ranks
from pista.findings import analyze
from pista.rules import get_rule
from pista.rules.straggler import ID, LATE_MIN_SHARE_OF_STEP, SEVERITY, STEP_SLOWER_RATIO

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


def test_without_collectives_a_rank_with_much_slower_steps_is_flagged(tmp_path):
    # two real H200 traces of the same 4096^3 fp32 matmul, synchronised every step, as the "ranks"
    # of a job without collectives: rank 1 runs with TF32 off (tests/fixtures/gpu/README.md), so its
    # steps take several times longer, like a rank whose setting differs from the others'
    import shutil

    from pista.trace.facts import derive
    from pista.trace.load import load_trace

    shutil.copy(FIXTURES / "gpu" / "tf32_gemm.json.gz", tmp_path / "rank-0.json.gz")
    shutil.copy(FIXTURES / "gpu" / "fp32_gemm.json.gz", tmp_path / "rank-1.json.gz")
    steps = {r: np.median([s.dur for s in derive(load_trace(tmp_path / f"rank-{r}.json.gz")).steps]) for r in (0, 1)}
    assert steps[1] / steps[0] >= STEP_SLOWER_RATIO
    result = analyze_ranks(tmp_path, engine="inline", rules=[ID])
    assert result.cross.matched_collectives == 0
    (finding,) = result.findings
    assert finding.metrics["rank"] == 1
    assert finding.metrics["step_ms"] == pytest.approx(steps[1] / 1e6)
    assert "median step takes" in finding.message
