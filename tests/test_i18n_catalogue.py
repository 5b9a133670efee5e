"""The rules' Fluent catalogues (src/pista/i18n/ftl): every message in every language, every variable a
message reads given by the rule's arguments, no Fluent error on real findings, no English in --lang es,
no word in the arguments' Python, and fluent imported only when text is rendered."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from fluent.syntax import FluentParser
from fluent.syntax import ast as ftl
from fluent.syntax.visitor import Visitor

from pista.analysis import analyze
from pista.i18n import LANGS, PARTS, localize_finding, module_name, rule_docs
from pista.i18n._fluent import FTL, args_module, catalogue, catalogued, finding_text, note_id
from pista.rules import catalogue as rule_catalogue

# every real trace but the 64 MB one (as tests/test_i18n.py); a converted rule that fires on none of them
# names a fixture that fires it here
TRACES = sorted(p for p in [*FIXTURES.glob("*.json.gz"), *FIXTURES.glob("gpu/*.json.gz")] if "big_gpt" not in p.name)
EXTRA_TRACES: list[Path] = []
EXTRA_TRACES.append(FIXTURES / "gloo" / "balanced_2" / "rank-0.json.gz")  # exposed-communication
EXTRA_TRACES.append(FIXTURES / "savings" / "h100" / "cpu_randn_input__broken.json.gz")  # cpu-tensor-creation
EXTRA_TRACES.append(FIXTURES / "foreign" / "tl_vllm_graph_exec.json.gz")  # queued-wait
EXTRA_TRACES.append(FIXTURES / "savings" / "h100" / "pad_loader_infer__broken.json.gz")  # implicit-copy-before-gemm
EXTRA_TRACES.append(FIXTURES / "savings" / "h100" / "pad_max_length_train__broken.json.gz")  # padding, seen
EXTRA_TRACES.append(FIXTURES / "savings" / "h100" / "align_hidden__broken.json.gz")  # gemm-alignment
EXTRA_TRACES.append(FIXTURES / "foreign" / "hta_nccl_data.json.gz")  # ddp-broadcast-buffers
EXTRA_TRACES.append(FIXTURES / "foreign" / "tl_sglang_decode.json.gz")  # outside-wait
EXTRA_TRACES.append(FIXTURES / "foreign" / "gp_p2p_copy.json.gz")  # slow-peer-copy
CONVERTED = [r.id for r in rule_catalogue() if catalogued(module_name(r.id))]
SECTIONS = {"en": ("What:", "Why:", "Example:", "Impact:", "Fix:"),
            "es": ("Qué:", "Por qué:", "Ejemplo:", "Impacto:", "Solución:")}
# English prose: three or more words of letters in a row, between punctuation and placeables
WORDS = re.compile(r"[A-Za-z]+(?: [A-Za-z]+){2,}")


def _ast(name: str, lang: str) -> ftl.Resource:
    return FluentParser(with_spans=False).parse((FTL / lang / f"{name}.ftl").read_text(encoding="utf-8"))


def _messages(name: str, lang: str) -> dict[str, ftl.Message]:
    return {e.id.name: e for e in _ast(name, lang).body if isinstance(e, ftl.Message)}


class _Refs(Visitor):
    """The variables a pattern reads and the messages it references."""

    def __init__(self) -> None:
        super().__init__()
        self.variables: set[str] = set()
        self.messages: set[str] = set()
        self.number_keys: list[str] = []

    def visit_VariableReference(self, node):  # noqa: N802 - fluent.syntax's visitor names
        self.variables.add(node.id.name)

    def visit_MessageReference(self, node):  # noqa: N802
        self.messages.add(node.id.name)

    def visit_Variant(self, node):  # noqa: N802
        if isinstance(node.key, ftl.NumberLiteral):
            self.number_keys.append(node.key.value)
        self.generic_visit(node)


def _reads(messages: dict[str, ftl.Message], msg_id: str) -> set[str]:
    """The variables a message reads, through the messages it references (not the -item ones: say() gives
    those their own arguments)."""
    seen, todo, out = set(), [msg_id], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        refs = _Refs()
        refs.visit(messages[current])
        out |= refs.variables
        todo += [m for m in refs.messages if not m.endswith("-item")]
    return out


def _required(rule_id: str) -> set[str]:
    notes = getattr(args_module(module_name(rule_id)), "NOTES", {})
    return {*PARTS, "docs", *(note_id(cls) for cls in notes)}


@pytest.fixture(scope="module")
def real_findings():
    from pista.distributed import analyze_ranks

    findings = [f for path in TRACES + EXTRA_TRACES for f in analyze(path).findings]
    # straggler fires across ranks only
    findings += [f for name in ("straggler_2", "straggler_4") for f in analyze_ranks(FIXTURES / "gloo" / name).findings]
    return [f for f in findings if f.rule in CONVERTED]


def test_every_rule_is_in_the_catalogues():
    assert [r.id for r in rule_catalogue()] == CONVERTED


@pytest.mark.parametrize("rule", CONVERTED)
def test_every_message_in_every_language(rule):
    name = module_name(rule)
    ids = {lang: set(_messages(name, lang)) for lang in LANGS}
    for lang in LANGS:
        catalogue(name, lang)  # parses: no junk, no message twice
        assert ids[lang] >= _required(rule), (rule, lang, _required(rule) - ids[lang])
        # what the Python asks for by name is in both; helper messages ({ kind-name }) are each language's own
        asked = {i for i in ids[lang] | ids["en"] if i in _required(rule) or i.endswith("-item")
                 or i == "severity-exception"}
        assert asked <= ids[lang] and asked <= ids["en"], (rule, lang, ids[lang] ^ ids["en"])
        docs = rule_docs(rule, lang)
        assert docs and all(s in docs for s in SECTIONS[lang]), (rule, lang)
    # the severity exception, where there is one, is said in every language (it is optional: compared above)


@pytest.mark.parametrize("rule", CONVERTED)
def test_selector_keys_are_names(rule):
    """Arguments are strings: a numeric variant key ([0]) would never match one."""
    for lang in LANGS:
        refs = _Refs()
        refs.visit(_ast(module_name(rule), lang))
        assert not refs.number_keys, (rule, lang, refs.number_keys)


def test_real_findings_render_with_every_variable_given(real_findings):
    fired = {f.rule for f in real_findings}
    assert fired == set(CONVERTED), f"no fixture fires {set(CONVERTED) - fired}: add one to EXTRA_TRACES"
    for f in real_findings:
        name = module_name(f.rule)
        given = set(args_module(name).args(f.record, catalogue(name, "en").line))
        assert all(isinstance(v, str) for v in args_module(name).args(f.record, catalogue(name, "en").line).values())
        notes = getattr(args_module(name), "NOTES", {})
        for lang in LANGS:
            messages = _messages(name, lang)
            for part in PARTS[1:]:
                missing = _reads(messages, part) - given
                assert not missing, (f.rule, lang, part, missing)
            # Catalogue raises on any error Fluent reports
            assert all(finding_text(name, part, f.record, lang) for part in PARTS)
            local = localize_finding(f, lang)
            for ev in local.evidence:
                if type(ev.detail) in notes:
                    note_args = set(notes[type(ev.detail)](ev.detail, catalogue(name, lang).line))
                    missing = _reads(messages, note_id(type(ev.detail))) - note_args
                    assert not missing, (f.rule, lang, type(ev.detail).__name__, missing)
                    assert ev.note


def _english(rule: str) -> set[str]:
    """The English catalogue's prose: runs of three or more words in its text (not its placeables)."""
    out: set[str] = set()
    for msg in _messages(module_name(rule), "en").values():
        for node in _text_elements(msg):
            out |= set(WORDS.findall(node))
    return out


def _text_elements(node) -> list[str]:
    found: list[str] = []

    class V(Visitor):
        def visit_TextElement(self, n):  # noqa: N802
            found.append(" ".join(n.value.split()))

    V().visit(node)
    return found


def test_no_english_in_spanish(real_findings):
    for f in real_findings:
        english = _english(f.rule)
        local = localize_finding(f, "es")  # the parts as the catalogue writes them (a replayed basis is the engine's)
        texts = [finding_text(module_name(f.rule), part, f.record, "es") for part in PARTS]
        texts += [e.note for e in local.evidence]
        for text in texts:
            leaked = [w for w in english if w in text and not _is_code(w)]
            assert not leaked, (f.rule, leaked, text)
    for rule in CONVERTED:
        docs = " ".join(rule_docs(rule, "es").split())
        leaked = [w for w in _english(rule) if w in docs and not _is_code(w)]
        assert not leaked, (rule, leaked)


def _is_code(words: str) -> bool:
    """English that Spanish docs quote as it is (an event's name: 'Activity Buffer Request')."""
    return words[0].isupper() and all(w[0].isupper() for w in words.split())


@pytest.mark.parametrize("rule", CONVERTED)
def test_arguments_hold_no_words(rule):
    """Every word is in the .ftl: the arguments' Python holds names, keys, code and punctuation only."""
    path = Path(args_module(module_name(rule)).__file__)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef)) and n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            assert not re.search(r"[A-Za-z] +[A-Za-z]", node.value), (rule, node.value)


def test_fluent_is_imported_only_when_text_is_rendered():
    code = ("import sys, pista.cli, pista.analysis, pista.rules; pista.rules.catalogue(); "
            "assert not [m for m in sys.modules if m.startswith(('fluent', 'babel'))]; "
            "from pista.i18n import rule_title; rule_title('host-sync', 'es'); assert 'fluent.runtime' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_long_argument_renders():
    """A placeable over fluent.runtime's own 2,500-character limit (a joined list of templated kernel names on a big
    trace) renders whole instead of raising."""
    from pista.i18n._fluent import catalogue

    name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " * 60
    cat = catalogue("channels_last", "en")
    ids = [m for m in ("nchw-note",) if cat.has(m)]
    assert ids and len(name) > 2500
    assert name in cat.line(ids[0], kind=name)
