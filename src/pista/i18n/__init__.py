"""The text of findings, notices and labels: views of pista's typed records, in English and Spanish.

A rule's text is a Fluent catalogue per language, `ftl/<lang>/<rule>.ftl`, rendered from the arguments
`pista.i18n.args.<rule>` computes from its record (pista.i18n._fluent; README.md there: how to add a rule or a
notice). pista's notices, the engine's impact basis and the renderers' labels have their catalogues too
(`_notices.ftl`, `_engine.ftl`, `_words.ftl`). Nothing here parses English: every text is built from typed fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from pista.errors import UsageError
from pista.i18n import _fluent

LANGS = ("en", "es")
PARTS = ("title", "message", "advice", "fix", "basis")

T = TypeVar("T")


def check_lang(lang: str | None) -> str:
    lang = (lang or "en").lower().split("-")[0].split("_")[0]
    if lang not in LANGS:
        raise UsageError(f"no language '{lang}'; known: {', '.join(LANGS)}")
    return lang


def module_name(rule_id: str) -> str:
    return rule_id.replace("-", "_")


def finding_text(finding: Any, part: str, lang: str) -> str:
    """One part (title, message, advice, fix, basis) of a finding, rendered from its record."""
    return _fluent.finding_text(module_name(finding.rule), part, finding.record, check_lang(lang))


def note_renderers(lang: str) -> dict[type, Callable[[Any], str]]:
    def render(detail: Any) -> str:
        return note_text(detail, lang)

    return dict.fromkeys(_fluent.notes(), render)


def note_text(detail: Any, lang: str) -> str:
    """An evidence note's text: its typed detail rendered in `lang` ("" for none)."""
    if detail is None:
        return ""
    text = _fluent.note_text(detail, check_lang(lang))
    if text is None:
        raise LookupError(f"no text for note {type(detail).__qualname__}")
    return text


def replay_basis(finding: Any, lang: str) -> str:
    """How the engine estimated a replayed finding's impact (pista.engine), in `lang`."""
    # start-up: pista.timeline (EditCounts) with the first basis rendered
    from pista.i18n.args._engine import args

    cat = _fluent.catalogue("_engine", check_lang(lang))
    i = finding.impact
    return cat.line("replay-basis", **args(i.us, i.alone_us, i.unprofiled_us, finding.edit.counts, cat.line))


def words(lang: str) -> dict[str, str]:
    """Labels the renderers use ('fix', 'no findings', ...), by their English key (ftl/<lang>/_words.ftl); a key
    that is not there, or whose English label is the key itself, maps to itself."""
    return dict(_words(check_lang(lang)))


@cache
def _words(lang: str) -> dict[str, str]:
    english = _fluent.catalogue("_words", "en")
    keys = {i: english.attribute(i, "key") or english.line(i) for i in english.ids}
    if lang == "en":  # only the labels that are not their own key, in the catalogue's order
        return {keys[i]: english.line(i) for i in english.ids if keys[i] != english.line(i)}
    cat = _fluent.catalogue("_words", lang)
    return {keys[i]: cat.line(i) for i in cat.ids}


def word(key: str, lang: str) -> str:
    return words(lang).get(key, key)


def lane_label(lane: str, lang: str) -> str:
    """A lane as pista names it ("thread 457 (python3)", "GPU 0 stream 7") in `lang`."""
    head, sep, rest = lane.partition(" ")
    return word(head, lang) + sep + rest if head in ("thread", "rank") else lane


def localize_finding(finding: T, lang: str) -> T:
    lang = check_lang(lang)
    evidence = [dataclasses.replace(ev, lang=lang) for ev in finding.evidence]  # type: ignore[attr-defined]
    return dataclasses.replace(finding, lang=lang, evidence=evidence)  # type: ignore[type-var]


def localize(analysis: T, lang: str | None) -> T:
    """A copy of the Analysis whose findings, and the notices of rules that failed, render in `lang`."""
    lang = check_lang(lang)
    if lang == "en":
        return analysis
    findings = [localize_finding(f, lang) for f in analysis.findings]  # type: ignore[attr-defined]
    return dataclasses.replace(analysis, findings=findings,  # type: ignore[type-var]
                               notices=localize_notices(analysis, lang))


def localize_notices(analysis: Any, lang: str) -> list[str]:
    """The analysis's notices with its typed ones (pista.notices, pista.isolation.RuleFailed) written in `lang`;
    the others (the reader's, pista.trace) are English."""
    typed = {**dict.fromkeys(getattr(analysis, "failures", ())), **dict.fromkeys(getattr(analysis, "typed_notices", ()))}
    said = {note_text(n, "en"): note_text(n, lang) for n in typed}
    return [said.get(n, n) for n in analysis.notices]


def rule_title(rule_id: str, lang: str) -> str:
    return _fluent.catalogue(module_name(rule_id), check_lang(lang)).line("title")


def rule_severity_exception(rule_id: str, lang: str) -> str | None:
    """The language's wording of a rule's SEVERITY_EXCEPTION, None where it has none."""
    return _fluent.severity_exception(module_name(rule_id), check_lang(lang))


def rule_docs(rule_id: str, lang: str) -> str | None:
    """What / Why / Example / Impact / Fix."""
    return _fluent.docs(module_name(rule_id), check_lang(lang))
