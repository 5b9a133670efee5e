"""Print (or write into docs/bad-inputs.md) the table of bad inputs and what pista says to each.

    python scripts/bad_input_table.py            # the markdown table on stdout
    python scripts/bad_input_table.py --write    # replace the table in docs/bad-inputs.md
    python scripts/bad_input_table.py --check    # exit 1 if docs/bad-inputs.md is out of date

The cases are `tests/test_bad_input.py`'s CASES, so the table shows what the tests check. Each one
is made in a temp folder and run through `pista table` and `pista analyze` (in this process, so the
whole table takes seconds); the cell is exactly what went to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "bad-inputs.md"
START, END = "<!-- bad-input-table:start -->", "<!-- bad-input-table:end -->"
sys.path.insert(0, str(ROOT / "tests"))


def run(argv: list[str]) -> tuple[int, str]:
    from pista.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, err.getvalue()


def cell(text: str) -> str:
    lines = [line.replace("|", "\\|") for line in text.strip().splitlines()]
    return "<br>".join(lines) if lines else "(nothing: read as is)"


def table() -> str:
    import os

    from test_bad_input import CASES, make_case

    rows = ["| bad input | file | what pista prints on stderr (`pista table FILE`) | exit |",
            "| --- | --- | --- | --- |"]
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            for case in CASES:
                make_case(case, Path(tmp))
                rc, err = run(["table", case.file])
                rc_analyze, err_analyze = run(["analyze", case.file])
                said = cell(err)
                if (rc_analyze, err_analyze) != (rc, err):
                    said += f"<br>`pista analyze`: {cell(err_analyze)} (exit {rc_analyze})"
                rows.append(f"| {case.what} | `{case.file}` | {said} | {rc} |")
        finally:
            os.chdir(here)
    return "\n".join(rows) + "\n"


def with_table(doc: str, generated: str) -> str:
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{generated}{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"update the table in {DOC.relative_to(ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 if the doc's table is out of date")
    args = parser.parse_args()
    generated = table()
    if not (args.write or args.check):
        sys.stdout.write(generated)
        return 0
    doc = DOC.read_text()
    updated = with_table(doc, generated)
    if args.check:
        if updated != doc:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python scripts/bad_input_table.py --write",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(updated)
    print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
