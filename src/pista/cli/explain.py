"""Print one rule's documentation: what it finds, why it matters, an example, the fix, its thresholds."""

from __future__ import annotations

import argparse
import sys

# `pista explain --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista explain host-sync
  pista explain host-sync --lang es
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", help="a rule id, as `pista rules` lists them")
    parser.add_argument("--lang", default="en", help="language (en, es)")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n import check_lang, rule_docs, rule_title, word
    from pista.rules import get_rule

    lang = check_lang(args.lang)
    rule = get_rule(args.rule)
    lines = [f"{rule.id}: {rule_title(rule.id, lang) or rule.title}", _severity_line(rule, lang), "",
             rule_docs(rule.id, lang) or rule.docs, ""]
    if rule.thresholds:
        lines.append(word("Thresholds:", lang))
        lines += [f"  {name} = {value}" for name, value in rule.thresholds.items()]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _severity_line(rule, lang: str) -> str:  # noqa: ANN001 - a catalogue rule
    """How the rule's severity is set: from the impact, and its exception if it has one."""
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.i18n import rule_severity_exception, word

    severity = word("severity from impact", lang)
    if rule.severity_exception:
        exception = rule_severity_exception(rule.id, lang) or rule.severity_exception
        severity += f" ({word('except', lang)}: {exception})"
    return severity
