"""`pista analyze --format json` is strict JSON, also when a ratio has no GPU time under it."""

from __future__ import annotations

import json
import subprocess
import sys


def _reject(token: str) -> None:
    raise ValueError(f"non-JSON token {token}")


def test_zero_gpu_time_gives_null_not_infinity(tmp_path):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 500,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
         "args": {"External id": 1, "correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 0, "tid": 7, "ts": 40, "dur": 0,
         "args": {"External id": 1, "correlation": 5, "stream": 7, "device": 0}},
    ]
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"traceEvents": events}))
    out = subprocess.run([sys.executable, "-m", "pista", "analyze", str(path), "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout, parse_constant=_reject)
    finding = next(f for f in doc["findings"] if f["rule"] == "overhead-bound")
    assert finding["metrics"]["cpu_to_device_ratio"] is None
    assert "inf" not in finding["message"]


def test_evidence_has_the_fields_the_issue_names(capsys):
    """name, lane, step, ts, dur (µs, like the trace file's own ts and dur), a note and the user's stack."""
    import gzip

    from conftest import fixture

    from pista.cli import main

    assert main(["analyze", str(fixture("seed_mm64_cold")), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    raw = {(e["name"], float(e["ts"])): e for e in json.loads(gzip.decompress(fixture("seed_mm64_cold").read_bytes()))
           ["traceEvents"] if e.get("ph") == "X"}
    evidence = [e for f in doc["findings"] for e in f["evidence"]]
    assert evidence and all(set(e) == {"name", "lane", "step", "ts", "dur", "note", "stack"} for e in evidence)
    # evidence that is one event carries that event's own ts and dur
    matched = [e for e in evidence if (e["name"], e["ts"]) in raw]
    assert len(matched) >= len(evidence) // 2
    assert all(e["dur"] == float(raw[(e["name"], e["ts"])]["dur"]) for e in matched)
