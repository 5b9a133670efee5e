"""straggler: a cross-rank rule. The per-trace check never fires; pista.distributed does, on the
gloo folders where one rank was slowed by a sleep (tests/fixtures/gloo/README.md)."""

from __future__ import annotations

import shutil
import statistics
from collections import defaultdict

import msgspec
import numpy as np
import pytest
from conftest import FIXTURES

from pista.analysis import analyze
from pista.distributed import analyze_ranks
from pista.i18n import localize_finding
from pista.rules import get_rule
from pista.rules.straggler import (
    ID,
    LATE_MIN_SHARE_OF_STEP,
    STEP_SLOWER_RATIO,
    Cause,
    LateCall,
    SlowStep,
)

GLOO = FIXTURES / "gloo"
SLEEP_MS = 30.0  # --slow-ms of the straggler captures


@pytest.fixture(scope="module")
def job():
    cache = {}

    def _job(name: str):
        if name not in cache:
            cache[name] = analyze_ranks(GLOO / name, engine="inline", rules=[ID])
        return cache[name]

    return _job


@pytest.fixture(scope="module")
def slow_steps_job(tmp_path_factory):
    # two real H200 traces of the same 4096^3 fp32 matmul, synchronised every step, as the "ranks"
    # of a job without collectives: rank 1 runs with TF32 off (tests/fixtures/gpu/README.md), so its
    # steps take several times longer, like a rank whose setting differs from the others'
    folder = tmp_path_factory.mktemp("slow_steps")
    shutil.copy(FIXTURES / "gpu" / "tf32_gemm.json.gz", folder / "rank-0.json.gz")
    shutil.copy(FIXTURES / "gpu" / "fp32_gemm.json.gz", folder / "rank-1.json.gz")
    return analyze_ranks(folder, engine="inline", rules=[ID])


@pytest.mark.parametrize("name, rank", [("straggler_2", 1), ("straggler_2", 0), ("straggler_4", 2)])
def test_one_trace_alone_never_shows_a_straggler(name, rank):
    assert analyze(GLOO / name / f"rank-{rank}.json.gz").finding(ID) is None


@pytest.mark.parametrize("name, slow", [("straggler_2", 1), ("straggler_4", 2)])
def test_fires_for_the_slowed_rank_only(job, name, slow):
    result = job(name)
    (finding,) = [f for f in result.findings if f.rule == ID]
    assert finding.title == get_rule(ID).title
    r = finding.record
    assert r.rank == slow and r.world == len(result.ranks) and r.cause == Cause.LATE
    assert r.late_us >= LATE_MIN_SHARE_OF_STEP * r.median_step_us
    # the others waited for it: their exposed communication dwarfs its own
    assert r.peers_exposed_us > 2 * r.own_exposed_us
    assert len(finding.evidence) == 3 and all(e.step in range(2, 7) for e in finding.evidence)
    assert all(isinstance(e.detail, LateCall) and e.detail.late_us > 0.7 * SLEEP_MS * 1000 for e in finding.evidence)
    # what it does that the others do not: the README's record_function("slow_input") with the sleep
    assert r.extra is not None and r.extra.name == "slow_input" and not r.extra.device
    assert 0.9 * SLEEP_MS * 1000 < r.extra.own_us - r.extra.others_us < 1.2 * SLEEP_MS * 1000
    assert "slow_input" in finding.fix and "slow_input" in finding.advice


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_silent_on_balanced_jobs(job, name):
    result = job(name)
    assert result.findings == []
    # the scheduler noise is there (ranks are not perfectly aligned), just not a straggler's signature
    lates = [t.late_ms for t in result.cross.timings]
    assert max(lates) > 0 and max(lates) < LATE_MIN_SHARE_OF_STEP * result.cross.median_step_ms


def test_without_collectives_a_rank_with_much_slower_steps_is_flagged(slow_steps_job):
    import raw

    steps = {r: raw.median_step_us(f"gpu/{name}") for r, name in ((0, "tf32_gemm"), (1, "fp32_gemm"))}
    assert steps[1] / steps[0] >= STEP_SLOWER_RATIO
    result = slow_steps_job
    assert result.cross.matched_collectives == 0
    (finding,) = result.findings
    r = finding.record
    assert r.rank == 1 and r.cause == Cause.SLOW_STEPS
    assert r.step_us == pytest.approx(steps[1], rel=1e-6)
    assert "median step takes" in finding.message
    assert all(isinstance(e.detail, SlowStep) and e.name.startswith("ProfilerStep#") for e in finding.evidence)
    # what differs: the fp32 SIMT GEMM kernel that only the TF32-off rank runs
    fp32_kernels = {e["name"] for e in raw.complete("gpu/fp32_gemm", "kernel")}
    tf32_kernels = {e["name"] for e in raw.complete("gpu/tf32_gemm", "kernel")}
    assert r.extra is not None and r.extra.device and r.extra.others_us == 0
    assert any(k.startswith(r.extra.name.removesuffix("...")) for k in fp32_kernels - tf32_kernels)


# --- impact ---------------------------------------------------------------------------------------

def _raw_wait_per_step(name: str, slow: int, world: int) -> float:
    """µs per step the others wait for the slow rank, from the files: per step, the median over its
    all-reduce calls of (slow rank's call start - the median of the other ranks' starts of the same
    call), none if early, averaged over the steps (one host, one clock: ts compare directly)."""
    import raw

    def calls(rank: int) -> dict[tuple[int, int], float]:
        trace = f"gloo/{name}/rank-{rank}"
        out = {}
        for s in raw.steps(trace):
            inside = sorted(e["ts"] for e in raw.complete(trace, "cpu_op", "c10d::allreduce_") if raw.inside(s, e))
            number = int(s["name"].split("#")[1])
            out.update({(number, k): float(ts) for k, ts in enumerate(inside)})
        return out

    starts = {rank: calls(rank) for rank in range(world)}
    by_step = defaultdict(list)
    for key, ts in starts[slow].items():
        others = statistics.median(starts[r][key] for r in starts if r != slow)
        by_step[key[0]].append(ts - others)
    return float(np.mean([max(0.0, statistics.median(v)) for v in by_step.values()]))


@pytest.mark.parametrize("name, slow, world", [("straggler_2", 1, 2), ("straggler_4", 2, 4)])
def test_impact_is_the_wait_per_step_from_the_raw_events(job, name, slow, world):
    import raw

    (finding,) = job(name).findings
    wait = _raw_wait_per_step(name, slow, world)
    assert 0.9 * SLEEP_MS * 1000 < wait < 1.2 * SLEEP_MS * 1000  # the sleep, as the capture planted it
    # pista aligns the ranks' clocks on collective ends: on one host that moves them by ~0.1 ms
    assert finding.impact.us == pytest.approx(wait, abs=200.0)
    assert finding.record.wait_us == finding.impact.us
    share = finding.impact.us / raw.median_step_us(f"gloo/{name}/rank-{slow}")
    assert finding.impact.share == pytest.approx(share, abs=1e-6)
    assert finding.severity.value == "critical"  # the others wait over a fifth of every step
    assert "wait" in finding.basis


def test_impact_without_collectives_is_the_step_excess(slow_steps_job):
    import raw

    (finding,) = slow_steps_job.findings
    own, others = raw.median_step_us("gpu/fp32_gemm"), raw.median_step_us("gpu/tf32_gemm")
    assert finding.impact.us == pytest.approx(own - others, rel=1e-6)
    assert finding.impact.share == pytest.approx((own - others) / own, rel=1e-6)
    assert finding.severity.value == "critical"


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_no_severity_on_healthy_jobs(name):
    # balanced work: no finding at all, so nothing of severity warning or critical, and no top fix from
    # this rule (the ranks' own exposed communication is another rule's)
    result = analyze_ranks(GLOO / name, engine="inline")
    assert [f for f in result.findings if f.rule == ID] == []
    top = result.to_dict()["top_fix"]
    assert top is None or top["rule"] != ID


def test_every_field_renders_in_spanish(job, slow_steps_job):
    late = job("straggler_2").findings[0]
    slow = slow_steps_job.findings[0]
    no_cause = type(late)(late.rule, msgspec.structs.replace(late.record, extra=None), late.impact,
                          late.evidence)
    for finding in (late, slow, no_cause):
        es = localize_finding(finding, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(es, part) and getattr(es, part) != getattr(finding, part), part
        assert all(e.note and e.note != en.note for e, en in zip(es.evidence, finding.evidence, strict=True))
