"""`pista diff`: what changed between two real traces, with the expectations read from the tables
torch itself printed for them (the `.table.txt` beside each fixture)."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, fixture
from torch_table import parse_table

from pista.cli import main
from pista.diff import diff


def torch_names(name: str) -> set[str]:
    # torch cuts long names to 52 characters + "...": keep only the whole ones
    return {r.name for r in parse_table(FIXTURES / f"{name}.table.txt").rows if not r.name.endswith("...")}


def torch_row(name: str, row: str):
    return next(r for r in parse_table(FIXTURES / f"{name}.table.txt").rows if r.name == row)


def test_eager_vs_compiled_mm_and_add_became_addmm(analysis_of):
    d = diff(analysis_of("seed_mm4096_warm"), analysis_of("seed_mm4096_compile"))
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
    assert "overhead-bound" in lost and "compute-bound" in gained


def test_a_trace_against_itself_changes_nothing(analysis_of):
    a = analysis_of("series_mlp_eager")
    d = diff(a, a)
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
    page = tmp_path / "diff.html"
    assert main(["diff", a, b, "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "aten::addmm" in html and "<script" not in html
    assert main(["diff", a, str(tmp_path / "missing.json")]) == 2
