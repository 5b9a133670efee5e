"""`pista VERB --help` ends with examples (issue 37, item 7), as ruff's and pytest's do, and each
example is a command line the verb accepts."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from pista.cli import VERBS, build_parser


@pytest.mark.parametrize("verb", [v for v, _, _ in VERBS])
def test_each_verbs_help_ends_with_examples_it_accepts(verb):
    out = subprocess.run([sys.executable, "-m", "pista", verb, "--help"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    assert 1 <= len(examples) <= 4 and all(line.startswith(f"  pista {verb}") for line in examples), out
    for line in examples:
        # the command itself: what a shell gives pista, before a pipe, a redirect or a comment
        words = shlex.split(line.split(" | ")[0].split(" >")[0], comments=True)[1:]
        if verb == "profile":
            words = words[: next(i for i, w in enumerate(words) if w.endswith(".py")) + 1]  # then the script's own
        args, extra = build_parser(words).parse_known_args(words)
        assert args.verb == verb and not extra, line
