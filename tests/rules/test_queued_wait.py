"""queued-wait on real traces: HTA's hta_negq_rank0, whose GPU idles half of each step with its next work (mostly a
CUDA graph replay's first node) queued long before, and TraceLens' vLLM window whose first recorded work runs 149 ms
after its launch; the twins, where the GPU's idle ends at work launched inside it, stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
import raw
from conftest import fixture

from pista.analysis import analyze
from pista.rules.queued_wait import ID, MIN_STALL_NS

NEGQ = "foreign/hta_negq_rank0"
VLLM = Path("/work/foreign_traces/heldout/tl_vllm_piecewise_graph.json.gz")  # held out, not committed


def _queued_gaps(name: str) -> list[tuple[float, float, str]]:
    """From the raw JSON, inside the steps: each stretch of at least MIN_STALL_NS with no device work on any stream
    whose next work's launch call had ended before the stretch began (start, end µs, the launch call's name)."""
    launch = {c["args"]["correlation"]: c for c in raw.complete(name) if c.get("cat") in ("cuda_runtime", "cuda_driver")
              and "correlation" in c.get("args", {})}
    work = sorted(raw.device_work(name), key=lambda k: float(k["ts"]))
    steps = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in raw.steps(name)]
    out, end = [], float(work[0]["ts"]) + float(work[0]["dur"])
    for k in work[1:]:
        a, b = end, float(k["ts"])
        call = launch.get(k.get("args", {}).get("correlation"))
        if (b - a >= MIN_STALL_NS / 1000 and call is not None and any(lo <= a and b <= hi for lo, hi in steps)
                and float(call["ts"]) + float(call["dur"]) <= a):
            out.append((a, b, call["name"]))
        end = max(end, float(k["ts"]) + float(k["dur"]))
    return out


def test_the_gpu_waiting_with_its_work_queued_is_named():
    """hta_negq_rank0: ~100 ms of each 216 ms step the GPU runs nothing while the work that ends the idle was
    launched before it began (a backward graph replay queued at +187 ms, run 63 ms after the GPU went quiet). No
    rule spoke before ('balanced', the idle unnamed); now queued-wait names it, by what ends it, and the engine
    replays it with that work run once launched."""
    gaps = _queued_gaps(NEGQ)
    steps = len(raw.steps(NEGQ))
    queued = sum(b - a for a, b, _ in gaps) / steps
    graph = sum(b - a for a, b, call in gaps if call == "cudaGraphLaunch") / steps
    assert queued > 0.4 * raw.median_step_us(NEGQ) and graph > 0.8 * queued
    analysis = analyze(fixture(NEGQ))
    f = analysis.finding(ID)
    assert f is not None and f.severity.value == "warning"
    # the rule's idle is the raw figure less what the syncs and gpu-idle's region already claim (4.7 ms a step)
    assert 0.85 * queued <= f.record.stall_us <= queued * 1.01
    assert dict(f.record.by_next)["graph"] > 0.8 * f.record.stall_us
    assert f.impact.replayed and 0 < f.impact.us <= f.record.stall_us
    assert "cudaStreamWaitEvent" in f.advice and "DataLoader" not in f.advice
    assert f.record.first_wait_us == 0.0
    es = analyze(fixture(NEGQ), rules=[ID], replay=False).findings[0]
    es.lang = "es"
    assert "cudaStreamWaitEvent" in es.advice and "la GPU no ejecuta nada" in es.message


@pytest.mark.parametrize("path", [fixture("foreign/tl_vllm_graph_exec"), VLLM], ids=lambda p: p.name)
def test_the_wait_before_a_windows_first_work_claims_nothing(path):
    """TraceLens' vLLM windows (graph_exec committed; the piecewise-graph one held out, skipped without it): the first
    copy runs 7.8 ms (149 ms) after its launch with nothing recorded before it, and from then the GPU runs back to
    back while the host had launched everything long before. What the GPU did before is not in the trace: the
    window is named GPU-bound, with nothing claimed."""
    if not path.exists():
        pytest.skip(f"{path} is not in this checkout")
    import gzip
    import json

    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    work = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    first = work[0]
    call = next(c for c in calls if c.get("args", {}).get("correlation") == first["args"]["correlation"])
    wait = float(first["ts"]) - float(call["ts"]) - float(call["dur"])
    host_done = max(float(c["ts"]) + float(c["dur"]) for c in calls)
    end = max(float(k["ts"]) + float(k["dur"]) for k in work)
    busy = sum(float(k["dur"]) for k in work)  # the kernels do not overlap here: back to back on one stream
    assert wait > 5_000 and host_done < float(first["ts"]) and busy > 0.9 * (end - float(first["ts"]))
    f = analyze(str(path)).finding(ID)
    assert f is not None and f.severity.value == "info" and f.impact.us == 0.0 and f.edit is None
    assert f.record.first_wait_us == pytest.approx(wait, rel=0.01) and f.record.busy_after_percent > 90
    assert f.record.host_done_at_us < f.record.first_start_at_us
    assert f.record.stall_us == 0.0 and "GPU-bound" in f.advice


@pytest.mark.parametrize("name", ["foreign/hta_sampled_rank0", "foreign/hta_nccl_data", "foreign/kineto_resnet50_w0_2021",
                                  "gpu/gpu_idle_dataloader", "series_mlp_eager", "foreign/tl_h100_timesformer",
                                  "foreign/hta_backward_thread"])
def test_idle_that_ends_at_work_launched_late_is_not_a_queued_wait(name):
    """The twins: a loader, host work, an eager loop and a pipeline's preprocessing leave the GPU idle until the
    host launches; hta_sampled_rank0, whose queued stretches sit under a host that is slower still (its dropped
    ops), saves nothing when replayed without them; hta_backward_thread's one 45 µs kernel, queued 64 ms, is no
    GPU-bound window: no queued-wait finding."""
    assert analyze(fixture(name)).finding(ID) is None
