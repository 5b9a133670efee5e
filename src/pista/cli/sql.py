"""Query a trace's tables with SQL (DuckDB), like Perfetto's trace processor.

Tables: events, kernels, ops, steps, key_averages, findings, evidence (`--schema` lists their
columns). Times are integer nanoseconds. Examples:

  pista sql trace.json "SELECT name, count(*), sum(dur_ns)/1e3 AS us FROM kernels GROUP BY 1 ORDER BY 3 DESC LIMIT 5"
  pista sql trace.json "SELECT step, max(queued_ns)/1e3 AS worst_queue_us FROM kernels GROUP BY step"
  pista sql trace.json "SELECT rule, severity, title FROM findings" --format json
"""

from __future__ import annotations

import argparse
import csv
import datetime
import decimal
import io
import itertools
import json
import math
import re
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

from pista.errors import UsageError
from pista.render.controls import sanitize, sanitize_line

# `pista sql --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista sql trace.json.gz "SELECT rule, severity, title FROM findings"
  pista sql --schema
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("trace", nargs="?", help="a torch.profiler chrome trace (.json or .json.gz; - for stdin)")
    parser.add_argument("query", nargs="?", help="one SQL statement (DuckDB's dialect)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output: an aligned table (default), CSV, or a JSON list of objects")
    parser.add_argument("--schema", action="store_true", help="list the tables and their columns, then exit")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="stop a query that runs longer (default: 60; 0: no limit)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.sql import schema_text

    if args.schema:
        sys.stdout.write(schema_text() + "\n")
        return 0
    _check_trace_and_query(args)
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.cli.common import open_trace
    from pista.sql import query_stream, shows_flows

    timeout = _timeout(args.timeout)
    facts = open_trace(args.trace, sql=True, events_view=shows_flows(args.query))
    # the rows are written as DuckDB hands them over, a chunk at a time: never all of them in Python
    write = {"csv": write_csv, "json": write_json, "table": write_table}[args.format]
    with query_stream(facts, args.query, timeout=timeout or None) as (columns, chunks):
        write(sys.stdout, columns, chunks)
    return 0


def _check_trace_and_query(args: argparse.Namespace) -> None:
    if not args.trace:
        raise UsageError("pista sql: give a trace and a query (or --schema alone)")
    if not args.query:
        raise UsageError("pista sql: give a query, e.g. \"SELECT count(*) FROM kernels\" (or --schema)")


def _timeout(value: float | None) -> float:
    """--timeout's seconds (QUERY_TIMEOUT_S when not given; 0: no limit); a usage error for one that is no limit."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.sql import QUERY_TIMEOUT_S

    timeout = QUERY_TIMEOUT_S if value is None else value
    if not timeout >= 0 or math.isinf(timeout):  # NaN fails `>= 0` too
        raise UsageError(f"--timeout {value:g}: give the seconds a query may run (0: no limit)")
    return timeout


# A text cell starting with one of these is a formula to a spreadsheet (`=HYPERLINK(...)` as an op
# name): OWASP's CSV-injection advice is a leading single quote, which shows the text as text. (A
# CR is written out by sanitize before it gets here.)
_FORMULA_START = ("=", "+", "-", "@", "\t")
# A spreadsheet may split a cell again where the CSV did not (on ; in many locales, on tabs when
# pasted, on commas or lines by a naive import): a formula start after one of these starts a cell
# too, so it gets the quote as well (`x;=1+1` becomes `x;'=1+1`).
_INNER_FORMULA = re.compile(r"([,;\t\n])(?=[=+\-@])")


def write_csv(out: Any, columns: list[str], chunks: Iterable[list[tuple[Any, ...]]]) -> None:
    """CSV with rows ending in "\n", every field that holds a comma, quote or \n quoted, text that a
    spreadsheet would run as a formula defused, and what a terminal would act on (ESC, BEL, CR, C1,
    bidi controls) written out as sanitize writes it: the CSV often goes to a terminal first. The
    csv module quotes a field only for the characters of its line terminator, so rows are written
    with RFC 4180's "\r\n" and end in "\n" here."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    for rows in itertools.chain([[tuple(columns)]], chunks):
        for row in rows:
            writer.writerow([_defused(v) for v in row])
            out.write(buffer.getvalue()[:-2] + "\n")
            buffer.seek(0)
            buffer.truncate()


def write_json(out: Any, columns: list[str], chunks: Iterable[list[tuple[Any, ...]]]) -> None:
    """A JSON list of objects, one per row, laid out as json.dump(rows, indent=1) lays it out, written
    a row at a time. allow_nan=False: strict JSON or a loud bug, never a bare NaN a parser refuses."""
    start = "[\n"
    for rows in chunks:
        for row in rows:
            text = json.dumps(dict(zip(columns, map(_plain, row), strict=True)), indent=1, allow_nan=False)
            out.write(start + textwrap.indent(text, " "))
            start = ",\n"
    out.write("[]\n" if start == "[\n" else "\n]\n")


def _defused(value: Any) -> Any:
    """Text cells only, sanitized: -5 as a number stays a number; the text '-5' becomes '-5 with the
    quote. Newlines and tabs stay: the CSV quotes them, and they are the name's own."""
    if not isinstance(value, str):
        return value
    text = _INNER_FORMULA.sub(r"\1'", sanitize(value))
    return "'" + text if text.startswith(_FORMULA_START) else text


def _plain(value: Any) -> Any:
    """A DuckDB value as JSON: lists as arrays, structs and maps as objects, NaN and inf as null."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):  # DECIMAL (`dur_ns * 1.5`): a number, as DuckDB means it
        return _plain(float(value))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):  # STRUCT, and MAP with keys of any type: JSON keys are strings
        return {_key(k): _plain(v) for k, v in value.items()}
    return _plain_other(value)


def _plain_other(value: Any) -> Any:
    """Times, intervals, blobs and the rest as JSON."""
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date too
        return value.isoformat()
    if isinstance(value, datetime.timedelta):  # INTERVAL: seconds, like the other numbers here
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):  # BLOB: the bytes as DuckDB prints them
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)  # UUID, and whatever else DuckDB grows


def _key(key: Any) -> str:
    plain = _plain(key)
    return plain if isinstance(plain, str) else json.dumps(plain, allow_nan=False)


def _cell(value: Any) -> str:
    """One table cell, on one line and inert on a terminal: control characters written out
    (ESC as \x1b), a newline or tab in a name as \n, \t."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else repr(value)
    return sanitize_line(value)


# Text cells are cut past this many characters, with '...'.
MAX_CELL = 60


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def write_table(out: Any, columns: list[str], chunks: Iterable[list[tuple[Any, ...]]]) -> None:
    """Columns padded to their widest cell, numbers right-aligned, long text cut with '...'. The
    widths and alignments come from the first chunk of rows (CHUNK_ROWS): the rest stream through
    them, a longer text cut to its column, a longer number shown whole."""
    if not columns:
        return
    headers = [_cell(col) for col in columns]
    layout = None
    count = 0
    for rows in chunks:
        if layout is None:
            layout = _layout(headers, rows)
            out.write(_table_line(headers, *layout) + "\n" + "  ".join("-" * w for w in layout[0]) + "\n")
        _write_rows(out, rows, *layout)
        count += len(rows)
    if layout is None:  # no rows: the headers alone, as numbers (all of no values are)
        out.write(_table_line(headers, [len(h) for h in headers], [True] * len(headers)) + "\n"
                  + "  ".join("-" * len(h) for h in headers) + "\n")
    out.write(f"({count} row{'s' if count != 1 else ''})\n")


def _write_rows(out: Any, rows: list[tuple[Any, ...]], widths: list[int], numeric: list[bool]) -> None:
    # a cut only in rows past the first chunk: text to its column, a number only past MAX_CELL
    cuts = [MAX_CELL if num else min(w, MAX_CELL) for w, num in zip(widths, numeric, strict=True)]
    for row in rows:
        cells = [_fit(_cell(v), cut) for v, cut in zip(row, cuts, strict=True)]
        out.write(_table_line(cells, widths, numeric) + "\n")


def _layout(headers: list[str], rows: list[tuple[Any, ...]]) -> tuple[list[int], list[bool]]:
    """(widths, numeric): each column's widest cell (text cut past MAX_CELL), and whether all its
    values are numbers (right-aligned)."""
    numeric = [all(isinstance(row[k], (int, float)) or row[k] is None for row in rows) for k in range(len(headers))]
    widths = [max([len(h)] + [len(_fit(_cell(row[k]), MAX_CELL)) for row in rows]) for k, h in enumerate(headers)]
    return widths, numeric


def _table_line(values: list[str], widths: list[int], numeric: list[bool]) -> str:
    return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()
