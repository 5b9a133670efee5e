"""Behaviour stays the same while the code changes: every fixture trace's readings, in both languages.

For each trace under tests/fixtures (foreign ones included), `pista analyze`'s JSON in English and
Spanish and the full terminal text (-v, 110 columns, no colour) are hashed; tests/golden.json holds
the hashes main has now. tests/test_golden.py compares them, so a refactor that changes one byte of
any reading fails there, and a change made on purpose updates the file in the same commit:

    python scripts/golden.py --update               # after a change meant to change readings
    python scripts/golden.py --dump /tmp/before     # the outputs themselves, to diff two revisions

Notices (stderr) are part of the reading and are hashed with it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
GOLDEN = ROOT / "tests" / "golden.json"
# files under tests/fixtures that are not traces: measurements, expectations, source lists
NOT_TRACES = {"measured.json", "predicted.json", "expected.json", "remote.json", "capture_sweep.json"}


def trace_files() -> list[Path]:
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz"))]
    return sorted(p for p in files if p.name not in NOT_TRACES)


def readings(path: Path) -> dict[str, str]:
    """The outputs of one trace, by view: json-en, json-es, text-en (what `pista analyze` prints)."""
    from pista.analysis import analyze
    from pista.cli.common import open_trace
    from pista.render import json as json_renderer
    from pista.render import terminal

    rel = str(path.relative_to(ROOT))  # the reading names the file: relative, so any clone reads the same
    os.chdir(ROOT)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            facts = open_trace(rel)  # as `pista analyze` opens it: notices on stderr, unread columns let go
        analysis = analyze(facts)
    except Exception as exc:  # a fixture that is refused on purpose (bad input): its one line is its reading
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {
        "notices": err.getvalue(),
        "json-en": json_renderer.render(analysis, lang="en"),
        "json-es": json_renderer.render(analysis, lang="es"),
        "text-en": terminal.render(analysis, color=False, width=110, lang="en", verbose=True),
    }


def _one(path: Path) -> tuple[str, dict[str, str]]:
    return str(path.relative_to(ROOT)), readings(path)


def collect(workers: int) -> dict[str, dict[str, str]]:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("PISTA_REPLAY", None)
    with ProcessPoolExecutor(workers) as pool:
        return dict(pool.map(_one, trace_files(), chunksize=2))


def digests(outputs: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {name: {view: hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
                   for view, text in views.items()} for name, views in sorted(outputs.items())}


def compare(now: dict[str, dict[str, str]], golden: dict[str, dict[str, str]]) -> list[str]:
    """One line per reading that differs, is new or is gone."""
    lines = []
    for name in sorted(set(now) | set(golden)):
        if name not in golden:
            lines.append(f"new trace: {name}")
        elif name not in now:
            lines.append(f"trace gone: {name}")
        elif now[name] != golden[name]:
            views = sorted(v for v in set(now[name]) | set(golden[name]) if now[name].get(v) != golden[name].get(v))
            lines.append(f"changed: {name} ({', '.join(views)})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help=f"write the hashes to {GOLDEN.relative_to(ROOT)}")
    parser.add_argument("--dump", metavar="DIR", help="write every reading to DIR (to diff two revisions)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    outputs = collect(args.workers)
    if args.dump:
        for name, views in outputs.items():
            for view, text in views.items():
                out = Path(args.dump) / f"{name.replace('/', '__')}.{view}"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text, encoding="utf-8", errors="surrogatepass")
    now = digests(outputs)
    if args.update:
        GOLDEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} traces written to {GOLDEN.relative_to(ROOT)}", file=sys.stderr)
        return 0
    changes = compare(now, json.loads(GOLDEN.read_text()))
    print("\n".join(changes) or f"all {len(now)} traces read as before", file=sys.stderr)
    return 1 if changes else 0


if __name__ == "__main__":
    sys.exit(main())
