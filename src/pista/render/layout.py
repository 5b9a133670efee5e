"""How the text renderers lay out lines. In a terminal (a width): wrapped at its width, headers in a
box. Off one (width None: a pipe, a file): one logical line per line, no box, no padding, as ruff,
pytest and git write, so `pista analyze t | grep "Start here"` finds the whole sentence."""

from __future__ import annotations

import re
import textwrap

from rich.console import Console
from rich.panel import Panel

from pista.render.controls import TextBuffer

# rich's console width off a terminal: wide enough that nothing it lays out (the per-rank table's
# columns) is cut; every print there is soft-wrapped (not wrapped at all), and trailing spaces go.
UNWRAPPED_WIDTH = 1000


def console(out: TextBuffer, color: bool, width: int | None) -> Console:
    """A rich Console writing into `out`: wrapped at `width`, or with None not wrapped at all."""
    return Console(file=out, force_terminal=color, no_color=not color, width=width or UNWRAPPED_WIDTH,
                   highlight=False, soft_wrap=width is None)


def header(con: Console, title: str, body: str, width: int | None) -> None:
    """The report's first lines (markup): a box in a terminal; its title then its body off one."""
    if width is None:
        con.print(title)
        con.print(body)
        return
    con.print(Panel(body, title=title, expand=True))


def finish(text: str, width: int | None) -> str:
    """The rendered text; off a terminal without the spaces rich or a table leaves at line ends."""
    if width is not None:
        return text
    return "\n".join(line.rstrip() for line in text.split("\n"))


def clip(text: str, lines: int, width: int = 100, indent: int = 2) -> tuple[str, bool]:
    """`text` kept to what fits `lines` lines of `width` columns after `indent`: whole sentences while
    they fit, else its words and "..."; and whether anything was left out (shown with -v)."""
    room = width - indent
    if len(textwrap.wrap(text, room)) <= lines:
        return text, False
    # a first sentence too long on its own: its words while they fit
    kept = _first_that_fit(_sentences(text), lines, room) or _first_that_fit(text.split(), lines, room)
    return kept + " ...", True


def _first_that_fit(parts: list[str], lines: int, room: int) -> str:
    """The first parts, joined by spaces, while they and " ..." fit `lines` lines of `room` columns."""
    kept = ""
    for part in parts:
        candidate = f"{kept} {part}".strip()
        if len(textwrap.wrap(candidate + " ...", room)) > lines:
            break
        kept = candidate
    return kept


def _sentences(text: str) -> list[str]:
    """`text` split after each '. ', '! ', '? ' or ': ' (a figure's decimal point is not followed by a space)."""
    return [s for s in re.split(r"(?<=[.!?:])\s+", text) if s]
