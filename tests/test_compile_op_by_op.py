"""compile-overhead where a compiled graph runs op by op (issue 35, review 4's hta_v100_dfidx): an AOTAutograd
backward without generated kernels spends its host time between thousands of aten ops, which is not a wrapper's
fixed cost: the finding says so and gives the backend change, not "more work per call"."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from pista.analysis import analyze

FIXTURES = Path(__file__).parent / "fixtures"


def _raw(name: str) -> list[dict]:
    doc = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_an_op_by_op_compiled_backward_is_told_as_its_ops():
    events = _raw("foreign/hta_v100_dfidx.json.gz")
    calls = [e for e in events if e.get("name") == "CompiledFunctionBackward" and e.get("ph") == "X"]
    assert calls
    first = min(calls, key=lambda e: float(e["ts"]))
    lo, hi = float(first["ts"]), float(first["ts"]) + float(first["dur"])
    inside = [e for e in events if e.get("ph") == "X" and e.get("tid") == first["tid"] and lo < float(e["ts"]) < hi]
    aten = sum(1 for e in inside if str(e.get("name", "")).startswith("aten::"))
    generated = [e for e in inside if str(e.get("name", "")).startswith(("triton_", "## Call"))]
    assert aten > 1000 and not generated

    a = analyze(str(FIXTURES / "foreign/hta_v100_dfidx.json.gz"))
    [f] = [f for f in a.findings if f.rule == "compile-overhead"]
    assert 100 <= f.record.op_by_op_ops <= aten
    assert "op by op" in f.message and "wrapper" not in f.fix.lower().split(":")[0]
    assert "inductor" in f.advice and "more work" not in f.advice
    # the collectives the backward's hooks issue are its payload, not host time between ops
    allreduce_us = sum(float(e["dur"]) for e in inside if e.get("name") == "c10d::allreduce_")
    assert f.record.wrapper_us_per_call < float(first["dur"]) - allreduce_us


def test_an_inductor_graph_keeps_its_wrapper_reading():
    """The twin: Inductor's compiled regions call generated kernels; their fixed per-call cost is a wrapper's."""
    a = analyze(str(FIXTURES / "seed_mm64_compile.json.gz"))
    [f] = [f for f in a.findings if f.rule == "compile-overhead"]
    assert f.record.op_by_op_ops == 0 and "op by op" not in f.message
