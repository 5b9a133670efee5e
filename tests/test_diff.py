"""`pista diff`: what changed between two real traces, with the expectations read from the tables
torch itself printed for them (the `.table.txt` beside each fixture)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture
from torch_table import parse_table

from pista.analysis import analyze
from pista.cli import main
from pista.diff import CHANGE_MIN_US, PER_STEP, WHOLE_WINDOW, Side, _changed, diff

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}


def torch_names(name: str) -> set[str]:
    # torch cuts long names to 52 characters + "...": keep only the whole ones
    return {r.name for r in parse_table(FIXTURES / f"{name}.table.txt").rows if not r.name.endswith("...")}


def torch_row(name: str, row: str):
    return next(r for r in parse_table(FIXTURES / f"{name}.table.txt").rows if r.name == row)


def without_step(name: str, number: int, out: Path) -> Path:
    """The fixture with ProfilerStep#number taken out: its region, the host events that started in
    its span, and the device work, GPU regions and flow arrows linked to them. Device work is
    dropped by link, not by time: the previous step's kernels still run during this step's span."""
    data = json.loads(gzip.decompress(fixture(name).read_bytes()))
    events = data["traceEvents"]
    step = next(e for e in events if e.get("name") == f"ProfilerStep#{number}")
    lo, hi = step["ts"], step["ts"] + step["dur"]
    host = [e for e in events if e.get("ph") in ("X", "i") and e.get("cat") not in GPU_CATEGORIES
            and lo <= e["ts"] < hi]
    correlations = {e["args"]["correlation"] for e in host if "correlation" in e.get("args", {})}
    external_ids = {e["args"]["External id"] for e in host if "External id" in e.get("args", {})}
    drop = {id(e) for e in host}
    for e in events:
        args = e.get("args", {})
        linked = e.get("cat") in GPU_CATEGORIES and (args.get("correlation") in correlations
                                                     or args.get("External id") in external_ids)
        arrow = e.get("ph") in ("s", "f") and e.get("id") in correlations
        if linked or arrow:
            drop.add(id(e))
    data["traceEvents"] = [e for e in events if id(e) not in drop]
    out.write_text(json.dumps(data))
    return out


def test_eager_vs_compiled_mm_and_add_became_addmm(analysis_of):
    d = diff(analysis_of("seed_mm4096_warm"), analysis_of("seed_mm4096_compile"))
    # as many steps (3) on both sides: the whole windows, matching torch's tables
    assert d.mode == WHOLE_WINDOW and d.note == "whole window: A and B both have 3 steps"
    eager, compiled = torch_names("seed_mm4096_warm"), torch_names("seed_mm4096_compile")
    assert {"aten::mm", "aten::add"} <= eager - compiled and "aten::addmm" in compiled - eager
    ops_appeared, ops_vanished = d.names("op", "appeared"), d.names("op", "vanished")
    assert {"aten::mm", "aten::add", "aten::matmul"} <= ops_vanished
    assert "aten::addmm" in ops_appeared
    # every whole-named row torch printed in only one of the two tables is on the right list
    everything_a = ops_vanished | d.names("kernel", "vanished") | d.names("gpu-annotation", "vanished")
    everything_b = ops_appeared | d.names("kernel", "appeared") | d.names("gpu-annotation", "appeared")
    assert (eager - compiled) <= everything_a
    assert (compiled - eager) <= everything_b
    # the GEMM kernel changed: the compiled one carries the bias epilogue
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in d.names("kernel", "vanished")
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT" in d.names("kernel", "appeared")
    assert d.a.self_cpu_total_us == pytest.approx(parse_table(FIXTURES / "seed_mm4096_warm.table.txt")
                                                  .self_cpu_total_us, abs=0.01)
    assert d.b.self_device_total_us == pytest.approx(parse_table(FIXTURES / "seed_mm4096_compile.table.txt")
                                                     .self_device_total_us, abs=0.01)


def test_64_vs_4096_same_ops_far_more_gpu_time(analysis_of):
    small, large = analysis_of("seed_mm64_warm"), analysis_of("seed_mm4096_warm")
    d = diff(small, large)
    # the same program: no aten op appears or vanishes
    assert not {n for n in d.names("op", "appeared") | d.names("op", "vanished") if n.startswith("aten::")}
    changed = {r.name: r for r in d.select("op", "changed")}
    for op in ("aten::mm", "aten::add"):
        before, after = torch_row("seed_mm64_warm", op), torch_row("seed_mm4096_warm", op)
        assert changed[op].a.self_device_us == pytest.approx(before.self_device_us, abs=0.01)
        assert changed[op].b.self_device_us == pytest.approx(after.self_device_us, abs=0.01)
    # cuBLAS picks another GEMM kernel (tile) for the bigger matrices
    assert "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT" in d.names("kernel", "vanished")
    assert "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" in d.names("kernel", "appeared")
    assert (d.a.verdict, d.b.verdict) == (small.summary.verdict, large.summary.verdict)
    assert d.a.verdict == "overhead-bound" and d.b.verdict == "compute-bound"
    lost = {f["rule"] for f in d.findings_lost}
    gained = {f["rule"] for f in d.findings_gained}
    assert lost == set(small.rules_fired) - set(large.rules_fired)
    assert gained == set(large.rules_fired) - set(small.rules_fired)
    assert "overhead-bound" in lost and "dominant-event" in gained  # compute-bound is the verdict, its kernel one finding


def test_a_trace_against_itself_changes_nothing(analysis_of):
    a = analysis_of("series_mlp_eager")
    d = diff(a, a)
    assert d.mode == WHOLE_WINDOW
    assert all(r.status == "same" for r in d.rows)
    assert d.findings_gained == [] and d.findings_lost == []


def test_cli_formats(tmp_path, capsys):
    a, b = str(fixture("seed_mm4096_warm")), str(fixture("seed_mm4096_compile"))
    assert main(["diff", a, b]) == 0
    text = capsys.readouterr().out
    assert "+ aten::addmm" in text and "- aten::mm" in text and "compute-bound -> " in text
    assert main(["diff", a, b, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "aten::addmm" in {r["name"] for r in out["rows"]["op"]["appeared"]}
    assert out["mode"] == "whole-window" and out["steps"] == {"a": 3, "b": 3}
    page = tmp_path / "diff.html"
    assert main(["diff", a, b, "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "aten::addmm" in html and "<script" not in html
    assert main(["diff", a, str(tmp_path / "missing.json")]) == 2


def test_a_step_fewer_compares_per_step(analysis_of, tmp_path):
    # the audit's case: one ProfilerStep (the last, as with schedule active=2 against active=3) fewer
    a = analysis_of("seed_mm4096_warm")
    b = analyze(without_step("seed_mm4096_warm", 4, tmp_path / "minus_step4.json"))
    assert (a.summary.steps, b.summary.steps) == (3, 2)
    d = diff(a, b)
    assert d.mode == PER_STEP and d.note.startswith("per step: A has 3 steps, B has 2")
    # the same program step for step: nothing appears or vanishes, and every row runs as often
    assert all(r.status in ("same", "changed") for r in d.rows)
    assert {(r.kind, r.name) for r in d.rows} >= {("op", "aten::mm"), ("op", "ProfilerStep*"),
                                                 ("kernel", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")}
    for r in d.rows:
        assert r.a.calls == pytest.approx(r.b.calls, abs=1e-9), r.name
        assert r.b.self_device_us == pytest.approx(r.a.self_device_us, rel=0.02, abs=1.0), r.name
        # this fixture's host side is still warming up (its steps take 245, 160 and 108 µs), so
        # dropping the fastest step raises the per-step host times by up to a few µs, ~25%
        assert r.b.self_cpu_us == pytest.approx(r.a.self_cpu_us, rel=0.3, abs=CHANGE_MIN_US), r.name
    # totals per step: the GPU's work is the same; the host's is the mean step (one thread, all nested)
    assert d.b.self_device_total_us == pytest.approx(d.a.self_device_total_us, rel=0.01)
    for t in (d.a, d.b):
        assert t.self_cpu_total_us == pytest.approx(t.step_avg_us, rel=1e-6)
    assert d.b.self_cpu_total_us == pytest.approx(d.a.self_cpu_total_us, rel=0.2)
    # the closing cudaDeviceSynchronize runs outside the steps: kept whole, on both sides alike
    assert d.a.outside_steps_self_cpu_us == pytest.approx(216.412, abs=0.01)
    assert d.b.outside_steps_self_cpu_us == pytest.approx(d.a.outside_steps_self_cpu_us, abs=0.01)
    assert not [r for r in d.rows if r.name == "cudaDeviceSynchronize"]


def test_a_step_fewer_of_twenty_changes_nothing(analysis_of, tmp_path):
    a = analysis_of("big_gpt_eager_20steps")
    b = analyze(without_step("big_gpt_eager_20steps", 21, tmp_path / "minus_step21.json"))
    d = diff(a, b)
    assert d.mode == PER_STEP and d.note.startswith("per step: A has 20 steps, B has 19")
    assert [r.name for r in d.rows if r.status != "same"] == []
    assert d.b.self_cpu_total_us == pytest.approx(d.a.self_cpu_total_us, rel=0.03)
    assert d.b.self_device_total_us == pytest.approx(d.a.self_device_total_us, rel=0.01)


def test_a_side_without_steps_compares_whole_windows(analysis_of):
    d = diff(analysis_of("seed_mm4096_warm"), analysis_of("seed_mm4096_compile_cold"))
    assert d.mode == WHOLE_WINDOW and "B has no ProfilerStep regions" in d.note
    assert d.a.self_cpu_total_us == pytest.approx(analysis_of("seed_mm4096_warm").summary.self_cpu_total_us)


def test_calls_per_step_change_by_a_whole_call_over_the_shorter_run():
    def side(calls: float) -> Side:
        return Side(calls, 10.0, 10.0, 0.0, 0.0)

    # run every other step: 2 calls in 3 steps, 3 in 5; no change
    assert not _changed(side(2 / 3), side(3 / 5), fewest_steps=3)
    assert _changed(side(1.0), side(2.0), fewest_steps=3)
    assert _changed(side(3), side(2)) and not _changed(side(3), side(3))


def test_cli_says_per_step_in_every_format(tmp_path, capsys):
    a = str(fixture("seed_mm4096_warm"))
    b = str(without_step("seed_mm4096_warm", 4, tmp_path / "minus_step4.json"))
    note = "per step: A has 3 steps, B has 2"
    assert main(["diff", a, b]) == 0
    text = capsys.readouterr().out
    assert note in text and "Self CPU / step" in text
    assert main(["diff", a, b, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "per-step" and out["steps"] == {"a": 3, "b": 2} and note in out["note"]
    assert out["b"]["self_device_total_us"] == pytest.approx(out["a"]["self_device_total_us"], rel=0.01)
    assert all(r["a"]["calls"] == pytest.approx(1.0) for rows in out["rows"]["op"].values() for r in rows)
    page = tmp_path / "diff.html"
    assert main(["diff", a, b, "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert note in html and "calls/step A" in html
