"""The reader, the settings and the CLI against inputs made to exhaust them (the reliability
issue's items 3-24): regexes and nesting that went quadratic, unbounded reads of standard input and
of gzip bombs, settings and peaks files of the wrong shape, mistyped trace fields.

Quadratic cases are timed at two sizes in one run (tests/scaling.py) and must grow about linearly;
memory cases run pista in a subprocess under an address-space limit.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scaling import growth

from pista.errors import BadTrace
from pista.trace import load

PISTA = [sys.executable, "-m", "pista"]
# Sizes 4x apart: linear work grows ~4x, quadratic ~16x; the bound sits between, with room for noise.
SIZE_STEP = 4
LINEAR_BOUND = 8


def run_cli(*argv: object, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120,
            stdin: bytes | None = None, preexec=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PISTA, *argv], capture_output=True, timeout=timeout, cwd=cwd, input=stdin,
                          env={**os.environ, "PISTA_DEBUG": "", **(env or {})}, preexec_fn=preexec)


def one_error_line(proc: subprocess.CompletedProcess, says: str) -> None:
    err = proc.stderr.decode(errors="replace")
    lines = err.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, err
    assert lines[0].startswith("pista: error: ") and says in lines[0], err


def op(name: str = "aten::mm", ts: float = 10.0, dur: float = 5.0, **extra: object) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, **extra}


# -- 3: the bare-NaN repair's regex ----------------------------------------------------------


def _cut_in_escaped_quotes(size: int) -> bytes:
    # one line, a bare NaN (so the repair runs), then a string cut off inside a run of \"
    return b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": NaN, "args": {"s": "' + b'\\"' * (size // 2)


def test_a_bare_nan_cut_off_in_escaped_quotes_is_linear():
    # each '"' of the run started a string match that ran to the end and failed: 64 KB took 9.7 s
    def make(size: int):
        data = _cut_in_escaped_quotes(size)

        def call() -> None:
            with pytest.raises(BadTrace, match="cut off"):
                load.decode_trace(data, "cut.json", [])
        return call

    assert growth(make, 8 << 10, SIZE_STEP * (8 << 10)) < LINEAR_BOUND


def test_a_small_gzip_of_escaped_quotes_is_refused_quickly(tmp_path):
    path = tmp_path / "quotes.json.gz"
    path.write_bytes(gzip.compress(_cut_in_escaped_quotes(256 << 10)))
    assert path.stat().st_size < 2000
    one_error_line(run_cli("table", path.name, cwd=tmp_path, timeout=30), "cut off")
