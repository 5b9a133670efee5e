"""pista check, the CI gate: exit codes on real traces, the baseline comparison, the formats, and
[tool.pista] settings."""

from __future__ import annotations

import gzip
import html
import json
import re
import subprocess
import sys

import pytest
import raw
from conftest import fixture

from pista.cli import main
from pista.findings import JSON_SCHEMA_VERSION
from pista.i18n._fmt import num, pct, short_figures, t


def _check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


def test_fails_on_warnings_and_passes_above_them(capsys, analysis_of):
    code, out = _check(capsys, str(fixture("gpu/host_sync_item")))
    assert code == 1 and out.startswith("pista check") and "host-sync" in out
    # seed_mm4096_warm's worst finding is a warning (the unfused bias, 19% of the step)
    worst = max(f.severity.rank for f in analysis_of("seed_mm4096_warm").findings)
    code, _ = _check(capsys, str(fixture("seed_mm4096_warm")), "--fail-on", "critical")
    assert worst == 1 and code == 0
    code, _ = _check(capsys, str(fixture("seed_mm4096_warm")), "--fail-on", "warning")
    assert code == 1


def test_a_compiled_step_slower_than_its_eager_baseline_fails(capsys):
    new, old = fixture("seed_mm4096_compile"), fixture("seed_mm4096_warm")
    code, out = _check(capsys, str(new), "--baseline", str(old), "--max-regression", "5", "--fail-on", "critical",
                       "--format", "json")
    data = json.loads(out)
    reg = data["regression"]
    assert code == 1 and reg["failed"] and data["passed"] is False
    assert abs(reg["step_us"] - raw.step_us("seed_mm4096_compile")) <= 0.001 * reg["step_us"]
    assert abs(reg["baseline_step_us"] - raw.step_us("seed_mm4096_warm")) <= 0.001 * reg["baseline_step_us"]
    assert reg["change_percent"] > 5
    assert data["schema_version"] == JSON_SCHEMA_VERSION == 2 and data["pista_version"]
    # within a looser limit it passes
    code, _ = _check(capsys, str(new), "--baseline", str(old), "--max-regression", "200", "--fail-on", "critical")
    assert code == 0


def test_markdown_fits_a_job_summary(capsys):
    code, out = _check(capsys, str(fixture("gpu/host_sync_item")), "--format", "markdown")
    assert code == 1 and out.startswith("### ❌ pista check")
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| | severity | rule |") and any("`host-sync`" in r for r in rows)
    assert all(r.count(" | ") == rows[0].count(" | ") for r in rows[2:])  # no cell breaks the table


# An op name that would be a link, an image, HTML, code, emphasis, a table cell and GFM autolinks
MARKDOWN_NAME = ("[click](http://evil.example/x) ![img](http://evil.example/p.png) <img src=x onerror=alert(1)> "
                 "https://evil.example www.evil.example a@evil.example `code` **bold** | cell \\[x\\]")


def test_markdown_shows_names_as_text(capsys, tmp_path):
    # the names went into the job summary as Markdown: links, images and HTML from a trace
    markdown_it = pytest.importorskip("markdown_it")
    doc = json.loads(gzip.decompress(fixture("gpu/host_sync_item").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("name") == "aten::item":  # named in both findings' fix
            e["name"] = MARKDOWN_NAME
    path = tmp_path / "t[x](javascript:alert(1))`x`.json"
    path.write_text(json.dumps(doc))
    code, out = _check(capsys, str(path), "--format", "markdown")
    assert code == 1
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(out)
    assert not re.search(r"<(a|img|strong|em)\b", page)  # no link, image or emphasis made
    codes = re.findall("<code>(.*?)</code>", page)
    assert html.unescape(codes[0]) == str(path)  # the trace's path, as code, whole
    assert all(re.fullmatch("[a-z0-9-]+", c) for c in codes[1:])  # and the rule ids: no code from a name
    text = html.unescape(re.sub("<[^>]+>", "", page))
    assert MARKDOWN_NAME in text  # the name reads as itself
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert len({len(re.findall(r"(?<!\\)\|", r)) for r in rows}) == 1  # no cell added
    # GFM autolinks (not in CommonMark): no scheme, www. or address left unescaped
    assert not re.search(r"(?<!\\)(:|www\.|@)", "".join(rows[2:]))  # the findings' rows


def test_bad_input_is_exit_2(capsys, tmp_path):
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    assert main(["check", str(fixture("gpu/host_sync_item")), "--max-regression", "5"]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_tool_pista_in_pyproject(tmp_path):
    trace = fixture("gpu/host_sync_item")
    (tmp_path / "pyproject.toml").write_text('[tool.pista]\nignore = ["host-sync", "overhead-bound"]\n')
    out = subprocess.run([sys.executable, "-m", "pista", "check", str(trace), "--format", "json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    rules = {f["rule"] for f in json.loads(out.stdout)["findings"]}
    assert not rules & {"host-sync", "overhead-bound"}
    # a rule's named threshold, as pista explain lists it
    (tmp_path / "pyproject.toml").write_text('[tool.pista.rules.host-sync]\nMIN_SYNCS_PER_STEP = 100.0\n')
    out = subprocess.run([sys.executable, "-m", "pista", "analyze", str(trace), "--format", "json"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert "host-sync" not in {f["rule"] for f in json.loads(out.stdout)["findings"]}
    (tmp_path / "pyproject.toml").write_text('[tool.pista]\nselect = ["host-synk"]\n')
    out = subprocess.run([sys.executable, "-m", "pista", "analyze", str(trace)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "did you mean host-sync?" in out.stderr and out.stderr.count("\n") == 1


def test_a_one_time_cost_is_shown_as_once(capsys, analysis_of):
    # gpu/window_sync_cold: a dead window before the first launch, 99% of the window, paid once
    name = "gpu/window_sync_cold"
    (dead,) = [f for f in analysis_of(name).findings if f.rule == "dead-window"]
    code, out = _check(capsys, str(fixture(name)), "--format", "json")
    (row,) = [f for f in json.loads(out)["findings"] if f["rule"] == "dead-window"]
    assert row["impact_once"] is True and row["impact_us"] == dead.impact.us and row["severity"] == "warning"
    code, out = _check(capsys, str(fixture(name)))
    with short_figures():  # text for people: three significant digits (issue 37)
        assert f"({t(dead.impact.us)} once, {pct(dead.impact.share)} of the window)" in out
        code, out = _check(capsys, str(fixture(name)), "--format", "markdown")
        assert f"| {num(dead.impact.us, 1)} once |" in out
