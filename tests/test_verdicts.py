"""The input-bound verdict: a window whose host waits for its DataLoader most of the step reads "input-bound", not
"overhead-bound" or "balanced" (review 5: two T4 MLP traces with 63-81% of the step in the DataLoader read
"overhead-bound"); the share is checked against the trace's own DataLoader marker durations, read plainly."""

from __future__ import annotations

import pytest

from pista.analysis import analyze
from pista.policy import INPUT_MIN_SHARE, START_UP_SHARE
from tests.raw import FIXTURES, complete

DATALOADER = "enumerate(DataLoader)#"


def loader_share(name: str) -> float:
    """The data regions' time inside the steps over the steps' time, from the raw events: torch's DataLoader
    markers, and gpu/gpu_idle_dataloader's own `data_loading` region."""
    # ProfilerStep marks in whatever category the profiler gave them (torch 1.8: an 'Operator')
    marks = [e for e in complete(name) if str(e.get("name", "")).startswith("ProfilerStep#")]
    spans = [(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in marks]
    inside = 0.0
    for e in complete(name):
        if not str(e.get("name", "")).startswith((DATALOADER, "data_loading")):
            continue
        a, b = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        inside += sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in spans)
    return inside / sum(hi - lo for lo, hi in spans)


# Traces whose loop waits for its DataLoader (each has ProfilerStep marks, so the share can be read plainly),
# and twins of the same kind whose loader keeps up.
WAITING = ["gpu/gpu_idle_dataloader", "gpu/resnet_loader", "savings/h100/loader_no_workers__broken",
           "foreign/kineto_resnet50_w0_2021"]
FED = ["savings/h100/loader_no_workers__fixed", "savings/h100/healthy_loader_workers__broken",
       "savings/h100/loader_pageable__broken", "foreign/kineto_resnet50_w0_early"]


@pytest.mark.parametrize("name", WAITING)
def test_a_loop_waiting_for_its_loader_is_input_bound(name: str) -> None:
    assert loader_share(name) >= INPUT_MIN_SHARE
    summary = analyze(str(FIXTURES / f"{name}.json.gz"), replay=False).summary
    assert summary.verdict == "input-bound"
    assert summary.input_share == pytest.approx(loader_share(name), abs=0.1)


@pytest.mark.parametrize("name", FED)
def test_a_loop_its_loader_keeps_up_with_keeps_its_verdict(name: str) -> None:
    assert loader_share(name) < INPUT_MIN_SHARE
    summary = analyze(str(FIXTURES / f"{name}.json.gz"), replay=False).summary
    assert summary.verdict in ("overhead-bound", "balanced")


def test_per_op_overhead_is_still_found_behind_the_input() -> None:
    """The host also dominates the GPU once the loader's wait is gone: overhead-bound still reads the rest
    (host_bound), and the profiler-inflation notice of a balanced window, whose host time here is waiting for
    data the profiler does not inflate, is not given."""
    analysis = analyze(str(FIXTURES / "gpu/resnet_loader.json.gz"))
    s = analysis.summary
    assert s.host_bound and s.self_cpu_total_us >= 3 * s.self_device_total_us
    assert "overhead-bound" in analysis.rules_fired
    balanced = analyze(str(FIXTURES / "foreign/kineto_resnet50_w0_2021.json.gz"), replay=False)
    assert not any(n.startswith("balanced") for n in balanced.notices)


def _steps_us(name: str) -> tuple[float, int]:
    marks = [e for e in complete(name) if str(e.get("name", "")).startswith("ProfilerStep#")]
    return sum(float(e["dur"]) for e in marks), len(marks)


def test_a_window_of_start_up_says_so() -> None:
    """gpu/compile_warmup profiles torch.compile's first compile (Dynamo's `dynamo` events hold most of its
    steps): the verdict says start-up, not overhead-bound, and the host-time line puts the compile in its own
    region, not in "Python between ops" (review 6: cs521a_myconv_inductor, 'Python between ops 793 ms (72%)')."""
    name = "gpu/compile_warmup"
    compile_us = sum(float(e["dur"]) for e in complete(name, "cpu_op", "dynamo"))
    steps_us, n = _steps_us(name)
    assert compile_us >= START_UP_SHARE * steps_us
    summary = analyze(str(FIXTURES / f"{name}.json.gz")).summary
    assert summary.verdict == "start-up"
    main = max(summary.host_time_by_region.values(), key=lambda regions: sum(regions.values()))
    assert main["compile"] == pytest.approx(compile_us / n, rel=0.1)
    assert main["python"] < 0.05 * main["compile"]


@pytest.mark.parametrize("name", ["series_mlp_compile", "seed_mm64_compile", "gpu/recompile"])
def test_a_warm_window_keeps_its_verdict(name: str) -> None:
    """Compiled windows whose compile is done, or a small part of the window: the verdict weighs their steps."""
    summary = analyze(str(FIXTURES / f"{name}.json.gz")).summary
    assert summary.verdict != "start-up"


@pytest.mark.parametrize("name", ["foreign/gp_more_small_kernels", "foreign/gp_launch_queue3"])
def test_a_window_of_cuda_start_up_says_so(name: str) -> None:
    """GPUPuzzlers' windows spent in CUDA's start-up (cudaFree creating the context, 87% and 98% of them by the raw
    events) read "overhead-bound" above a notice that they were one-time (review 6)."""
    events = complete(name)
    start = min(float(e["ts"]) for e in events)
    end = max(float(e["ts"]) + float(e["dur"]) for e in events)
    free = sum(float(e["dur"]) for e in events if e.get("name") == "cudaFree")
    assert free >= 0.85 * (end - start)
    assert analyze(str(FIXTURES / f"{name}.json.gz")).summary.verdict == "start-up"
