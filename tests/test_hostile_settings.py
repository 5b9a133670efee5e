"""Settings and peaks files made to break pista (the reliability issue's items 18, 20 and 24): each
is bad input, refused in one line that names the key, exit 2; never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fixture

from pista import config, efficiency
from pista.errors import UsageError
from pista.rules import catalogue

PISTA = [sys.executable, "-m", "pista"]
REAL = "seed_mm64_cold"  # a small real H200 trace


def run_cli(*argv: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PISTA, *argv], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PISTA_DEBUG": "", **(env or {})}, errors="replace")


def one_error_line(proc: subprocess.CompletedProcess[str], *says: str) -> None:
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("pista: error: ") and all(s in lines[0] for s in says), proc.stderr


def settings(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(text)
    return tmp_path


# -- 18: pyproject.toml --------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "says"), [
    ('tool = "x"\n', "tool: expected a table"),
    ('[tool]\npista = 3\n', "tool.pista: expected a table"),
    ('[tool.pista.rules]\nhost-sync = 5\n', "rules.host-sync: expected a table of thresholds"),
    ('[tool.pista.rules]\nhost-sync = []\n', "rules.host-sync: expected a table of thresholds"),
    ('[tool.pista.rules.host-sync]\nEVIDENCE_EVENTS = 0\n', "rules.host-sync.EVIDENCE_EVENTS: expected int above 0"),
    ('[tool.pista.rules.host-sync]\nEVIDENCE_EVENTS = true\n', "EVIDENCE_EVENTS: expected int, not a boolean"),
    ('[tool.pista.rules.host-sync]\nEVIDENCE_EVENTS = 9223372036854775807\n', "EVIDENCE_EVENTS: expected a finite int"),
    ('[tool.pista.rules.overhead-bound]\nMIN_SHARE = nan\n', "overhead-bound.MIN_SHARE: expected a finite float"),
    ('[tool.pista.rules.overhead-bound]\nMIN_SHARE = inf\n', "overhead-bound.MIN_SHARE: expected a finite float"),
    ('[tool.pista.rules.overhead-bound]\nMIN_SHARE = -0.5\n', "overhead-bound.MIN_SHARE: expected float above 0"),
    ('[tool.pista.rules.overhead-bound]\nOPTIONS_SLICE = 0\n', "overhead-bound.OPTIONS_SLICE: expected int above 0"),
    ('[tool.pista.rules.anomaly-mode]\nSEQ_ODD = 5\n', "anomaly-mode.SEQ_ODD: a marker"),
    ("[tool.pista]\nx = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n", "nested too deeply"),
    ("[tool.pista]\nx = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
])
def test_hostile_settings_are_one_line_and_exit_2(tmp_path, text, says):
    # exit 3 before: AttributeError, ZeroDivisionError, IndexError, range() step 0, RecursionError
    proc = run_cli("analyze", str(fixture(REAL)), cwd=settings(tmp_path, text))
    one_error_line(proc, "pyproject.toml", says)


def _numeric_thresholds() -> list[tuple[str, str, object]]:
    return [(rule.id, name, value) for rule in catalogue() for name, value in rule.thresholds.items()
            if isinstance(value, (int, float)) and value > 0]


@pytest.mark.parametrize("bad", ["0", "nan", "-1"])
def test_no_threshold_takes_zero_nan_or_a_negative(tmp_path, bad):
    # the rules divide by their thresholds, range() over them and index with them
    for rule_id, name, _ in _numeric_thresholds():
        settings(tmp_path, f"[tool.pista.rules.{rule_id}]\n{name} = {bad}\n")
        with pytest.raises(UsageError, match=f"rules.{rule_id}.{name}: expected"):
            config.load(start=tmp_path)


# -- 20: --peaks ----------------------------------------------------------------------------------


def peaks(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "peaks.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


GOOD_PEAKS = {"name": "my GPU", "tflops": {"bf16": 989, "fp32": 67}, "hbm_tbps": 4.8, "compute_major": 9}


@pytest.mark.parametrize(("text", "says"), [
    ('{"tflops": {"bf16": 0, "fp32": 0}, "hbm_tbps": 0}', "tflops.bf16: expected a number above 0"),
    ('{"tflops": {"bf16": 989}, "hbm_tbps": 0}', "hbm_tbps: expected a number above 0"),
    ('{"tflops": {"bf16": 989}, "hbm_tbps": 4.8, "measured": {"hbm": -1}}', "measured.hbm: expected"),
    ('{"tflops": {"bf16": "nan"}, "hbm_tbps": 4.8}', "tflops.bf16: expected"),
    ('{"tflops": {"bf16": 1e400}, "hbm_tbps": 4.8}', "not a peaks file (not JSON: Number out of range"),
    ('{"tflops": {"bf16": "1e400"}, "hbm_tbps": 4.8}', "tflops.bf16: expected"),
    ('{"tflops": {"bf16": true}, "hbm_tbps": 4.8}', "tflops.bf16: expected"),
    ('{"tflops": [989], "hbm_tbps": 4.8}', "tflops: expected an object"),
    ('{"tflops": {"bf16": 989}, "hbm_tbps": 4.8, "compute_major": 1e300}', "compute_major: expected a whole number"),
    ('{"tflops": {"bf16": 989}, "hbm_tbps": 4.8, "compute_major": -3}', "compute_major: expected a whole number"),
    ("[" * 5000 + "]" * 5000, "not a peaks file (not JSON: nested too deeply"),
    ('{"a": ' * 5000 + "1" + "}" * 5000, "not a peaks file (not JSON: nested too deeply"),
    ("[1, 2]", "not a peaks file"),
])
def test_hostile_peaks_are_one_line_and_exit_2(tmp_path, text, says):
    # all-zero peaks divided by zero, deep nesting recursed: exit 3 before
    proc = run_cli("analyze", str(fixture(REAL)), "--peaks", str(peaks(tmp_path, text)), cwd=tmp_path)
    one_error_line(proc, "peaks.json: ", says)


def test_peaks_from_an_endless_file_are_refused(tmp_path):
    # read whole before: `--peaks /dev/zero` grew without end
    proc = run_cli("analyze", str(fixture(REAL)), "--peaks", "/dev/zero", cwd=tmp_path)
    one_error_line(proc, "/dev/zero: more than 1,048,576 bytes")


def test_good_peaks_are_read(tmp_path):
    path = peaks(tmp_path, json.dumps(GOOD_PEAKS))
    card = efficiency.load_peaks(str(path))
    assert card.tflops == {"bf16": 989.0, "fp32": 67.0} and card.hbm_tbps == 4.8 and card.compute_major == 9


# -- 24: numbers on the command line ----------------------------------------------------------


@pytest.mark.parametrize(("argv", "says"), [
    (["table", "--group-by-stack", str(10**20)], f"--group-by-stack {10**20}: give 0 to 128 frames"),
    (["table", "--group-by-stack", "-1"], "--group-by-stack -1: give 0 to 128 frames"),
    (["check", "--baseline", "BASE", "--max-regression", "nan"], "--max-regression nan: give a percentage"),
    (["check", "--baseline", "BASE", "--max-regression", "inf"], "--max-regression inf: give a percentage"),
    (["check", "--baseline", "BASE", "--max-regression", "-5"], "--max-regression -5: give a percentage"),
])
def test_hostile_numbers_on_the_command_line(tmp_path, argv, says):
    # --group-by-stack 10^20 was exit 3; --max-regression nan let a 22% regression pass the gate
    trace = str(fixture(REAL))
    proc = run_cli(*[trace if a == "BASE" else a for a in argv], trace, cwd=tmp_path)
    one_error_line(proc, says)
