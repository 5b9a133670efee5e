"""Notices about what a trace's own structure makes unreliable."""

from __future__ import annotations

import json

import pytest

import pista


def _trace(tmp_path, frames):
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 35, "dur": 10},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 5, "dur": 20}]
    events += [{"ph": "X", "cat": "python_function", "name": f"a.py({k}): f{k}", "pid": 1, "tid": 1, "ts": ts,
                "dur": dur} for k, (ts, dur) in enumerate(frames)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return pista.analyze(str(path))


def test_overlapping_python_frames_are_said(tmp_path):
    # f0 [1, 51] and f1 [30, 90]: f1 starts inside f0 and ends after it; the step's self time goes negative
    analysis = _trace(tmp_path, [(1, 50), (30, 60)])
    said = [n for n in analysis.notices if "python_function" in n]
    assert len(said) == 1 and said[0].startswith("1 event(s) have a negative self time")
    assert analysis.table.row("ProfilerStep*").self_cpu_us == pytest.approx(70.0)  # the table is unharmed


def test_nested_frames_are_not(tmp_path, analysis_of):
    assert not [n for n in _trace(tmp_path, [(1, 50), (2, 3)]).notices if "python_function" in n]
    assert not [n for n in analysis_of("seed_mm64_warm").notices if "python_function" in n]


def test_a_real_stack_trace_says_how_many(analysis_of):
    # with_stack on the H200: the profiler's own frames straddle ProfilerStep#N, record_function
    # regions outlive the frame that entered them
    said = [n for n in analysis_of("gpu/gpu_grouped").notices if "negative self time" in n]
    assert len(said) == 1 and int(said[0].split()[0]) > 0


def test_a_contended_cpu_capture_is_said(analysis_of):
    # gpu/cpu_linear was captured beside other work: its steps vary ~2x, its quiet twin's 1.17x
    import raw

    spans = [float(s["dur"]) for s in raw.steps("gpu/cpu_linear")]
    said = [n for n in analysis_of("gpu/cpu_linear").notices if "vary" in n]
    assert len(said) == 1 and f"{max(spans) / min(spans):.1f}x" in said[0]
    assert not [n for n in analysis_of("gpu/cpu_linear_host").notices if "vary" in n]
    assert not [n for n in analysis_of("seed_mm64_cold").notices if "vary" in n]  # GPU: cold-start's job


def test_a_balanced_verdict_says_the_idle_gpu_may_be_the_profiler_s(analysis_of):
    # gpu/resnet50_train: host 2.2x the GPU's time, the GPU computing 46% of the window as profiled, yet
    # 6.22 ms a step unprofiled for ~5.4 ms of GPU work (fixtures README)
    import raw

    a = analysis_of("gpu/resnet50_train")
    assert a.summary.verdict == "balanced"
    (notice,) = [n for n in a.notices if n.startswith("balanced:")]
    kernels = raw.complete("gpu/resnet50_train", "kernel")
    cpu = a.summary.self_cpu_total_us
    gpu = sum(float(k["dur"]) for k in kernels)
    assert f"{cpu / gpu:.1f}x" in notice and "unprofiled" in notice
    for name in ("seed_mm4096_warm", "gpu/resnet50_grad", "gpu/pageable_memcpy"):  # compute- or overhead-bound,
        assert not [n for n in analysis_of(name).notices if n.startswith("balanced:")]  # or copying


def test_a_window_mostly_of_one_time_cost_says_so_first(analysis_of):
    # gpu/eval_first_call: a cold 'eval_metrics' region holds 93% of the window (dead-window, once)
    from pista.render.terminal import render

    a = analysis_of("gpu/eval_first_call")
    once = [f for f in a.findings if f.impact.once]
    (notice,) = [n for n in a.notices if "one-time cost" in n]
    assert f"{100 * sum(f.impact.share for f in once):.0f}%" in notice and "dead-window" in notice
    text = render(a, color=False, width=200, show_table=False)
    assert text.index("one-time cost") < text.index("Start here")
    assert not [n for n in analysis_of("seed_mm4096_warm").notices if "one-time cost" in n]


def _without(name: str, tmp_path, drop) -> str:
    import gzip
    import json

    from conftest import fixture

    with gzip.open(fixture(name), "rt") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if not drop(e)]
    path = tmp_path / "cut.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(data, f)
    return str(path)


def test_lost_gpu_records_are_told_apart_from_a_model_on_the_cpu(tmp_path):
    """Issue 35: launches recorded with no kernel records are lost records; a GPU in the header with nothing
    launched is a model that ran on the CPU. Both read 'the profiler ran without CUDA activities' before."""
    from pista.analysis import analyze

    device_work = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")
    lost = analyze(_without("gpu/tf32_gemm", tmp_path, lambda e: e.get("cat") in device_work))
    said = [n for n in lost.notices if "records were lost" in n]
    assert said and "cudaLaunchKernelExC" in said[0] and lost.summary.verdict == "cpu-only"
    cpu = analyze(_without("gpu/tf32_gemm", tmp_path, lambda e: e.get("cat") in device_work + ("cuda_runtime", "cuda_driver")))
    said = [n for n in cpu.notices if "nothing ran on it" in n]
    assert said and "NVIDIA H200" in said[0] and not [n for n in cpu.notices if "lost" in n]


def test_a_shared_cpu_is_said(analysis_of):
    """cpu_busy_mm64: `pista run matmul_add --size 64 --device cpu` beside six busy processes on 2 cores: each
    64x64 matmul took 18-20 ms, thousands of times what it needs. The notice names the slowest call from the file."""
    import raw

    mms = raw.in_steps("cpu_busy_mm64", raw.complete("cpu_busy_mm64", "cpu_op", "aten::mm"))
    worst = max(mms, key=lambda e: e["dur"])
    m, k = worst["args"]["Input Dims"][0]
    n = worst["args"]["Input Dims"][1][1]
    said = [x for x in analysis_of("cpu_busy_mm64").notices if x.startswith("the CPU was shared")]
    assert said and f"of {2 * m * n * k / 1e6:.2g} MFLOP" in said[0] and f"took {worst['dur'] / 1e3:.3g} ms" in said[0]


@pytest.mark.parametrize("name", ["gpu/cpu_matmul_add", "gpu/cpu_grouped", "gpu/cpu_linear_1thread", "gpu/cpu_mlp",
                                  "gpu/cpu_infer_grad", "gpu/cpu_transformer", "gpu/cpu_linear"])
def test_a_quiet_cpu_is_not(analysis_of, name):
    assert not [x for x in analysis_of(name).notices if x.startswith("the CPU was shared")]


# --- a trace of CUDA activity alone (review 4) -------------------------------------------------------------------
# willding123/Shift-Equivariant-Vision-Transformers' traces on an RTX A4000: runtime calls, kernels and copies, no op

SEVIT_COLD = "foreign/a4000_sevit_cold"
SEVIT_WARM = "foreign/a4000_sevit_warm"


def _no_ops(name: str) -> list[dict]:
    import raw

    events = raw.complete(name)
    assert not [e for e in events if e.get("cat") in ("cpu_op", "user_annotation", "python_function")]
    return [e for e in events if e.get("cat") == "cuda_runtime"]


@pytest.mark.parametrize("name", [SEVIT_COLD, SEVIT_WARM])
def test_cuda_activity_alone_says_the_host_cannot_be_split(name):
    import raw

    calls = _no_ops(name)
    analysis = pista.analyze(str(raw.FIXTURES / f"{name}.json.gz"))
    said = [n for n in analysis.notices if n.startswith("CPU activity was not recorded")]
    assert len(said) == 1 and f"{len(calls):,} runtime call(s)" in said[0] and "ProfilerActivity.CPU" in said[0]
    assert analysis.summary.verdict != "overhead-bound" and analysis.summary.host_time_by_region == {}
    assert analysis.finding("overhead-bound") is None
    assert not any("Python between ops" in f.message + f.advice for f in analysis.findings)
    assert not any("profiler about doubles host time" in n for n in analysis.notices)


def test_cuda_activity_alone_says_how_idle_the_gpu_is():
    import raw

    events = [e for e in raw.complete(SEVIT_WARM) if e.get("cat") != "Trace"]
    # torch 1.x's categories: Kernel, Memcpy, Memset
    busy = raw.total(raw.merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                                if e.get("cat") in ("Kernel", "Memcpy", "Memset")]))
    window = max(float(e["ts"]) + float(e["dur"]) for e in events) - min(float(e["ts"]) for e in events)
    analysis = pista.analyze(str(raw.FIXTURES / f"{SEVIT_WARM}.json.gz"))
    (said,) = [n for n in analysis.notices if n.startswith("CPU activity was not recorded")]
    assert f"idles {100 * (1 - busy / window):.0f}% of the window" in said  # 52%


def test_start_up_frees_and_allocations_with_the_gpu_idle_are_one_time():
    # the cold window's 3.0 s and 0.97 s cudaFree, no op around them and the GPU idle: the process starting (it
    # read as 4.4 s of "Python between ops: torch.compile the step")
    import raw

    calls = _no_ops(SEVIT_COLD)
    busy = raw.merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(SEVIT_COLD)
                      if e.get("cat") in ("Kernel", "Memcpy", "Memset")])
    frees = [e for e in calls if e["name"] == "cudaFree" and float(e["dur"]) >= 100_000]
    assert len(frees) == 2 and all(raw.total(raw.intersect([(float(e["ts"]), float(e["ts"]) + float(e["dur"]))],
                                                          busy)) < 0.01 * float(e["dur"]) for e in frees)
    lazy = pista.analyze(str(raw.FIXTURES / f"{SEVIT_COLD}.json.gz")).finding("lazy-loading")
    assert lazy is not None and lazy.impact.once
    held = [c for c in lazy.record.calls if c.op == "cudaFree"]
    assert sorted(c.dur_us for c in held)[-2:] == pytest.approx(sorted(float(e["dur"]) for e in frees))


@pytest.mark.parametrize("name, verdict", [("foreign/tl_mi210_gpu_only", "compute-bound"),
                                           ("seed_mm64_warm", "overhead-bound")])
def test_the_verdict_stands_where_it_can_be_judged(name, verdict):
    # the twins: a trace of CUDA activity alone whose GPU is busy 89% is still compute-bound (TraceLens' MI210);
    # a trace with its ops is judged on them as before, with no such notice
    import raw

    analysis = pista.analyze(str(raw.FIXTURES / f"{name}.json.gz"))
    assert analysis.summary.verdict == verdict
    has_ops = any(e.get("cat") == "cpu_op" for e in raw.complete(name))
    assert any(n.startswith("CPU activity was not recorded") for n in analysis.notices) == (not has_ops)
    assert bool(analysis.summary.host_time_by_region) == has_ops


@pytest.mark.parametrize("name", ["foreign/a100_torchbench_memcpy", "gpu/pageable_memcpy"])
def test_a_balanced_verdict_on_a_gpu_busy_copying_says_the_transfers_set_the_pace(name):
    # review 4: torchbench's pure copy benchmark, 98.6% busy with pageable copies and no kernel, read "balanced"
    import raw

    work = raw.device_work(name)
    assert work and all(e.get("cat") == "gpu_memcpy" for e in work)
    analysis = pista.analyze(str(raw.FIXTURES / f"{name}.json.gz"))
    assert analysis.summary.verdict == "balanced"
    said = [n for n in analysis.notices if "the transfers between host and device set the pace" in n]
    assert len(said) == 1 and "100% of its time is copies" in said[0]


def test_copies_beside_busy_kernels_say_nothing_more():
    # the twin: savings/h100/copy_pageable_tensor's fixed twin, pinned copies 53% of the GPU time beside kernels
    # computing 44% of the window
    import raw

    analysis = pista.analyze(str(raw.FIXTURES / "savings/h100/copy_pageable_tensor__fixed.json.gz"))
    assert not any("set the pace" in n for n in analysis.notices)
