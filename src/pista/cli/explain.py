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
    from pista.i18n import check_lang, rule_docs, rule_severity_exception, rule_title, word
    from pista.rules import get_rule

    lang = check_lang(args.lang)
    rule = get_rule(args.rule)
    severity = word("severity from impact", lang)
    if rule.severity_exception:
        exception = rule_severity_exception(rule.id, lang) or rule.severity_exception
        severity += f" ({word('except', lang)}: {exception})"
    lines = [f"{rule.id}: {rule_title(rule.id, lang) or rule.title}", severity, "",
             rule_docs(rule.id, lang) or rule.docs, ""]
    if rule.thresholds:
        lines.append(word("Thresholds:", lang))
        lines += [f"  {name} = {value}" for name, value in rule.thresholds.items()]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
