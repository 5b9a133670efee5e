"""Start a rule's Fluent catalogues (src/pista/i18n/ftl/{en,es}/<rule>.ftl) from its Python text: the title,
the docs (English: the rule's docstring; Spanish: DOCS) and the severity exception, escaped for Fluent.
The finding's parts and notes are then written by hand (src/pista/i18n/README.md). A tool of the
conversion to Fluent: delete it with the Python text modules once every rule is converted.

    python scripts/ftl_skeleton.py channels-last
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

FTL = Path(__file__).resolve().parents[1] / "src" / "pista" / "i18n" / "ftl"


def escape(line: str) -> str:
    """A line of text as Fluent reads it back: braces quoted, and a line that starts with [, * or . (a
    variant or an attribute, to Fluent) opened with an empty placeable."""
    line = re.sub(r"[{}]", lambda m: '{"' + m.group(0) + '"}', line)
    return '{""}' + line if line.lstrip().startswith(("[", "*", ".")) else line


def block(msg_id: str, text: str) -> str:
    """A message whose value keeps its lines (docs)."""
    lines = [("    " + escape(line)).rstrip() for line in text.strip().splitlines()]
    return f"{msg_id} =\n" + "\n".join(lines) + "\n"


def single(msg_id: str, text: str) -> str:
    return f"{msg_id} = {escape(' '.join(text.split()))}\n"


def skeleton(rule_id: str, lang: str) -> str:
    name = rule_id.replace("-", "_")
    text = importlib.import_module(f"pista.i18n.{lang}.{name}")
    rule = importlib.import_module(f"pista.rules.{name}")
    docs = (rule.__doc__ or "") if lang == "en" else text.DOCS
    exception = getattr(rule if lang == "en" else text, "SEVERITY_EXCEPTION", None)
    out = [f"## {rule_id}: {'the text of its findings, in English' if lang == 'en' else 'en español'}\n",
           single("title", text.TITLE)]
    if exception:
        out.append(single("severity-exception", exception))
    out += ["\n# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)\n\n",
            block("docs", docs)]
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rule", help="a rule id (channels-last)")
    args = parser.parse_args(argv)
    for lang in ("en", "es"):
        path = FTL / lang / f"{args.rule.replace('-', '_')}.ftl"
        if path.exists():
            raise SystemExit(f"{path} exists")
        path.write_text(skeleton(args.rule, lang), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
