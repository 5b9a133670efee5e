"""python-loop: the arguments of its text (ftl/<lang>/python_loop.ftl)."""

from __future__ import annotations

from pista.i18n._fluent import Say, key, yes
from pista.i18n._fmt import t
from pista.rules.python_loop import Pass, PythonLoop

# the ops of a pass named, at most
BLOCK_NAMES = 6


def _block(r: PythonLoop) -> str:
    names = list(dict.fromkeys(r.block))
    return ", ".join(names[:BLOCK_NAMES]) + (", ..." if len(names) > BLOCK_NAMES else "")


def args(r: PythonLoop, say: Say) -> dict[str, str]:
    return {
        "kind": key(r.kind), "ops": str(len(r.block)), "block": _block(r), "passes": str(r.passes),
        "source": r.source, "has_source": yes(r.source), "host_us": t(r.host_us),
    }


NOTES = {
    Pass: lambda n, say: {"index": str(n.index), "ops": str(n.ops)},
}
