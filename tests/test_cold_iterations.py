"""cold-start in windows without ProfilerStep or regions (issue 35: start-up in windows without steps): the
iterations of a compiled model run from one top-level call of its compiled region to the next. Real traces with
their ProfilerStep events taken out, the iteration bounds read from the raw JSON here."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from pista.findings import analyze

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
