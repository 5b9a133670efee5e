"""List the rule catalogue: id and title of every rule."""

from __future__ import annotations

import argparse
import json
import sys

# `pista rules --help` ends with these (cli.build_parser)
EXAMPLES = """\
  pista rules
  pista rules --format json
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    # start-up: only when the verb runs, not for its parser (pista.cli)
    from pista.rules import catalogue

    rules = catalogue()
    if args.format == "json":
        json.dump([{"id": r.id, "title": r.title} for r in rules], sys.stdout,
                  indent=1)
        sys.stdout.write("\n")
        return 0
    width = max((len(r.id) for r in rules), default=10)
    for r in rules:
        sys.stdout.write(f"{r.id:<{width}}  {r.title}\n")
    return 0
