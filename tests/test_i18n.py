"""--lang es: the Spanish catalogue covers every rule, builds its messages from the findings' real
metrics, and falls back to English where it cannot."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import FIXTURES

from pista.cli import main
from pista.findings import Finding, Severity
from pista.i18n import check_lang, entries, localize, localize_finding, localize_note, rule_docs
from pista.rules import catalogue

# The catalogue's ids, as the project's plan lists them (some rules may still be on their way).
PLANNED = (
    "overhead-bound", "compute-bound", "dominant-event", "many-calls", "gemm-heuristics",
    "implicit-copy-before-gemm", "profiler-overhead", "kernel-variability", "dead-window", "cold-start",
    "trailing-sync", "compile-overhead", "lazy-loading", "host-sync", "pageable-memcpy", "gpu-idle",
    "launch-bound", "fp32-gemm", "recompilation", "exposed-communication", "straggler",
)
SECTIONS = ("Qué:", "Por qué:", "Ejemplo:", "Solución:")
# every real trace but the 64 MB one (its findings come from the same rules)
TRACES = sorted(p for p in list(FIXTURES.glob("*.json.gz")) + list(FIXTURES.glob("gpu/*.json.gz"))
                if "big_gpt" not in p.name)


def test_every_rule_has_a_spanish_entry():
    es = entries("es")
    ids = {r.id for r in catalogue()} | set(PLANNED)
    missing = sorted(ids - es.keys())
    assert missing == []
    for rule_id in ids:
        e = es[rule_id]
        assert e.title and e.advice, rule_id
        docs = rule_docs(rule_id, "es")
        assert docs and all(s in docs for s in SECTIONS), rule_id


@pytest.fixture(scope="module")
def real_findings():
    from pista.findings import analyze

    return [f for path in TRACES for f in analyze(path).findings]


def test_spanish_messages_come_from_the_real_metrics(real_findings):
    es = entries("es")
    fired = {f.rule for f in real_findings}
    assert len(fired) >= 5, fired
    for f in real_findings:
        local = localize_finding(f, "es")
        assert local.title == es[f.rule].title
        advice = es[f.rule].advice
        assert local.advice == (advice(f.metrics) if callable(advice) else advice) and local.advice != f.advice
        if es[f.rule].message:
            # a template that names a metric the rule does not report would fall back to English here
            assert local.message != f.message, (f.rule, sorted(f.metrics))
        assert local.metrics == f.metrics
        # the same events, each note in Spanish: a rule that writes a new kind of note needs its
        # pattern in es.NOTES, or this fails
        assert [dataclasses.replace(e, note="") for e in local.evidence] == \
            [dataclasses.replace(e, note="") for e in f.evidence]
        for mine, theirs in zip(local.evidence, f.evidence, strict=True):
            assert localize_note(theirs.note, "es") is not None, (f.rule, theirs.note)
            assert mine.note == localize_note(theirs.note, "es")
            assert mine.note != theirs.note or not theirs.note, (f.rule, theirs.note)


def test_missing_metrics_fall_back_to_the_english_message():
    f = Finding("cold-start", Severity.WARNING, "t", "the English message", "a", metrics={"ratio": 5.0})
    local = localize_finding(f, "es")
    assert local.message == "the English message"
    assert local.title == entries("es")["cold-start"].title
    # a finding of a rule without an entry stays as it is
    other = dataclasses.replace(f, rule="not-a-rule")
    assert localize_finding(other, "es") is other


def test_english_is_untouched(analysis_of):
    a = analysis_of("seed_mm64_cold")
    assert localize(a, "en") is a
    assert check_lang("ES") == "es"


def test_analyze_json_in_spanish(capsys):
    path = FIXTURES / "seed_mm64_cold.json.gz"
    assert main(["analyze", str(path), "--format", "json", "--lang", "es"]) == 0
    out = json.loads(capsys.readouterr().out)
    titles = {f["rule"]: f["title"] for f in out["findings"]}
    assert titles["cold-start"] == entries("es")["cold-start"].title
    assert titles["overhead-bound"] == entries("es")["overhead-bound"].title


def test_analyze_text_and_explain_in_spanish(capsys):
    assert main(["analyze", str(FIXTURES / "seed_mm64_warm.json.gz"), "--lang", "es", "--no-table"]) == 0
    text = capsys.readouterr().out
    assert entries("es")["overhead-bound"].title in text and "solución:" in text
    evidence = [line for line in text.splitlines() if line.startswith("  - ")]
    assert evidence and all(", paso " in line and ", en +" in line for line in evidence)
    flat = " ".join(text.split())  # lines wrap at the terminal's width
    assert "(de los mayores tiempos propios de CPU: " in flat and "largest self CPU time" not in flat
    assert "CRÍTICO" in text and "GPU ocupada" in text and "thread " not in text
    assert main(["explain", "cold-start", "--lang", "es"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("cold-start: " + entries("es")["cold-start"].title)
    assert all(s in text for s in SECTIONS)


def test_unknown_language_is_one_line_error(capsys):
    assert main(["analyze", str(FIXTURES / "seed_mm64_warm.json.gz"), "--lang", "xx"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "no language 'xx'" in err


def test_report_in_spanish(tmp_path: Path):
    out = tmp_path / "r.html"
    assert main(["report", str(FIXTURES / "seed_mm64_warm.json.gz"), "-o", str(out), "--lang", "es"]) == 0
    text = out.read_text()
    assert '<html lang="es">' in text
    assert entries("es")["overhead-bound"].title in text


def test_straggler_evidence_in_spanish():
    from pista.distributed import analyze_ranks

    result = analyze_ranks(FIXTURES / "gloo" / "straggler_2", engine="inline", lang="es")
    notes = [e.note for f in result.cross.findings for e in f.evidence]
    assert notes and all("ms de retraso (la n.º " in n for n in notes)


def test_folder_text_in_spanish(capsys):
    assert main(["analyze", str(FIXTURES / "gloo" / "straggler_2"), "--lang", "es"]) == 0
    text = capsys.readouterr().out
    evidence = [line for line in text.splitlines() if line.startswith("  - ")]
    assert any(line.split("  ")[2].startswith("rango 1, paso ") for line in evidence), evidence
    assert "solución:" in text and "fix:" not in text and "AVISO" in text
