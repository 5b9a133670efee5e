"""Issue 36: a rule that raises does not sink the reading (pista.isolation). Its findings (or, where the
engine cannot replay its fix, its replayed impact) are left out; every other finding is what the reading
without that rule gives; a notice names the rule and the exception's first line, in the reading's language;
`pista analyze` exits 0 and `pista check` does not pass."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from conftest import fixture

from pista.analysis import analyze
from pista.cli import main
from pista.i18n import localize
from pista.rules import catalogue, get_rule

TRACE = "gpu/host_sync_item"
RULE = "host-sync"


def _others() -> list[str]:
    return [r.id for r in catalogue() if r.id != RULE]


@pytest.fixture
def broken(monkeypatch):
    """host-sync's check raises a ZeroDivisionError whose text has a second line and a terminal escape."""
    def check(ctx):
        raise ZeroDivisionError("a bug\x1b[31m in the rule\nsecond line")

    monkeypatch.setenv("PISTA_STRICT_RULES", "0")
    monkeypatch.setattr(get_rule(RULE).module, "check", check)


def _said(analysis) -> list[str]:
    return [n for n in analysis.notices if f"rule {RULE} failed" in n]


def test_the_other_findings_are_those_of_the_reading_without_the_rule(broken):
    path = fixture(TRACE)
    reading = analyze(path)
    without = analyze(path, rules=_others())
    assert RULE not in reading.rules_fired and reading.findings
    assert [f.to_dict() for f in reading.findings] == [f.to_dict() for f in without.findings]
    assert reading.summary == without.summary
    assert [n for n in reading.notices if n not in _said(reading)] == without.notices
    (said,) = _said(reading)
    assert "(ZeroDivisionError: a bug\x1b[31m in the rule)" in said and "second line" not in said
    assert [(f.rule, f.stage) for f in reading.failures] == [(RULE, "check")]


def test_the_notice_is_in_the_reading_s_language(broken):
    reading = localize(analyze(fixture(TRACE)), "es")
    said = [n for n in reading.notices if f"la regla {RULE} falló" in n]
    assert len(said) == 1 and "ZeroDivisionError: a bug" in said[0] and not _said(reading)


def test_analyze_exits_0_and_prints_the_notice_escaped(broken, capsys):
    assert main(["analyze", str(fixture(TRACE)), "--format", "json"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert [n for n in data["notices"] if f"rule {RULE} failed" in n]
    assert "\x1b" not in out and RULE not in [f["rule"] for f in data["findings"]]
    assert main(["analyze", str(fixture(TRACE)), "--lang", "es"]) == 0
    out = capsys.readouterr().out
    assert f"la regla {RULE} falló" in " ".join(out.split()) and "\x1b" not in out


def test_check_does_not_pass_a_reading_a_rule_failed_on(broken, capsys):
    """The gate cannot vouch for what the failed rule would have found: 3 (pista's bug) where nothing else fails
    it, 1 where a finding does anyway; never 0."""
    path = str(fixture(TRACE))
    assert main(["check", path, "--fail-on", "critical", "--ignore", "overhead-bound,launch-bound,many-calls",
                 "--format", "json"]) == 3
    result = json.loads(capsys.readouterr().out)
    assert result["passed"] is False and not result["failing"]
    assert result["rules_failed"] == [{"rule": RULE, "stage": "check", "error": "ZeroDivisionError: a bug\x1b[31m in the rule"}]
    assert main(["check", path, "--fail-on", "info"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("pista check") and f"rule {RULE} failed on this trace" in out and "\x1b" not in out
    assert main(["check", path, "--fail-on", "critical", "--ignore", "overhead-bound,launch-bound,many-calls",
                 "--format", "markdown"]) == 3
    assert f"rule {RULE} failed on this trace" in capsys.readouterr().out


def test_a_fix_that_cannot_be_replayed_keeps_the_rule_s_own_estimate(monkeypatch):
    """The rule runs, but its edit breaks the engine's replay: its findings stay, unreplayed, with the rule's own
    impact; a notice says so."""
    module = get_rule(RULE).module
    check = module.check

    def bad_edits(ctx):
        return [dataclasses.replace(f, edit=dataclasses.replace(f.edit, remove=np.array([10**12])),
                                    severity=f.severity if f.severity_fixed else None) for f in check(ctx)]

    monkeypatch.setenv("PISTA_STRICT_RULES", "0")
    monkeypatch.setattr(module, "check", bad_edits)
    reading = analyze(fixture(TRACE))
    mine = [f for f in reading.findings if f.rule == RULE]
    assert mine and all(not f.impact.replayed and f.edit is None for f in mine)
    assert [(f.rule, f.stage) for f in reading.failures] == [(RULE, "replay")]
    said = [n for n in reading.notices if f"rule {RULE}'s fix could not be replayed" in n]
    assert len(said) == 1 and "IndexError" in said[0]
    assert [n for n in localize(reading, "es").notices if f"el arreglo de la regla {RULE}" in n]


def test_strict_mode_raises(monkeypatch):
    def check(ctx):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(get_rule(RULE).module, "check", check)
    monkeypatch.setenv("PISTA_STRICT_RULES", "1")
    with pytest.raises(ZeroDivisionError):
        analyze(fixture(TRACE))


def test_a_folder_reads_on_when_a_rule_fails_on_its_ranks(monkeypatch):
    """Per rank as in one trace: each rank's notice names the rule (in `lang`), its other findings are those of
    the folder read without the rule."""
    from conftest import FIXTURES

    from pista.distributed import analyze_ranks

    folder = FIXTURES / "gloo" / "straggler_2"
    rule = "overhead-bound"

    def check(ctx):
        raise ZeroDivisionError("a bug")

    others = [r.id for r in catalogue() if r.id != rule]
    without = analyze_ranks(folder, engine="inline", rules=others)
    monkeypatch.setenv("PISTA_STRICT_RULES", "0")
    monkeypatch.setattr(get_rule(rule).module, "check", check)
    result = analyze_ranks(folder, engine="inline")
    assert [f.to_dict() for f in result.findings] == [f.to_dict() for f in without.findings]
    said = [n for n in result.notices if f"rule {rule} failed on this trace (ZeroDivisionError: a bug)" in n]
    assert [n.split(":")[0] for n in said] == [f"rank {r.rank}" for r in result.ranks]
    spanish = analyze_ranks(folder, engine="inline", lang="es")
    assert len([n for n in spanish.notices if f"la regla {rule} falló" in n]) == len(result.ranks)
    assert all(f"la regla {rule} falló" in " ".join(r.notices) for r in spanish.ranks)


def test_a_folder_reads_on_when_the_cross_rank_check_fails(monkeypatch):
    from conftest import FIXTURES

    from pista.distributed import analyze_ranks, straggler

    folder = FIXTURES / "gloo" / "straggler_2"
    whole = analyze_ranks(folder, engine="inline")
    assert whole.cross.findings

    def findings(*args):
        raise ValueError("a bug")

    monkeypatch.setenv("PISTA_STRICT_RULES", "0")
    monkeypatch.setattr(straggler, "_findings", findings)
    result = analyze_ranks(folder, engine="inline")
    assert result.cross.findings == [] and result.cross.waits == {}
    assert result.cross.timings == whole.cross.timings
    assert [n for n in result.notices if n.startswith("rule straggler failed on this trace (ValueError: a bug)")]
    spanish = analyze_ranks(folder, engine="inline", lang="es")
    assert [n for n in spanish.notices if n.startswith("la regla straggler falló")]
