"""The console entry leaves without the interpreter's teardown: what it printed must all be there,
and a reader that leaves early is not an error."""

from __future__ import annotations

import subprocess
import sys

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
