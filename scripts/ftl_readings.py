"""What a rule says now, to diff before and after converting its text to Fluent (src/pista/i18n/README.md):
for every fixture on which it fires, golden's readings (json-en, json-es, text-en) plus the Spanish
terminal text (golden does not hash it), and `pista explain RULE` in each language. A tool of the
conversion: delete it with scripts/ftl_skeleton.py once every rule is converted.

    python scripts/ftl_readings.py trailing-sync /tmp/before   # then convert, then
    python scripts/ftl_readings.py trailing-sync /tmp/after && diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden  # noqa: E402


def _readings(job: tuple[Path, str]) -> tuple[str, dict[str, str]]:
    path, rule = job
    from pista.analysis import analyze
    from pista.cli.common import open_trace
    from pista.render import terminal

    out = golden.readings(path)
    if f'"rule": "{rule}"' not in out.get("json-en", ""):
        return str(path.relative_to(golden.ROOT)), {}
    with contextlib.redirect_stderr(io.StringIO()):
        facts = open_trace(str(path.relative_to(golden.ROOT)))
    out["text-es"] = terminal.render(analyze(facts), color=False, width=110, lang="es", verbose=True)
    return str(path.relative_to(golden.ROOT)), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rule")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    from pista.cli import main as pista

    args.dest.mkdir(parents=True, exist_ok=True)
    for lang in ("en", "es"):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            pista(["explain", args.rule, "--lang", lang])
        (args.dest / f"explain.{lang}").write_text(text.getvalue(), encoding="utf-8")
    with ProcessPoolExecutor(2) as pool:
        jobs = [(p, args.rule) for p in golden.trace_files()]
        fired = 0
        for name, views in pool.map(_readings, jobs, chunksize=2):
            fired += bool(views)
            for view, text in views.items():
                (args.dest / f"{name.replace('/', '__')}.{view}").write_text(text, encoding="utf-8",
                                                                            errors="surrogatepass")
    print(f"{args.rule}: fires on {fired} fixtures; readings in {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
