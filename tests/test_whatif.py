"""`pista whatif`: the user's own edits replayed, with figures computed from the raw events."""

from __future__ import annotations

import json
import statistics

import pytest
import raw
from conftest import fixture

from pista.cli import main


def _run(capsys, *args):
    code = main(["whatif", *args])
    return code, capsys.readouterr()


def test_unchanged_is_the_trace(capsys):
    name = "gpu/host_sync_item"
    code, out = _run(capsys, str(fixture(name)), "--format", "json")
    data = json.loads(out.out)
    assert code == 0 and data["replay_error"] < 0.05 and data["saved_us"] == 0
    spans = raw.steps(name)
    assert [r["step"] for r in data["steps"]] == [int(s["name"].split("#")[1]) for s in spans]
    # each GPU lane's busy time per step: the kernels, copies and memsets the steps launched, from the raw events
    bounds = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in spans]
    work = [w for w in raw.device_work(name) if any(a <= raw.launched_at(name, w) < b for a, b in bounds)]
    gpu = [x for x in data["lanes"] if x["what"] == "busy"]
    assert sum(x["before_us"] for x in gpu) == pytest.approx(sum(float(w["dur"]) for w in work) / len(spans), rel=1e-6)


def test_dropping_the_reads_saves_at_most_their_time(capsys):
    name = "gpu/host_sync_item"
    code, out = _run(capsys, str(fixture(name)), "--drop", "^aten::item$", "--format", "json")
    data = json.loads(out.out)
    items = raw.complete(name, "cpu_op", "aten::item")
    assert code == 0 and data["matched"]["--drop ^aten::item$"] == len(items)
    steps = [r["replayed_us"] - r["after_us"] for r in data["steps"]]
    per_step = sum(float(e["dur"]) for e in items) / len(steps)
    assert 0 < statistics.median(steps) <= per_step * 1.001
    host = next(x for x in data["lanes"] if x["lane"] == "host")
    assert host["after_us"] == 0 < host["before_us"]  # no sync left to wait in


def test_faster_kernels_on_a_gpu_bound_trace(capsys):
    code, out = _run(capsys, str(fixture("seed_mm4096_warm")), "--scale-kernels", "nvjet|gemm=0.5")
    assert code == 0 and "median step" in out.out and "GPU 0 stream" in out.out


@pytest.mark.parametrize("args", [["--drop", "("], ["--scale-kernels", "x"], ["--scale-host", "x=-1"]])
def test_bad_edits_get_one_line_and_exit_2(capsys, args):
    code, out = _run(capsys, str(fixture("seed_mm64_warm")), *args)
    assert code == 2 and out.out == "" and len(out.err.strip().splitlines()) == 1
