"""Text from a trace made safe to show: what a terminal, a spreadsheet or a JSON reader would act on is
written out instead. The one sanitizer of every output: each writer calls one of these, then adds its
own format's escapes (rich markup, Markdown, CSV formulas, HTML) on top.

  sanitize        pista's own multi-line text with trace text in it (notices, error lines, whole tables)
  sanitize_line   one field from a trace on one line (a name, a title): newlines and tabs written out too
  sanitize_json   a JSON document

Kept free of heavy imports: the error and notice lines of every verb go through here."""

from __future__ import annotations

# Characters from a trace's names that a terminal would act on instead of showing: the C0 and C1
# controls (ESC starts sequences that set the window title, make links or clear the screen; CR
# overwrites the line) and the bidi overrides and isolates (U+202E shows text reversed). Tab and
# newline are left alone by `sanitize`: pista's own multi-line text goes through it too.
_UNSAFE = [*range(0x00, 0x09), 0x0b, 0x0c, 0x0d, *range(0x0e, 0x20), 0x7f, *range(0x80, 0xa0),
           0x061c, 0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a)]
_CONTROL = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in _UNSAFE}
# One field on one line: a newline in a name would start a line of its own (forge a table row, a
# finding); a tab would shift the columns after it.
_LINE = {**_CONTROL, ord("\n"): "\\n", ord("\t"): "\\t"}
# The same characters inside JSON strings: \u escapes, which read back as the same text (json.dumps
# with ensure_ascii=False escapes C0 itself, but writes DEL, C1 and the bidi controls raw).
_JSON_CONTROL = {c: f"\\u{c:04x}" for c in _UNSAFE if c >= 0x7f}


def sanitize(text: object) -> str:
    """Text from a trace made safe for a terminal: control characters written out as \\xNN, bidi
    controls as \\uNNNN (ESC shows as the four characters \\x1b). Newlines and tabs stay."""
    return str(text).translate(_CONTROL)


def sanitize_line(text: object) -> str:
    """One field from a trace, shown on one line: sanitize's escapes, and a newline or tab written
    out as \\n, \\t."""
    return str(text).translate(_LINE)


def sanitize_json(text: str) -> str:
    """A JSON document (from json.dumps) whose strings hold no raw DEL, C1 or bidi controls."""
    return text.translate(_JSON_CONTROL)
