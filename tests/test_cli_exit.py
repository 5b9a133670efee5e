"""The console entry leaves without the interpreter's teardown: what it printed must all be there,
and a reader that leaves early is not an error."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import fixture

from pista.cli import main

PISTA = [sys.executable, "-m", "pista"]


def test_every_byte_is_flushed_before_the_fast_exit(capsys):
    trace = str(fixture("big_gpt_eager_20steps"))
    assert main(["analyze", trace, "--format", "json"]) == 0
    in_process = capsys.readouterr().out
    proc = subprocess.run([*PISTA, "analyze", trace, "--format", "json"], capture_output=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout.decode() == in_process and len(in_process) > 10_000


def test_a_reader_that_leaves_early_is_not_an_error():
    trace = str(fixture("big_gpt_eager_20steps"))
    proc = subprocess.Popen([*PISTA, "table", trace, "--row-limit", "-1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.read(200)
    proc.stdout.close()  # like `| head -c 200`
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""


@pytest.mark.parametrize("limit", ["-1", "1"])  # more than stdout's buffer holds, and less
def test_output_that_cannot_be_written_is_one_line_and_exit_2(limit):
    trace = str(fixture("seed_mm64_warm"))
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*PISTA, "table", trace, "--row-limit", limit], stdout=full,
                              stderr=subprocess.PIPE, timeout=120)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2
    assert len(lines) == 1 and lines[0].startswith("pista: error: ")
    assert lines[0].endswith("No space left on device")


def _verb_parsers(parser):
    action = next(a for a in parser._actions if a.dest == "verb")
    return action.choices


def test_a_command_builds_its_verb_alone_and_parses_as_the_whole_parser_would():
    from pista.cli import VERBS, build_parser

    whole = _verb_parsers(build_parser([]))
    assert len(whole) > 1
    for verb in whole:
        alone = _verb_parsers(build_parser([verb, "trace.json"]))
        assert list(alone) == [verb]
        assert alone[verb].format_help() == whole[verb].format_help()
    # anything else before the verb, or no known verb: the whole parser, for its errors and suggestions
    for argv in (["--", "analyze"], ["analyz"], ["--help"], []):
        assert len(_verb_parsers(build_parser(argv))) == len(VERBS)
    assert list(_verb_parsers(build_parser(["--version", "table"]))) == ["table"]


def test_a_wrong_verb_is_still_told_every_verb(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["analyz", "t.json"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "did you mean analyze?" in err and "'sql'" in err  # the usage error lists every verb
