"""outside-wait: a call that blocks the host with the GPU idle and nothing queued, checked against the raw events."""

from __future__ import annotations

import pytest
import raw

from pista.rules.outside_wait import ID


def _end(e) -> float:
    return float(e["ts"]) + float(e["dur"])


def _window_us(name: str) -> float:
    cats = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function", "kernel", "gpu_memcpy",
            "gpu_memset"}
    work = [e for e in raw.complete(name) if e.get("cat") in cats and e.get("pid") != -1]
    return max(_end(e) for e in work) - min(float(e["ts"]) for e in work)


@pytest.mark.parametrize("name", ["foreign/tl_sglang_decode", "foreign/tl_sglang_prefilldecode"])
def test_a_copy_blocked_on_work_outside_the_trace_is_named(analysis_of, name):
    # TraceLens' SGLang Qwen3-8B traces on an MI300X (no steps): one hipMemcpyWithStream blocks the host 463 ms
    # (decode, 97.7% of the window) and 493 ms (prefill, 50%) while the GPU runs almost nothing: SGLang's
    # overlapped scheduler waits on work this thread's trace does not hold. Nothing was said
    calls = [e for e in raw.complete(name) if e.get("cat") == "cuda_runtime"]
    longest = max(calls, key=lambda e: float(e["dur"]))
    busy = sum(max(0.0, min(b, _end(longest)) - max(a, float(longest["ts"])))
               for a, b in raw.busy_intervals(name))
    assert longest["name"] == "hipMemcpyWithStream" and float(longest["dur"]) > 400_000
    assert busy < 0.001 * float(longest["dur"])
    finding = analysis_of(name).finding(ID)
    assert finding is not None
    r = finding.record
    assert r.calls == 1 and r.longest[0].name == "hipMemcpyWithStream"
    assert r.longest[0].dur_us == pytest.approx(float(longest["dur"]), abs=1.0)
    assert r.longest[0].busy_us == pytest.approx(busy, abs=1.0)
    assert r.step_share_percent == pytest.approx(100 * float(longest["dur"]) / _window_us(name), abs=0.5)
    # no saving it can back: info, nothing claimed, never the top fix
    assert finding.severity.value == "info" and finding.impact.us == 0
    assert analysis_of(name).top_fix is not finding
    assert "does not hold" in finding.title and "hipMemcpyWithStream" in finding.message


@pytest.mark.parametrize("name", ["gpu/pageable_memcpy", "savings/h100/copy_pageable_tensor__broken",
                                  "foreign/tl_h100_qwen05", "foreign/hta_alexnet", "foreign/hta_negq_rank0",
                                  "gpu/trailing_sync", "gpu/host_sync_item"])
def test_silent_where_the_wait_is_for_work_the_trace_holds(analysis_of, name):
    # copies the GPU runs through, syncs draining queued kernels, start-up inside the window, trailing syncs:
    # the other rules' (pageable-memcpy, host-sync, dead-window, trailing-sync)
    assert analysis_of(name).finding(ID) is None


def test_every_field_renders_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("foreign/tl_sglang_decode").finding(ID), "es")
    assert "no contiene" in finding.title and "hipMemcpyWithStream" in finding.message
    assert finding.advice and finding.fix and finding.basis
    assert all(e.note for e in finding.evidence)


def test_a_copy_staging_its_own_bytes_is_pageable_memcpy_s(tmp_path):
    # kineto's resnet50_num_workers_4 sample (remote.json): an 18.4 MiB pageable cudaMemcpyAsync blocks 40 ms with
    # the GPU idle, the host staging the bytes itself. tl_sglang_decode's 463 ms copy, given that many bytes to
    # move, is such a copy too: no outside wait
    import gzip
    import json

    from conftest import fixture

    from pista.analysis import analyze

    data = json.loads(gzip.decompress(fixture("foreign/tl_sglang_decode").read_bytes()))
    call = max((e for e in data["traceEvents"] if e.get("cat") == "cuda_runtime"), key=lambda e: float(e["dur"]))
    (copy,) = [e for e in data["traceEvents"] if e.get("cat") == "gpu_memcpy"
               and e["args"].get("correlation") == call["args"]["correlation"]]
    copy["args"]["bytes"] = int(0.2 * float(call["dur"]) * 1e3)  # 0.2 GB/s over the call
    path = tmp_path / "staging.json"
    path.write_text(json.dumps(data))
    assert analyze(path).finding(ID) is None
