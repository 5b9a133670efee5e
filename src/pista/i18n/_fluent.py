"""The rules' text as Fluent message catalogues: every word in `ftl/<lang>/<rule>.ftl`, the arguments in
language-independent Python (`pista.i18n.args.<rule>`), computed from the rule's typed record.

A rule's catalogue holds the messages

- `title`; `message`, `advice`, `fix`, `basis` (the finding's parts, from `args(record, say)`);
- one per note class, its name in kebab case (`NchwNote` -> `nchw-note`, from `NOTES[NchwNote](note, say)`);
- `docs` (What / Why / Example / Impact / Fix: `pista explain`), and `severity-exception` where the rule has one;
- any `...-item` message the args render with `say` (a list's items, joined in Python).

Every argument is a string: pista writes its own figures (`t()`, `pct()`), so Fluent's NUMBER (babel)
never reformats one, and bidi isolation is off: the output is the text as written. A finding's part and a
note are one line: the line breaks of a wrapped pattern read as spaces; `docs` keeps its lines.

fluent.runtime (with the babel it imports, ~70-150 ms) is imported when the first catalogued text is
rendered, and each rule's .ftl is read and parsed on its first use in a language, not at start-up.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fluent.runtime import FluentBundle
    from fluent.runtime.resolver import Message, Pattern
    from fluent.syntax.ast import Resource

FTL = Path(__file__).parent / "ftl"

# say(message id, **arguments): a message of the same catalogue on one line (a list item, joined by the caller)
Say = Callable[..., str]
Args = Callable[[Any, Say], dict[str, str]]


def key(value: object) -> str:
    """A value as a Fluent selector key (`[batch-norm]`): what is not a letter, digit, - or _ becomes -."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", str(value)) or "none"


def yes(value: object) -> str:
    """A condition as a selector key: `{ $has_op -> [yes] ... *[no] {""} }`."""
    return "yes" if value else "no"


def how_many(n: int) -> str:
    """A count as a selector key: none, one or many (`[one] step 3 *[many] steps 3, 4`)."""
    return "none" if n == 0 else "one" if n == 1 else "many"


def step_lead(has_steps: bool, steps: int, of_steps: int) -> str:
    """Which steps a finding holds, as a selector key: the window (no ProfilerStep), all of them, or some."""
    if not has_steps:
        return "window"
    return "all" if steps == of_steps else "some"


def note_id(cls: type) -> str:
    """The message of a note class: its name in kebab case (NchwNote -> nchw-note)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", cls.__name__).lower()


# The longest text a placeable may hold (see Catalogue): far beyond any list pista joins.
MAX_ARGUMENT_CHARS = 10_000_000


class Catalogue:
    """One rule's text in one language: its .ftl, read and parsed on first use (`catalogue()` caches it)."""

    def __init__(self, name: str, lang: str) -> None:
        # the first text rendered pays fluent's (and babel's) import
        from fluent.runtime import FluentBundle, resolver
        from fluent.syntax import FluentParser  # as fluent.runtime

        # fluent.runtime refuses a placeable's text over 2,500 characters (a guard against untrusted translations
        # expanding without bound); pista's catalogues are its own, and its arguments carry what the trace holds: a
        # list of kernel names, each a C++ template hundreds of characters long, passes that on a big trace
        resolver.MAX_PART_LENGTH = max(resolver.MAX_PART_LENGTH, MAX_ARGUMENT_CHARS)

        self.path = FTL / lang / f"{name}.ftl"
        resource = FluentParser(with_spans=False).parse(self.path.read_text(encoding="utf-8"))
        ids = _entry_ids(resource, self.path)
        _refuse_twice(ids, self.path)
        self.resource = resource
        self.ids = [i for i in ids if not i.startswith("-")]  # its messages, in the file's order
        self.bundle: FluentBundle = FluentBundle([lang], use_isolating=False)
        self.bundle.add_resource(resource)

    def has(self, msg_id: str) -> bool:
        return self.bundle.has_message(msg_id)

    def text(self, msg_id: str, /, **args: str) -> str:
        """A message as written, its lines kept (docs); any argument that is not a string, or any error
        Fluent reports (an unknown message or variable), raises."""
        wrong = sorted(k for k, v in args.items() if not isinstance(v, str))
        if wrong:
            raise TypeError(f"{self.path} {msg_id}: arguments must be strings (pista formats its figures): {wrong}")
        pattern = self._message(msg_id).value
        if pattern is None:
            raise LookupError(f"{self.path}: message '{msg_id}' has no value")
        return self._format(pattern, args, msg_id)

    def attribute(self, msg_id: str, name: str, /, **args: str) -> str | None:
        """A message's attribute (`.key = ...`) on one line; None where the message has none of that name."""
        pattern = self._message(msg_id).attributes.get(name)
        if pattern is None:
            return None
        return self._format(pattern, args, f"{msg_id}.{name}").replace("\n", " ")

    def _message(self, msg_id: str) -> Message:
        """The bundle's message; one the catalogue lacks raises."""
        if not self.bundle.has_message(msg_id):
            raise LookupError(f"{self.path}: no message '{msg_id}'")
        return self.bundle.get_message(msg_id)

    def _format(self, pattern: Pattern, args: dict[str, str], where: str) -> str:
        """A pattern with its arguments; any error Fluent reports (an unknown message or variable) raises."""
        out, errors = self.bundle.format_pattern(pattern, args)
        if errors:
            raise ValueError(f"{self.path} {where}: {'; '.join(map(str, errors))}")
        return str(out)

    def line(self, msg_id: str, /, **args: str) -> str:
        """A message on one line: a wrapped pattern's line breaks read as spaces."""
        return self.text(msg_id, **args).replace("\n", " ")


def _entry_ids(resource: Resource, path: Path) -> list[str]:
    """The ids of a parsed catalogue's messages and terms (a term's with its -), in the file's order; a syntax
    error raises."""
    from fluent.syntax.ast import Junk, Message, Term  # as fluent.runtime

    ids: list[str] = []
    for entry in resource.body:
        if isinstance(entry, Junk):
            note = entry.annotations[0].message if entry.annotations else "syntax error"
            raise ValueError(f"{path}: {note}: {(entry.content or '').strip()[:80]!r}")
        if isinstance(entry, (Message, Term)):
            ids.append(("-" if isinstance(entry, Term) else "") + entry.id.name)
    return ids


def _refuse_twice(ids: list[str], path: Path) -> None:
    """A message defined twice raises: Fluent keeps the first silently."""
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"{path}: message defined twice: {', '.join(twice)}")


@cache
def catalogue(name: str, lang: str) -> Catalogue:
    return Catalogue(name, lang)


@cache
def catalogued(name: str) -> bool:
    """Whether a rule's text is in the catalogues (its English .ftl exists)."""
    return (FTL / "en" / f"{name}.ftl").is_file()


@cache
def args_module(name: str) -> Any:
    return importlib.import_module(f"pista.i18n.args.{name}")


def finding_text(name: str, part: str, record: Any, lang: str) -> str:
    """One part (title, message, advice, fix, basis) of a catalogued rule's finding."""
    cat = catalogue(name, lang)
    if part == "title":
        return cat.line("title")
    return cat.line(part, **args_module(name).args(record, cat.line))


@cache
def notes() -> dict[type, tuple[str, Args]]:
    """Every catalogued note class: (its rule's module name, the function of its arguments)."""
    import pista.i18n.args as package  # the args modules import the rules: the first note rendered, not start-up

    table: dict[type, tuple[str, Args]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        for cls, fn in getattr(args_module(info.name), "NOTES", {}).items():
            table[cls] = (info.name, fn)
    return table


def note_text(detail: Any, lang: str) -> str | None:
    """A catalogued note's text; None for a note class no catalogue holds."""
    hit = notes().get(type(detail))
    if hit is None:
        return None
    name, fn = hit
    cat = catalogue(name, lang)
    return cat.line(note_id(type(detail)), **fn(detail, cat.line))


def docs(name: str, lang: str) -> str:
    return catalogue(name, lang).text("docs").strip()


def severity_exception(name: str, lang: str) -> str | None:
    cat = catalogue(name, lang)
    return cat.line("severity-exception") if cat.has("severity-exception") else None
