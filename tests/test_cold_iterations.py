"""cold-start in windows without ProfilerStep or regions (issue 35: start-up in windows without steps): the
iterations of a compiled model run from one top-level call of its compiled region to the next. Real traces with
their ProfilerStep events taken out, the iteration bounds read from the raw JSON here."""

from __future__ import annotations

import gzip
import itertools
import json
import re
import statistics
from pathlib import Path

import pytest

from pista.analysis import analyze

FIXTURES = Path(__file__).parent / "fixtures"
COMPILED = re.compile(r"^Torch-Compiled Region: \d+/\d+$")


def _without_steps(name: str, tmp_path: Path) -> tuple[Path, list[dict]]:
    """The trace with its ProfilerStep events and record_function regions removed, and its top-level
    compiled-region calls (raw events)."""
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
                          and e.get("cat") not in ("user_annotation", "gpu_user_annotation")]
    calls = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and COMPILED.match(str(e.get("name", "")))),
                   key=lambda e: float(e["ts"]))
    out = tmp_path / "nosteps.json"
    out.write_text(json.dumps(doc))
    return out, calls


def test_a_cold_compiled_loop_without_steps_is_told_as_its_first_iteration(tmp_path):
    """gpu/compile_warmup (a compiled MLP profiled from its first call, 3 steps): without its ProfilerStep events and
    regions the first iteration, from the first compiled call to the second, is the cold one."""
    path, calls = _without_steps("gpu/compile_warmup.json.gz", tmp_path)
    names = {c["name"] for c in calls}
    assert len(names) == 1 and len(calls) == 3
    a = analyze(str(path))
    cold = [f for f in a.findings if f.rule == "cold-start"]
    assert len(cold) == 1
    r = cold[0].record
    assert r.kind == "iteration" and r.name == calls[0]["name"] and r.others == len(calls) - 1
    assert r.first_us == pytest.approx(float(calls[1]["ts"]) - float(calls[0]["ts"]), abs=1.0)
    assert r.first_us > 3 * r.median_others_us
    # the steady iterations are not priced as per-step overhead out of the cold one's idle
    assert not [f for f in a.findings if f.rule == "overhead-bound" and f.impact.share > 0.5]


@pytest.mark.parametrize("name", ["savings/h100/healthy_compiled_bf16__broken.json.gz", "seed_mm4096_compile.json.gz"])
def test_a_warm_compiled_loop_without_steps_stays_quiet(name, tmp_path):
    """The twins: compiled loops profiled after a warm-up (schedule(wait=1, warmup=1, active=3)), their ProfilerStep
    events taken out: every iteration alike, no cold start."""
    path, calls = _without_steps(name, tmp_path)
    assert len(calls) >= 2
    a = analyze(str(path))
    assert not [f for f in a.findings if f.rule == "cold-start"]


def test_a_training_loop_without_steps_is_told_by_its_optimizer_steps():
    """foreign/param_linear_kineto (review 5): 40 SGD iterations in a 2.0 s window with no ProfilerStep; the first
    iteration, up to the end of the first Optimizer.step#, holds CUDA's start-up. The iterations are read from the
    raw events here: each ends with its top-level optimizer step."""
    doc = json.loads(gzip.decompress((FIXTURES / "foreign/param_linear_kineto.json.gz").read_bytes()))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps = sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("Optimizer.step#")),
                   key=lambda e: float(e["ts"]))
    ends = [float(e["ts"]) + float(e["dur"]) for e in steps]
    median = statistics.median(b - a for a, b in itertools.pairwise(ends))
    a = analyze(str(FIXTURES / "foreign/param_linear_kineto.json.gz"))
    [cold] = [f for f in a.findings if f.rule == "cold-start"]
    r = cold.record
    assert r.kind == "update" and r.name == steps[0]["name"] and r.others == len(steps) - 1
    assert r.median_others_us == pytest.approx(median, rel=0.01)
    assert r.first_us > 20 * r.median_others_us
    # the start-up inside the first iteration is cold-start's alone: lazy-loading does not restate it
    assert not [f for f in a.findings if f.rule in ("lazy-loading", "dead-window")]


def test_the_first_iteration_of_a_training_loop_is_cold_starts_whole():
    """foreign/kineto_resnet50_autograd_api (kineto's ResNet-50 sample, no ProfilerStep, cudnn.benchmark): the
    first iteration, up to the end of the first Optimizer.step#, holds cuDNN's benchmark pass and CUDA's lazy start:
    one cold-start finding, and cudnn-setup and lazy-loading do not restate it."""
    a = analyze(str(FIXTURES / "foreign/kineto_resnet50_autograd_api.json.gz"))
    [cold] = [f for f in a.findings if f.rule == "cold-start"]
    assert cold.record.kind == "update" and cold.record.first_us > 10 * cold.record.median_others_us
    assert not [f for f in a.findings if f.rule in ("cudnn-setup", "lazy-loading")]
