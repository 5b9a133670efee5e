"""`pista analyze DIR` over the real gloo traces in tests/fixtures/gloo (see its README for how they
were made): ranks, communication classified and measured, cross-rank timing, engines, CLI."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import defaultdict

import numpy as np
import pytest
from conftest import FIXTURES

from pista.cli import main
from pista.distributed import analyze_ranks
from pista.distributed.straggler import leave_one_out_median

GLOO = FIXTURES / "gloo"
SLEEP_MS = 30.0  # --slow-ms of the straggler captures
BUCKETS = 4  # 4 Linear(256, 256): 0.25 MiB of weight each, bucket_cap_mb=0.25 -> one bucket per layer


@pytest.fixture(scope="module")
def job():
    cache = {}

    def _job(name: str):
        if name not in cache:
            cache[name] = analyze_ranks(GLOO / name, engine="inline")
        return cache[name]

    return _job


def _raw(name: str, rank: int) -> list[dict]:
    with gzip.open(GLOO / name / f"rank-{rank}.json.gz") as fh:
        return json.load(fh)["traceEvents"]


def _complete(events: list[dict], prefix: str) -> list[dict]:
    return sorted((e for e in events if e.get("ph") == "X" and e["name"].startswith(prefix)), key=lambda e: e["ts"])


def _steps(events: list[dict]) -> dict[int, tuple[float, float]]:
    return {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in _complete(events, "ProfilerStep#")}


@pytest.mark.parametrize("name, world", [("balanced_2", 2), ("straggler_2", 2), ("balanced_4", 4),
                                         ("straggler_4", 4)])
def test_ranks_come_from_distributed_info(job, name, world):
    result = job(name)
    assert [r.rank for r in result.ranks] == list(range(world))
    assert {r.rank_from for r in result.ranks} == {"distributedInfo"}
    assert {r.backend for r in result.ranks} == {"gloo"}
    assert {r.world_size for r in result.ranks} == {world}
    assert not result.notices


@pytest.mark.parametrize("name", ["balanced_2", "straggler_4"])
def test_collectives_per_step_match_the_raw_trace(job, name):
    result = job(name)
    for r in result.ranks:
        events = _raw(name, r.rank)
        steps = _steps(events)
        gloo = _complete(events, "gloo:")
        calls = _complete(events, "c10d::allreduce_")
        assert r.comm.domain == "host"
        for s in r.steps:
            lo, hi = steps[s.step]
            inside = [e for e in gloo if lo <= e["ts"] < hi]
            assert s.collectives == len(inside) == BUCKETS
            # the union of the step's all-reduces: no longer than their sum, no shorter than the longest
            assert max(e["dur"] for e in inside) <= s.comm / 1000 + 1e-3 <= sum(e["dur"] for e in inside) + 1e-3
            assert 0 <= s.exposed <= s.comm
        assert r.comm.calls == len(calls) == BUCKETS * len(steps)


def test_exposed_time_is_when_the_main_thread_does_nothing(job):
    # independent measure on the waiting rank: inside each gloo:all_reduce, the time the main thread
    # has no cpu_op open; exposed communication can only be that or less (calls excluded from compute)
    r = job("straggler_2").rank(0)
    events = _raw("straggler_2", 0)
    main_tid = _complete(events, "ProfilerStep#")[0]["tid"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["tid"] == main_tid]
    ends = sorted((e["ts"], e["ts"] + e["dur"]) for e in ops)
    for s in r.steps:
        lo, hi = _steps(events)[s.step]
        gloo = [e for e in _complete(events, "gloo:") if lo <= e["ts"] < hi]
        start, stop = min(e["ts"] for e in gloo), max(e["ts"] + e["dur"] for e in gloo)
        busy = 0.0
        cursor = start
        for a, b in ends:  # sweep the main thread's ops over [start, stop)
            a, b = max(a, cursor), min(b, stop)
            if b > a:
                busy += b - a
                cursor = b
        idle_us = (stop - start) - busy
        assert s.exposed / 1000 >= idle_us - 1e-3  # calls cut out of compute can only add exposure
        assert s.exposed / 1000 <= (stop - start) + 1e-3


def test_the_waiting_rank_is_exposed_and_the_slow_rank_is_not(job):
    result = job("straggler_2")
    waiting, slow = result.cross.timing(0), result.cross.timing(1)
    # rank 0 waits out rank 1's 30 ms sleep inside the all-reduce, less its own few ms of compute
    assert waiting.exposed_ms > 0.6 * SLEEP_MS
    assert slow.exposed_ms < 0.3 * SLEEP_MS
    share = result.rank(0).comm.overlap_share
    assert 0.0 <= share < 0.5 < result.rank(1).comm.overlap_share <= 1.0


@pytest.mark.parametrize("name, slow", [("straggler_2", 1), ("straggler_4", 2)])
def test_the_slowed_rank_is_the_straggler(job, name, slow):
    result = job(name)
    (finding,) = result.cross.findings
    assert finding.rule == "straggler" and finding.record.rank == slow
    assert result.ranks_firing("straggler") == [slow]
    late = result.cross.timing(slow).late_ms
    assert 0.7 * SLEEP_MS < late < 1.5 * SLEEP_MS
    # the same lateness straight from the files: the slow rank's n-th c10d::allreduce_ against the
    # median of the others' (one host, one clock: ts compare directly)
    starts = {r.rank: [e["ts"] for e in _complete(_raw(name, r.rank), "c10d::allreduce_")] for r in result.ranks}
    others = np.median([starts[k] for k in starts if k != slow], axis=0)
    assert np.median(np.array(starts[slow]) - others) / 1000 == pytest.approx(late, abs=1.0)
    assert f"Rank {slow}" in finding.message
    assert all(e.name == "c10d::allreduce_" and e.lane == f"rank {slow}" for e in finding.evidence)


@pytest.mark.parametrize("name", ["balanced_2", "balanced_4"])
def test_no_straggler_when_the_work_is_balanced(job, name):
    result = job(name)
    assert result.cross.findings == []
    assert "straggler" not in result.rules_fired
    assert result.cross.matched_collectives == BUCKETS * 5


def test_a_single_rank_is_never_a_straggler(tmp_path):
    shutil.copy(GLOO / "straggler_2" / "rank-1.json.gz", tmp_path / "rank-1.json.gz")
    result = analyze_ranks(tmp_path, engine="inline")
    assert [r.rank for r in result.ranks] == [1]
    assert "straggler" not in result.rules_fired
    assert any("world_size 2" in n for n in result.notices)


def test_rank_falls_back_to_the_file_name(tmp_path):
    for rank in (0, 1):
        with gzip.open(GLOO / "straggler_2" / f"rank-{rank}.json.gz") as fh:
            doc = json.load(fh)
        del doc["distributedInfo"]
        (tmp_path / f"worker_rank{rank}.json").write_text(json.dumps(doc))
    result = analyze_ranks(tmp_path, engine="inline")
    assert [(r.rank, r.rank_from) for r in result.ranks] == [(0, "file name"), (1, "file name")]
    assert result.ranks_firing("straggler") == [1]


def test_engines_agree(job):
    from distributed import LocalCluster

    expected = job("straggler_2").to_dict()
    pooled = analyze_ranks(GLOO / "straggler_2", engine="local", workers=2).to_dict()
    assert pooled == expected
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        on_dask = analyze_ranks(GLOO / "straggler_2", engine="dask", scheduler=cluster.scheduler_address)
    assert on_dask.to_dict() == expected


def test_leave_one_out_median_matches_brute_force():
    rng = np.random.default_rng(0)
    for ranks in (2, 3, 4, 7):
        values = rng.normal(size=(ranks, 5)).round(1)  # ties included
        brute = np.array([[np.median(np.delete(values[:, k], i)) for k in range(5)] for i in range(ranks)])
        assert np.allclose(leave_one_out_median(values), brute)


def test_cli_json(capsys):
    assert main(["analyze", str(GLOO / "straggler_4"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["world_size"] == 4 and [r["rank"] for r in out["ranks"]] == [0, 1, 2, 3]
    assert {f["rule"] for f in out["findings"] if f["rank"] == 2} >= {"straggler"}
    assert 0 <= out["overlap"]["overlap_share"] <= 1
    steps = out["ranks"][0]["communication"]["steps"]
    assert len(steps) == 5 and all(s["collectives"] == BUCKETS for s in steps)
    assert out["cross_rank"]["ranks"][2]["late_ms"] > 0.7 * SLEEP_MS


def test_cli_json_ranks_findings_by_impact_and_names_the_top_fix(capsys):
    assert main(["analyze", str(GLOO / "straggler_2"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    shares = [f["impact"]["share"] for f in out["findings"]]
    assert shares == sorted(shares, reverse=True)
    assert all(0 <= f["impact"]["share"] <= 1 and f["impact"]["us"] >= 0 and f["impact"]["basis"]
               for f in out["findings"])
    first = out["findings"][0]
    assert (first["rule"], first["rank"], first["severity"]) == ("straggler", 1, "critical")
    assert first["metrics"]["rank"] == 1 and first["metrics"]["extra"]["name"] == "slow_input"
    top = out["top_fix"]
    assert (top["rule"], top["rank"]) == ("straggler", 1) and "slow_input" in top["text"]
    # the waiting rank's exposure less its wait for rank 1: counted once, by the straggler
    exposed = next(f for f in out["findings"] if f["rule"] == "exposed-communication")
    assert exposed["rank"] == 0 and exposed["metrics"]["late_peer"]["rank"] == 1
    assert exposed["impact"]["share"] < first["impact"]["share"]


def test_cli_text_shows_severity_and_impact(capsys):
    assert main(["analyze", str(GLOO / "straggler_2"), "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if line.split()[:1] in (["CRITICAL"], ["WARNING"], ["INFO"])]
    # highest impact first: the straggler (critical), then rank 0's own exposure (what is left of it)
    assert heads[0].startswith("CRITICAL straggler:") and heads[1].startswith("WARNING  exposed-communication:")
    # each with what fixing it saves per step and its share of the step, then how that was estimated
    result = analyze_ranks(GLOO / "straggler_2", engine="inline")
    text = " ".join(lines)
    from pista.i18n._fmt import pct, short_figures, t

    with short_figures():  # figures for people: three significant digits (issue 37)
        for f in (result.cross.findings[0], result.rank(0).findings[0]):
            assert f"{t(f.impact.us)}, {pct(f.impact.share)}: {f.basis[:40]}" in text


def test_cli_text(capsys):
    assert main(["analyze", str(GLOO / "straggler_2"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 rank(s), backend gloo" in out
    assert "straggler: " in out and "Rank 1 reaches its collectives" in out
    assert "exposed-communication" in out


def _fails(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pista: error: ") and "\n" not in err
    return err


def test_bad_folders_fail_in_one_line(capsys, tmp_path):
    assert "no trace files" in _fails(capsys, ["analyze", str(tmp_path)])
    (tmp_path / "rank-0.json").write_text("{not json")
    assert str(tmp_path / "rank-0.json") in _fails(capsys, ["analyze", str(tmp_path)])  # the whole path
    (tmp_path / "rank-0.json").unlink()
    for name in ("a_rank0.json.gz", "b_rank0.json.gz"):
        shutil.copy(GLOO / "balanced_2" / "rank-0.json.gz", tmp_path / name)
    assert "rank 0 appears twice" in _fails(capsys, ["analyze", str(tmp_path)])
    folder = str(GLOO / "balanced_2")
    assert "--engine dask" in _fails(capsys, ["analyze", folder, "--scheduler", "tcp://127.0.0.1:1"])
    assert "--scheduler" in _fails(capsys, ["analyze", folder, "--engine", "dask"])
    assert "--workers" in _fails(capsys, ["analyze", folder, "--workers", "0"])
    assert "--no-table" in _fails(capsys, ["analyze", folder, "--no-table"])


def test_folder_findings_in_spanish(capsys):
    assert main(["analyze", str(GLOO / "straggler_2"), "--workers", "1", "--lang", "es"]) == 0
    out = capsys.readouterr().out
    assert "Rezagado" in out and "El rango 1 llega a sus colectivas" in out
    assert "Comunicación expuesta" in out and "CRÍTICO  straggler" in out
    assert "Rank 1 reaches" not in out and "CRITICAL" not in out and "of its name in the step" not in out


def test_inputs_are_not_modified(tmp_path):
    shutil.copytree(GLOO / "balanced_2", tmp_path / "job")
    before = {p.name: p.read_bytes() for p in (tmp_path / "job").iterdir()}
    analyze_ranks(tmp_path / "job", engine="inline")
    assert {p.name: p.read_bytes() for p in (tmp_path / "job").iterdir()} == before


def test_per_rank_summaries_are_small(job):
    import pickle

    for r in job("straggler_4").ranks:
        assert len(pickle.dumps(r)) < 20_000  # what a worker ships back, vs a ~35 KB gzipped trace


def test_match_keys_are_per_step_and_name(job):
    result = job("balanced_4")
    per_step = defaultdict(int)
    for c in result.rank(0).comm.call_events:
        per_step[c.step] += 1
    assert dict(per_step) == {n: BUCKETS for n in range(2, 7)}


def test_cli_on_a_dask_cluster(capsys):
    from distributed import LocalCluster

    with LocalCluster(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster:
        code = main(["analyze", str(GLOO / "straggler_4"), "--format", "json", "--engine", "dask",
                     "--scheduler", cluster.scheduler_address])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert [f["rank"] for f in out["findings"] if f["rule"] == "straggler"] == [2]


def test_a_scheduler_address_dask_cannot_parse_fails_in_one_line(capsys):
    err = _fails(capsys, ["analyze", str(GLOO / "balanced_2"), "--engine", "dask", "--scheduler", "nowhere"])
    assert "cannot reach the Dask scheduler at nowhere" in err


def test_a_real_nccl_trace_counts_its_collectives_and_no_phantom_communication():
    # one rank on one H200 (tests/fixtures/nccl/README.md): NCCL's all-reduce over one rank
    # launches no kernel, so the calls are there but there is no communication work to measure
    folder = FIXTURES / "nccl" / "world_1"
    with gzip.open(folder / "rank-0.json.gz") as fh:
        raw = json.load(fh)
    events = raw["traceEvents"]
    calls = _complete(events, "c10d::allreduce_")
    assert len(calls) == BUCKETS * 5
    assert not [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
    (rank,) = analyze_ranks(folder, engine="inline").ranks
    assert (rank.rank, rank.backend, rank.world_size) == (0, "nccl", raw["distributedInfo"]["world_size"])
    assert rank.comm.calls == len(calls)
    assert rank.comm.collectives == 0 and rank.comm.comm == 0 and rank.comm.overlap_share is None
    rules = {f.rule for f in rank.findings}
    assert "exposed-communication" not in rules and "straggler" not in rules
    assert "overhead-bound" in rules  # 1024-wide layers at batch 256: the GPU is busy ~10% of the window


def test_many_findings_wrap_in_their_column_and_keep_the_numbers(tmp_path, capsys):
    # two unrelated real traces as ranks, each with several findings (one fact is one finding: the cold
    # seed's first step is one cold-start finding; the autocast GPT has casts, optimizer, many calls...)
    shutil.copy(FIXTURES / "seed_mm64_cold.json.gz", tmp_path / "rank-0.json.gz")
    shutil.copy(FIXTURES / "gpu" / "gpt_autocast.json.gz", tmp_path / "rank-1.json.gz")
    assert main(["analyze", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("rank"))
    assert header.split() == ["rank", "verdict", "steps", "step", "ms", "comm", "ms", "exposed", "ms", "overlap",
                              "late", "ms", "findings"]
    result = analyze_ranks(tmp_path, engine="inline")
    for r in result.ranks:
        row = next(line for line in lines if line.split()[:1] == [str(r.rank)])
        assert row.split()[1:3] == [r.summary["verdict"], str(len(r.steps))]
        listed = " ".join(lines[lines.index(row):lines.index(row) + 4])
        assert len(r.findings) >= 2 and all(f.rule in listed for f in r.findings)
    assert max(len(r.findings) for r in result.ranks) >= 3
