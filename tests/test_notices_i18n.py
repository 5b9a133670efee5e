"""pista's own text in every language: each notice class (pista.notices, pista.isolation) has its message
in both catalogues (ftl/<lang>/_notices.ftl), renders on a real trace that raises it (or, where no fixture
does, on a record built here), says the same figures in Spanish as in English, and lets no English prose
into --lang es; so do the engine's basis of a replayed impact (_engine.ftl) and the renderers' labels
(_words.ftl)."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES
from fluent.syntax import FluentParser
from fluent.syntax import ast as ftl
from fluent.syntax.visitor import Visitor

from pista.analysis import analyze
from pista.i18n import LANGS, localize, note_text
from pista.i18n._fluent import FTL, args_module, note_id
from pista.isolation import RuleFailed
from pista.notices import (
    CyclesOptionsIgnored,
    CyclesOverlap,
    NoHostEvents,
    RankNotice,
    RanksByOrder,
    SkippedLinks,
    WorkersCapped,
    WorldSize,
)

NOTES = args_module("_notices").NOTES

# A trace that raises each notice (found by reading every fixture's notices), and a phrase of its English
REAL = {
    "OneTimeCost": ("gpu/eval_first_call.json.gz", "one-time cost"),
    "CopyBound": ("gpu/pageable_memcpy.json.gz", "balanced weighs the GPU's kernels"),
    "BalancedHost": ("gpu/resnet50_train.json.gz", "balanced: the host takes"),
    "LostRecords": ("foreign/hta_cupti_profiler.json.gz", "call(s) that put work on the GPU"),
    "NoGpuWork": ("foreign/partt_profiler_trace.json.gz", "the trace has a GPU"),
    "ReferenceConv": ("foreign/made_cpu_slow_conv2d.json.gz", "reference CPU convolution"),
    "CpuActivityMissing": ("foreign/tl_mi210_gpu_only.json.gz", "CPU activity was not recorded"),
    "SharedCpu": ("cpu_busy_mm64.json.gz", "the CPU was shared"),
    "CpuStepSpread": ("gpu/cpu_linear.json.gz", "CPU-only trace vary"),
    "NegativeSelfTimes": ("gpu/gpu_grouped.json.gz", "negative self time"),
    "ZeroDurations": ("foreign/damaged_fields.json.gz", "zero or missing duration"),
}
# No fixture raises these: a rule that fails (tests/test_isolation.py makes one), a GPU-only trace without
# CUDA's runtime calls, a folder of cycles
BUILT = {
    "RuleFailed": [RuleFailed("host-sync", "ZeroDivisionError: division by zero"),
                   RuleFailed("host-sync", "KeyError: 'x'", "replay")],
    "NoHostEvents": [NoHostEvents()],
    "CyclesOverlap": [CyclesOverlap(2)],
    "CyclesOptionsIgnored": [CyclesOptionsIgnored()],
    # a folder of ranks: tests/test_distributed.py makes each
    "RankNotice": [RankNotice(3, "x")],
    "WorldSize": [WorldSize(8, 2)],
    "RanksByOrder": [RanksByOrder(2)],
    "SkippedLinks": [SkippedLinks(2, "runs/job", "rank-9.json")],
    "WorkersCapped": [WorkersCapped(64, 2, 2)],
}
# English prose: three or more words of letters in a row (as tests/test_i18n_catalogue.py)
PROSE = re.compile(r"[A-Za-z]+(?: [A-Za-z]+){2,}")
FIGURES = re.compile(r"\d+(?:[.,]\d+)*")


def _messages(lang: str) -> dict[str, ftl.Message]:
    resource = FluentParser(with_spans=False).parse((FTL / lang / "_notices.ftl").read_text(encoding="utf-8"))
    assert not [e for e in resource.body if isinstance(e, ftl.Junk)], lang
    return {e.id.name: e for e in resource.body if isinstance(e, ftl.Message)}


def _check_languages(notice) -> None:
    en, es = note_text(notice, "en"), note_text(notice, "es")
    assert en and es and en != es and "\n" not in en + es
    leaked = [w for w in _prose("_notices") if w in es]
    assert not leaked, (type(notice).__name__, leaked, es)
    # the same figures, said in the same order of magnitude: a translation drops none
    assert sorted(FIGURES.findall(en)) == sorted(FIGURES.findall(es)), (en, es)


def test_every_notice_class_has_its_message_in_every_language_and_a_case_here():
    assert set(REAL) | set(BUILT) == {cls.__name__ for cls in NOTES}
    for lang in LANGS:
        assert set(_messages(lang)) == {note_id(cls) for cls in NOTES}, lang


@pytest.mark.parametrize("kind", sorted(REAL))
def test_a_real_notice_renders_in_every_language(kind):
    name, phrase = REAL[kind]
    analysis = analyze(FIXTURES / name)
    (notice,) = [n for n in analysis.typed_notices if type(n).__name__ == kind]
    english = note_text(notice, "en")
    assert phrase in english and english in analysis.notices
    spanish = localize(analysis, "es").notices
    assert note_text(notice, "es") in spanish and english not in spanish
    # the reader's notices (pista.trace, English for now) keep their place around pista's own
    assert len(spanish) == len(analysis.notices)
    _check_languages(notice)


@pytest.mark.parametrize("kind", sorted(BUILT))
def test_a_built_notice_renders_in_every_language(kind):
    for notice in BUILT[kind]:
        _check_languages(notice)


def test_a_failed_rule_says_its_stage():
    check, replay = BUILT["RuleFailed"]
    assert note_text(check, "es").startswith("la regla host-sync falló")
    assert note_text(replay, "es").startswith("no se pudo reproducir el arreglo de la regla host-sync")


def test_arguments_cover_every_variable():
    """Every variable each message reads, in every language, is given by its record's arguments."""
    examples = [n for ns in BUILT.values() for n in ns]
    examples += [n for kind, (name, _) in REAL.items() for n in analyze(FIXTURES / name).typed_notices
                 if type(n).__name__ == kind]
    for notice in examples:
        given = set(NOTES[type(notice)](notice, None))
        for lang in LANGS:
            refs = _variables(_messages(lang)[note_id(type(notice))])
            assert refs <= given, (type(notice).__name__, lang, refs - given)


def _variables(message: ftl.Message) -> set[str]:
    refs: set[str] = set()

    class Vars(Visitor):
        def visit_VariableReference(self, node):  # noqa: N802
            refs.add(node.id.name)

    Vars().visit(message)
    return refs


def _prose(name: str) -> set[str]:
    """The English catalogue's prose: runs of three or more words (not a name quoted as it is in every
    language, as the "Self CPU" column)."""
    found: set[str] = set()

    class Text(Visitor):
        def visit_TextElement(self, node):  # noqa: N802 - fluent.syntax's visitor names
            found.update(PROSE.findall(" ".join(node.value.split())))

    Text().visit(FluentParser(with_spans=False).parse((FTL / "en" / f"{name}.ftl").read_text(encoding="utf-8")))
    return {w for w in found if not all(p[0].isupper() for p in w.split())}


def test_the_engine_s_basis_renders_in_every_language():
    # a100_torchbench_memcpy: replayed fixes that shorten host time, resize copies and drop waits
    from pista.i18n import localize_finding

    replayed = [f for f in analyze(FIXTURES / "foreign/a100_torchbench_memcpy.json.gz").findings if f.impact.replayed]
    assert replayed
    english = _prose("_engine")
    for f in replayed:
        c = f.edit.counts
        en, es = f.basis, localize_finding(f, "es").basis
        assert en.startswith("replay of the profiled steps with the fix applied (")
        assert es.startswith("reproducción de los pasos perfilados con el arreglo aplicado (")
        said = [n for n in (c.removed, c.scaled_host, c.resized_work, c.unblocked, c.readied) if n]
        # one item a kind of change, joined by "; " (and the unprofiled figure's clause after them)
        assert en.count("; ") == max(len(said), 1) - 1 + ("; the figure without the profiler" in en)
        assert sorted(FIGURES.findall(en)) == sorted(FIGURES.findall(es)), (en, es)
        assert not [w for w in english if w in es], es


def test_the_renderers_labels_are_in_every_language():
    from pista.i18n import word, words

    ids = {lang: set(_ids("_words", lang)) for lang in LANGS}
    assert ids["en"] == ids["es"]
    spanish = words("es")
    assert len(spanish) == len(ids["es"])  # one English key a label
    # English: the label where it is not the key itself (the brief report's hints), the key otherwise
    assert word("more hint -v", "en") == "-v: each finding in full" and word("Findings", "en") == "Findings"
    assert word("Findings", "es") == "Hallazgos" and word("no such label", "es") == "no such label"
    english = _prose("_words")
    leaked = {k: v for k, v in spanish.items() if [w for w in english if w in v]}
    assert not leaked, leaked


def _ids(name: str, lang: str) -> list[str]:
    resource = FluentParser(with_spans=False).parse((FTL / lang / f"{name}.ftl").read_text(encoding="utf-8"))
    assert not [e for e in resource.body if isinstance(e, ftl.Junk)], (name, lang)
    return [e.id.name for e in resource.body if isinstance(e, ftl.Message)]
