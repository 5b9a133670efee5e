"""Findings and rule docs in other languages than English.

Each language is a module (`es.py`) with `RULES = {rule_id: Entry}`: a title, the advice, a message
built from the finding's `metrics` (a function of them, or a str.format template; the English message
stays when a key is missing or a value does not fit), and the rule's docs for `pista explain --lang`;
`NOTES`, a pattern per evidence note as the rules write it; and `WORDS`, the renderers' labels.
English is the rules' own text, so `localize(x, "en")` returns x unchanged.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any, TypeVar

from pista.errors import UsageError

LANGS = ("en", "es")

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    title: str
    advice: Callable[[dict[str, Any]], str] | str  # metrics -> text where the fix depends on them
    # metrics -> text, or a str.format template over the metrics; "" keeps the English message
    message: Callable[[dict[str, Any]], str] | str = ""
    docs: str = ""  # What / Why / Example / Fix, as the rule's own docstring lays them out


def check_lang(lang: str | None) -> str:
    lang = (lang or "en").lower().split("-")[0].split("_")[0]
    if lang not in LANGS:
        raise UsageError(f"no language '{lang}'; known: {', '.join(LANGS)}")
    return lang


@cache
def _catalogue(lang: str) -> ModuleType:
    return importlib.import_module(f"pista.i18n.{lang}")


def entries(lang: str) -> dict[str, Entry]:
    lang = check_lang(lang)
    return {} if lang == "en" else _catalogue(lang).RULES


def entry(rule_id: str, lang: str) -> Entry | None:
    return entries(lang).get(rule_id)


def words(lang: str) -> dict[str, str]:
    """Labels the renderers use ('fix', 'no findings', ...); English keys map to themselves."""
    lang = check_lang(lang)
    return {} if lang == "en" else dict(getattr(_catalogue(lang), "WORDS", {}))


def word(key: str, lang: str) -> str:
    return words(lang).get(key, key)


@cache
def _note_patterns(lang: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    notes = getattr(_catalogue(lang), "NOTES", [])
    return tuple((re.compile(pattern), replacement) for pattern, replacement in notes)


def localize_note(note: str, lang: str) -> str | None:
    """An evidence note in `lang`, or None where no pattern of the language's NOTES matches it whole."""
    if not note or check_lang(lang) == "en":
        return note
    for pattern, replacement in _note_patterns(lang):
        match = pattern.fullmatch(note)
        if match:
            return match.expand(replacement)
    return None


def lane_label(lane: str, lang: str) -> str:
    """A lane as pista names it ("thread 457 (python3)", "GPU 0 stream 7") in `lang`."""
    head, sep, rest = lane.partition(" ")
    return word(head, lang) + sep + rest if head in ("thread", "rank") else lane


def format_message(template: Callable[[dict[str, Any]], str] | str, metrics: dict[str, Any]) -> str | None:
    """The message built from metrics, or None when a field is missing or will not format."""
    if not template:
        return None
    if callable(template):
        try:
            return template(metrics)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError):
            return None
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    if not fields <= metrics.keys():
        return None
    try:
        return template.format(**metrics)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


def localize_finding(finding: T, lang: str) -> T:
    e = entry(finding.rule, lang)  # type: ignore[attr-defined]
    if e is None:
        return finding
    message = format_message(e.message, finding.metrics) or finding.message  # type: ignore[attr-defined]
    advice = (format_message(e.advice, finding.metrics) if callable(e.advice) else e.advice) or finding.advice  # type: ignore[attr-defined]
    evidence = [dataclasses.replace(ev, note=localize_note(ev.note, lang) or ev.note)
                for ev in finding.evidence]  # type: ignore[attr-defined]
    return dataclasses.replace(finding, title=e.title or finding.title, message=message,  # type: ignore[type-var]
                               advice=advice, evidence=evidence)


def localize(analysis: T, lang: str | None) -> T:
    """A copy of the Analysis with its findings in `lang` (the same object for English)."""
    lang = check_lang(lang)
    if lang == "en":
        return analysis
    findings = [localize_finding(f, lang) for f in analysis.findings]  # type: ignore[attr-defined]
    return dataclasses.replace(analysis, findings=findings)  # type: ignore[type-var]


def rule_docs(rule_id: str, lang: str) -> str | None:
    e = entry(rule_id, lang)
    return e.docs.strip() if e and e.docs else None
