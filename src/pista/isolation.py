"""A rule that raises loses its own part of the reading only (issue 36): its findings when its `check`
raises, its replayed impact when the engine cannot replay its fix. The others stand, and the reading
gets a notice naming the rule and the exception (`RuleFailed`, written in each language by pista.i18n's
`_notices`). `pista check` does not pass a reading a rule failed on (pista.cli.check).

PISTA_STRICT_RULES=1 (as the tests run) raises instead. A `PistaError` (the input's fault, with its own
exit code) and a `MemoryError` always go through.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from pista.errors import PistaError
from pista.finding import Record

# The exception's text past this many characters is cut: the notice is one line.
ERROR_CHARS = 200


class RuleFailed(Record, frozen=True):
    """A rule that raised on this trace: `stage` "check" (its findings are left out) or "replay" (its fix
    could not be replayed: its findings keep the rule's own estimate)."""

    rule: str
    error: str  # the exception's type and the first line of its text
    stage: str = "check"


def strict() -> bool:
    return os.environ.get("PISTA_STRICT_RULES", "0") == "1"


def one_line(exc: BaseException) -> str:
    """`Type: the first line of the text`, at most ERROR_CHARS of text."""
    lines = str(exc).strip().splitlines()
    text = lines[0][:ERROR_CHARS] if lines else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def isolated(rule: str, stage: str, failures: list[RuleFailed] | None) -> Iterator[None]:
    """Run the block; an exception from it (a bug in the rule) is appended to `failures` and goes no further
    (without `failures`, or in strict mode, it goes through)."""
    try:
        yield
    except (PistaError, MemoryError):
        raise
    except Exception as exc:
        if failures is None or strict():
            raise
        failures.append(RuleFailed(rule, one_line(exc), stage))
