"""--lang es: every rule has an English and a Spanish module of the same shape, rendering the same
fields of its typed record and of its evidence notes, with no fallback to English."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import msgspec
import pytest
from conftest import FIXTURES

from pista.analysis import analyze
from pista.cli import main
from pista.i18n import (
    PARTS,
    check_lang,
    localize,
    localize_finding,
    note_renderers,
    rule_title,
)

SECTIONS = ("Qué:", "Por qué:", "Ejemplo:", "Impacto:", "Solución:")
# every real trace but the 64 MB one (its findings come from the same rules)
TRACES = sorted(p for p in list(FIXTURES.glob("*.json.gz")) + list(FIXTURES.glob("gpu/*.json.gz"))
                if "big_gpt" not in p.name)
# Words that give English away inside a Spanish sentence (event names are left as they are).
ENGLISH = re.compile(r"\b(the|of the|with|per step|and the|which|should)\b")


@pytest.fixture(scope="module")
def real_findings():
    from pista.analysis import analyze

    return [f for path in TRACES for f in analyze(path).findings]


def _texts(finding) -> list[str]:
    return [getattr(finding, part) for part in PARTS] + [e.note for e in finding.evidence]


def test_spanish_renders_every_finding_and_note(real_findings):
    fired = {f.rule for f in real_findings}
    assert len(fired) >= 8, fired
    notes_es = note_renderers("es")
    for f in real_findings:
        local = localize_finding(f, "es")
        assert local.metrics == f.metrics and local.impact == f.impact
        for part in PARTS:
            mine, theirs = getattr(local, part), getattr(f, part)
            assert mine and mine != theirs, (f.rule, part, theirs)
            assert not ENGLISH.search(mine.replace(f.rule, "")), (f.rule, part, mine)
        for mine, theirs in zip(local.evidence, f.evidence, strict=True):
            assert dataclasses.replace(mine, lang="en") == theirs
            if theirs.detail is not None:
                assert type(theirs.detail) in notes_es, (f.rule, type(theirs.detail))
                assert mine.note and mine.note != theirs.note, (f.rule, theirs.note)


def _marked(value):
    """A value no real trace has, of the same kind, so any text that shows it changes."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return type(value)(987654)
    if isinstance(value, str):
        return "ZZMARK"
    return None


def _fields_shown(finding, lang: str) -> set[str]:
    """The record fields whose value changes what `lang` writes (a field whose mark breaks the
    rendering counts as shown: the text depends on it)."""
    local = localize_finding(finding, lang)
    base = _texts(local)
    shown = set()
    record = finding.record
    for name in _names(record):
        mark = _marked(getattr(record, name))
        if mark is None:
            continue
        other = dataclasses.replace(local, record=_replace(record, **{name: mark}))
        try:
            if _texts(other) != base:
                shown.add(name)
        except Exception:  # noqa: BLE001 - a cause key that is not one: the text depends on the field
            shown.add(name)
    return shown


def _names(record) -> tuple[str, ...]:
    if isinstance(record, msgspec.Struct):
        return record.__struct_fields__
    return tuple(f.name for f in dataclasses.fields(record))


def _replace(record, **changes):
    if isinstance(record, msgspec.Struct):
        return msgspec.structs.replace(record, **changes)
    return dataclasses.replace(record, **changes)


def test_spanish_shows_every_field_english_shows(real_findings):
    seen = set()
    for f in real_findings:
        if f.rule in seen:
            continue
        seen.add(f.rule)
        missing = _fields_shown(f, "en") - _fields_shown(f, "es")
        assert not missing, (f.rule, missing)


def test_english_is_untouched(analysis_of):
    a = analysis_of("seed_mm64_cold")
    assert localize(a, "en") is a
    assert check_lang("ES") == "es"


def test_analyze_json_in_spanish(capsys):
    path = FIXTURES / "seed_mm64_cold.json.gz"
    assert main(["analyze", str(path), "--format", "json", "--lang", "es"]) == 0
    out = json.loads(capsys.readouterr().out)
    titles = {f["rule"]: f["title"] for f in out["findings"]}
    assert titles["cold-start"] == rule_title("cold-start", "es") != rule_title("cold-start", "en")
    assert out["summary"]["top_fix"]["text"] == localize(analyze(path), "es").top_fix.fix


def test_analyze_text_and_explain_in_spanish(capsys):
    assert main(["analyze", str(FIXTURES / "seed_mm64_warm.json.gz"), "--lang", "es", "-v"]) == 0
    text = capsys.readouterr().out
    assert rule_title("overhead-bound", "es") in " ".join(text.split()) and "solución:" in text
    evidence = [line for line in text.splitlines() if line.startswith("  - ")]
    assert evidence and all(", paso " in line and ", en +" in line for line in evidence)
    flat = " ".join(text.split())  # lines wrap at the terminal's width
    assert "impacto:" in flat and "Empieza por aquí:" in flat and "impact:" not in flat
    assert "AVISO" in text and "GPU ocupada" in text and "thread " not in text
    assert main(["explain", "cold-start", "--lang", "es"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("cold-start: " + rule_title("cold-start", "es"))
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
    assert rule_title("overhead-bound", "es") in text


def test_straggler_evidence_in_spanish():
    from pista.distributed import analyze_ranks

    result = analyze_ranks(FIXTURES / "gloo" / "straggler_2", engine="inline", lang="es")
    notes = [e.note for f in result.cross.findings for e in f.evidence]
    assert notes and all("ms de retraso (la n.º " in n and "con su nombre en el paso" in n for n in notes)
    (straggler,) = result.cross.findings
    assert "slow_input" in straggler.fix and "por paso" in straggler.basis


def test_folder_text_in_spanish(capsys):
    assert main(["analyze", str(FIXTURES / "gloo" / "straggler_2"), "--lang", "es"]) == 0
    text = capsys.readouterr().out
    evidence = [line for line in text.splitlines() if line.startswith("  - ")]
    assert any(line.split("  ")[2].startswith("rango 1, paso ") for line in evidence), evidence
    # severity from the impact: the straggler makes rank 0 wait 83% of its step, rank 0's own exposure is 12%
    assert "solución:" in text and "fix:" not in text and "CRÍTICO  straggler" in text and "AVISO" in text
