"""cpu-tensor-creation on real traces: a public benchmark drawing its inputs with torch.randn on the CPU and
moving them with .to('cuda') (solangii's traces, fetched by scripts/fetch_foreign.py: skipped without them),
and traces that build a model on the CPU and move it once, or make tensors on the GPU, which stay quiet."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import fixture

from pista.analysis import analyze
from pista.i18n import localize_finding
from pista.rules.cpu_tensor_creation import ID

CACHE = Path(os.environ.get("PISTA_FOREIGN_CACHE") or Path.home() / ".cache" / "pista" / "foreign")


def _events(path: Path) -> list[dict]:
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.parametrize("name", ["solangii_default.json", "solangii_custom4.json"])
def test_random_inputs_drawn_on_the_cpu_then_copied(name):
    path = CACHE / name
    if not path.exists():
        pytest.skip(f"{name} is fetched by scripts/fetch_foreign.py (not redistributable)")
    events = _events(path)
    randn = sorted((e for e in events if e["name"] == "aten::randn"), key=lambda e: float(e["ts"]))
    copies = sorted((e for e in events if e["name"] == "aten::to" and e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    # each randn is followed by a .to() before the next randn, and no kernel is launched inside any randn
    followed = [r for k, r in enumerate(randn) if any(
        float(r["ts"]) + float(r["dur"]) <= float(c["ts"]) < (float(randn[k + 1]["ts"]) if k + 1 < len(randn) else 1e30)
        for c in copies)]
    launches = [e for e in events if e["name"] == "cudaLaunchKernel"]
    assert not any(float(r["ts"]) <= float(x["ts"]) < float(r["ts"]) + float(r["dur"]) for r in randn for x in launches)
    f = next(f for f in analyze(str(path)).findings if f.rule == ID)
    assert f.record.calls == len(followed) >= 2 and f.record.ops[0] == "aten::randn"
    assert f.record.create_us * f.record.steps == pytest.approx(sum(float(r["dur"]) for r in followed), rel=1e-3)
    assert f.severity.value == "critical" and "device='cuda'" in f.advice
    assert "device='cuda'" in localize_finding(f, "es").advice


@pytest.mark.parametrize("name", ["foreign/hta_alexnet", "foreign/hta_mi250_minitoy", "savings/h100/numpy_preprocess__broken",
                                  "savings/h100/copy_pageable_tensor__broken", "savings/h100/healthy_gpt_bf16__broken",
                                  "gpu/resnet50_bf16", "series_linear_train"])
def test_a_model_built_on_the_cpu_and_moved_once_or_gpu_tensors_stay_quiet(name):
    """hta_alexnet draws its weights with uniform_ on the CPU and moves the model once (the copy holds CUDA's
    start-up); minitoy draws one input; the others copy host data (NumPy, a pageable tensor) or make nothing
    on the CPU: not this rule's."""
    assert not [f for f in analyze(fixture(name)).findings if f.rule == ID]
