"""The examples run as scripts (in this process, at tiny sizes) and declare what `uv run` needs."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch_table import parse_time  # noqa: E402

from pista.trace.load import load_trace  # noqa: E402

pytestmark = pytest.mark.capture

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("[0-9][0-9]_*.py"))
TINY = {"01_matmul_add": ["--size", "32"], "02_linear": ["--size", "32", "--batch", "8"],
        "03_mlp": ["--size", "32", "--batch", "8"], "04_transformer": ["--size", "64", "--batch", "1"]}


def run_example(path: Path, argv: list[str], monkeypatch, capsys) -> str:
    monkeypatch.setattr(sys, "argv", [str(path), *argv])
    runpy.run_path(str(path), run_name="__main__")
    return capsys.readouterr().out


def test_the_four_examples_are_there():
    assert [p.stem for p in EXAMPLES] == list(TINY)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_and_its_trace_matches_torch(path, tmp_path, monkeypatch, capsys):
    out = tmp_path / path.stem
    printed = run_example(path, [*TINY[path.stem], "--device", "cpu", "--out", str(out)], monkeypatch, capsys)
    torch_total = parse_time(re.search(r"^Self CPU time total: (\S+)$", printed, re.M).group(1))
    from pista import analyze

    summary = analyze(out / "trace.json.gz").summary
    assert summary.self_cpu_total_us == pytest.approx(torch_total, rel=0.01)
    assert summary.step_numbers == [2, 3, 4]  # schedule(wait=1, warmup=1, active=3)
    assert summary.verdict in printed


def test_seed_example_compiled_is_one_addmm(tmp_path, monkeypatch, capsys):
    # The seed's second command, at a CPU size: torch.compile fuses matmul + add into one addmm.
    out = tmp_path / "compiled"
    run_example(EXAMPLES[0], ["--size", "32", "--warmup", "--compile", "--device", "cpu", "--out", str(out)],
                monkeypatch, capsys)
    trace = load_trace(out / "trace.json.gz")
    names = [trace.event_name(i) for i in range(len(trace))]
    assert names.count("aten::addmm") == 3 and "aten::add" not in names
    assert any(n.startswith("Torch-Compiled Region") for n in names)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_inline_script_metadata(path):
    tomllib = pytest.importorskip("tomllib")
    block = re.search(r"^# /// script\n((?:#.*\n)+?)# ///$", path.read_text(), re.M)
    assert block, "PEP 723 block missing"
    meta = tomllib.loads("".join(line[2:] if line.startswith("# ") else line[1:]
                                 for line in block.group(1).splitlines(keepends=True)))
    assert "torch==2.13.0" in meta["dependencies"] and "pista" in meta["dependencies"]
    source = meta["tool"]["uv"]["sources"]["pista"]
    project = (path.parent / source["path"]).resolve()
    assert tomllib.loads((project / "pyproject.toml").read_text())["project"]["name"] == "pista"
