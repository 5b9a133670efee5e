"""Text from a trace made safe to show: what a terminal, a spreadsheet or a JSON reader would act on is
written out instead. The one sanitizer of every output: each writer calls one of these, then adds its
own format's escapes (rich markup, Markdown, CSV formulas, HTML) on top.

  sanitize        pista's own multi-line text with trace text in it (notices, error lines, whole tables)
  sanitize_line   one field from a trace on one line (a name, a title): newlines and tabs written out too,
                  and cut for display when it is very long (the JSON keeps it whole)
  sanitize_json   a JSON document

Kept free of heavy imports: the error and notice lines of every verb go through here."""

from __future__ import annotations

import io
import re
import sys

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
# Display cuts (torch cuts the names in its table too). A run of more characters than this without
# a space is no word anyone reads whole (the longest in the fixtures' findings is 181): it keeps its
# start. rich wraps a long run into thousands of lines in quadratic time: an 8 MB op name took 225 s.
MAX_WORD = 400
# A whole field past this (a long name of short words) is cut too; real messages reach ~5,000.
MAX_FIELD = 20_000
# (only at a run's start: tried inside runs too, it rescanned each up to MAX_WORD times)
_LONG_WORD = re.compile(rf"(?<!\S)\S{{{MAX_WORD + 1},}}")
CUT = "..."


def sanitize(text: object) -> str:
    """Text from a trace made safe for a terminal: control characters written out as \\xNN, bidi
    controls as \\uNNNN (ESC shows as the four characters \\x1b). Newlines and tabs stay."""
    return str(text).translate(_CONTROL)


def sanitize_line(text: object, limit: int = MAX_FIELD) -> str:
    """One field from a trace, shown on one line: sanitize's escapes, a newline or tab written out as
    \\n, \\t, a run of more than MAX_WORD characters without a space cut to its start, and the whole
    cut past `limit` characters (each cut ends in '...'). Linear in the text's length."""
    # cut first: translate takes ~200 ns a character on text that is not ASCII (8 MB: 1.5 s), and
    # escapes only lengthen the text, so what the cuts below keep lies in what is left
    text = _cut_words(str(text))[: limit + 1]
    if not text.isprintable():  # every character written out is unprintable: most text skips this
        text = _cut_words(text.translate(_LINE))
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def _cut_words(text: str) -> str:
    return _LONG_WORD.sub(lambda m: m.group()[: MAX_WORD - len(CUT)] + CUT, text) if len(text) > MAX_WORD else text


class TextBuffer(io.StringIO):
    """Where a renderer's rich Console writes. It reports the encoding of the stdout the text goes
    to, so rich draws its boxes in ASCII where that stdout cannot show them (PYTHONIOENCODING=ascii),
    and there gives its text with µs as us (torch's table writes us too)."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(sys.stdout, "encoding", None) or "utf-8"

    def getvalue(self) -> str:
        text = super().getvalue()
        try:
            "µ".encode(self.encoding)
        except (UnicodeEncodeError, LookupError):
            return text.replace("µ", "u")
        return text


def unencodable(err: UnicodeError) -> tuple[bytes, int]:
    """The error handler of pista's stdout (cli.entry), for what its encoding cannot hold: a lone
    surrogate from a file name that is not UTF-8 is written as its own byte (as surrogateescape does),
    anything else as a \\uXXXX escape, which in a JSON output reads back as the character itself."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    out = []
    for char in err.object[err.start:err.end]:
        code = ord(char)
        if 0xdc80 <= code <= 0xdcff:
            out.append(bytes([code - 0xdc00]))
        elif code > 0xffff:  # as JSON writes it: a surrogate pair
            code -= 0x10000
            out.append(f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}".encode())
        else:
            out.append(f"\\u{code:04x}".encode())
    return b"".join(out), err.end


def sanitize_json(text: str) -> str:
    """A JSON document (from json.dumps) whose strings hold no raw DEL, C1 or bidi controls."""
    return text.translate(_JSON_CONTROL)
