"""exposed-communication on the real gloo traces (tests/fixtures/gloo/README.md says how they were made)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, H200_TRACES

from pista.findings import analyze
from pista.rules.exposed_communication import ID, MIN_EXPOSED_SHARE

GLOO = FIXTURES / "gloo"
SLEEP_MS = 30.0


def _finding(name: str, rank: int):
    return analyze(GLOO / name / f"rank-{rank}.json.gz", rules=[ID]).finding(ID)


def test_fires_on_the_rank_that_waits_for_a_slow_peer():
    # straggler_2: rank 1 sleeps 30 ms per step, rank 0 waits it out inside gloo:all_reduce
    finding = _finding("straggler_2", 0)
    assert finding is not None
    assert finding.metrics["exposed_ms_per_step"] > 0.6 * SLEEP_MS
    assert finding.metrics["exposed_share_of_step"] > 0.5
    assert 0.0 <= finding.metrics["overlap_share"] < 0.5
    assert finding.metrics["collectives"] == 20  # 4 buckets x 5 profiled steps
    assert finding.evidence and all(e.name == "gloo:all_reduce" for e in finding.evidence)
    assert all("pt_gloo_runloop" in e.lane or "thread" in e.lane for e in finding.evidence)
    durations = [e.dur_us for e in finding.evidence]
    assert durations == sorted(durations, reverse=True)
    assert "no compute beside it" in finding.message


def test_silent_on_the_slow_rank_it_is_the_one_everyone_waits_for():
    # the slowed rank arrives last at every all-reduce, so they complete soon after it joins
    assert _finding("straggler_2", 1) is None


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_fires_where_gloo_on_two_shared_cores_is_slower_than_the_backward_it_overlaps(name):
    # 0.25 MB buckets over loopback gloo on a 2-core box: each all-reduce outlasts the layer's backward
    finding = _finding(name, 0)
    assert finding is not None and finding.metrics["exposed_share_of_step"] >= MIN_EXPOSED_SHARE


@pytest.mark.parametrize("name", H200_TRACES)
def test_silent_without_collectives(analysis_of, name):
    # single-GPU H200 captures: no NCCL kernel, no gloo, nothing to expose
    assert ID not in analysis_of(name).rules_fired
