from __future__ import annotations

import numpy as np
import pytest
import raw

from pista.analysis import analyze
from pista.rules._one_time import FIRST_CALLS, LIBRARY
from pista.rules.dead_window import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "lazy-loading"]
LOADS = ("Lazy Function Loading", "Runtime Triggered Module Loading")


def _findings(load_facts, name, rules=(ID,)):
    return analyze(load_facts(name), rules=list(rules)).findings


def _named(facts, name):
    trace = facts.trace
    idx = np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))
    return idx[np.argsort(trace.ts[idx])]


# -- independent figures from the raw events -------------------------------------------------------

def _merge(spans):
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _idle_us(name, spans) -> float:
    """µs of the spans with no device work running."""
    busy = raw.busy_intervals(name)
    return sum((b - a) - sum(max(0.0, min(b, e) - max(a, s)) for s, e in busy) for a, b in _merge(spans))


def _end(e) -> float:
    return float(e["ts"]) + float(e["dur"])


def _cold_region_us(name: str, region: str) -> float:
    """The region's wait before its first launch, plus the later top-level op calls in it that hold
    a kernel load: the GPU idle in them (µs)."""
    (call,) = [e for e in raw.complete(name, "user_annotation", region)]
    launches = [e for e in raw.complete(name) if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and str(e["name"]).startswith(("cudaLaunchKernel", "cuLaunchKernel")) and raw.inside(call, e)]
    first = min(float(e["ts"]) for e in launches)
    ops = [e for e in raw.complete(name, "cpu_op") if raw.inside(call, e)]
    top = [o for o in ops if not any(p is not o and raw.inside(p, o) for p in ops)]
    loads = [e for e in raw.complete(name, "overhead") if e["name"] in LOADS]
    holding = [o for o in top if _end(o) > first
               and any(float(o["ts"]) <= float(x["ts"]) < _end(o) for x in loads)]
    return _idle_us(name, [(float(call["ts"]), first)] + [(float(o["ts"]), _end(o)) for o in holding])


def _window_us(name: str) -> float:
    """The window of a trace without steps: the span of its host and device work."""
    cats = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "python_function", "kernel", "gpu_memcpy",
            "gpu_memset"}
    work = [e for e in raw.complete(name) if e.get("cat") in cats and e.get("pid") != -1]
    return max(_end(e) for e in work) - min(float(e["ts"]) for e in work)


# -- tests -----------------------------------------------------------------------------------------

def test_fires_on_the_processs_first_call(load_facts):
    # gpu/window_sync_cold: the process's first matmul_add, no schedule, no steps
    name = "gpu/window_sync_cold"
    facts = load_facts(name)
    trace = facts.trace
    (finding,) = _findings(load_facts, name)
    r = finding.record
    region = _named(facts, "matmul_add")
    region = region[facts.is_host[region]][0]
    launch = _named(facts, "cuLaunchKernelEx")[0]  # the GEMM's launch: the region's first
    assert (r.region, r.step, r.steps, r.first_target, r.in_op) == ("matmul_add", None, 0, "cuLaunchKernelEx", "aten::mm")
    assert r.gap_us == pytest.approx((trace.ts[launch] - trace.ts[region]) / 1000)
    # aten::add's first call (its kernel loaded lazily) is part of the same cold call
    (add,) = _named(facts, "aten::add")
    assert [c.name for c in r.first_calls] == ["aten::add"]
    assert r.first_calls_us == pytest.approx(trace.dur[add] / 1000)
    (request,) = _named(facts, "Activity Buffer Request")
    assert r.profiler_us == pytest.approx(trace.dur[request] / 1000)
    assert r.untraced_us > 90_000 and r.cause == LIBRARY  # cuBLAS's set-up inside aten::mm
    window, shown_region, shown_launch = finding.evidence[:3]
    assert (window.name, window.step, window.ts_us) == ("dead window", None, trace.ts[region] / 1000)
    assert window.dur_us == pytest.approx((trace.ts[launch] - trace.ts[region]) / 1000)
    assert (shown_region.name, shown_launch.name) == ("matmul_add", "cuLaunchKernelEx")
    assert "aten::mm" in shown_launch.note
    assert finding.evidence[3].name == "Activity Buffer Request"
    assert finding.evidence[-1].name == "aten::add"


def test_impact_without_steps_is_the_idle_share_of_the_window(load_facts):
    name = "gpu/window_sync_cold"
    (finding,) = _findings(load_facts, name)
    total = _cold_region_us(name, "matmul_add")
    assert finding.impact.us == pytest.approx(total, rel=0.01)
    assert finding.impact.share == pytest.approx(total / _window_us(name), abs=0.01)
    assert finding.severity.value == "warning"  # 99% of the window, once
    assert finding.impact.once and "one-time" in finding.basis


def test_fires_on_a_branch_first_run_inside_a_later_step(load_facts):
    # gpu/eval_first_call: eval_metrics runs for the first time in step 3 of a warmed-up loop
    name = "gpu/eval_first_call"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    assert (r.region, r.step, r.in_op, r.typical_gap_us, r.cause) == ("eval_metrics", 3, "aten::copy_", None,
                                                                       FIRST_CALLS)
    assert {c.name for c in r.first_calls} == {"aten::cross_entropy_loss", "aten::mean", "aten::eq", "aten::argmax"}
    total = _cold_region_us(name, "eval_metrics")
    assert finding.impact.once and finding.impact.us == pytest.approx(total, rel=0.01)
    assert finding.impact.share == pytest.approx(min(1.0, total / raw.window_us(name)), abs=0.01)
    assert "one-time" in finding.basis and "eval_metrics" in finding.fix
    # the window starts at ProfilerStep#2: the schedule's warm-up ran already, so only "run it once" helps
    assert int(raw.steps(name)[0]["name"].split("#")[1]) > 0
    assert r.warmed_up and "schedule(" not in finding.fix and "schedule(" not in finding.advice
    # the ops' lazy loads are this finding's, not lazy-loading's
    assert [f.rule for f in _findings(load_facts, name, ONE_TIME_RULES)] == [ID]


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_compile", "gpu/gpu_idle_dataloader",
                                  "big_gpt_eager_20steps", "gpu/cpu_only"])
def test_silent_when_warm(load_facts, name):
    # gpu_idle_dataloader waits 13 ms for its data every step: steady, not a one-time set-up
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_cold", "gpu/recompile", "gpu/profiler_first_step",
                                  "gpu/window_sync_warm", "seed_mm4096_compile_cold"])
def test_silent_where_another_finding_owns_the_wait(load_facts, name):
    # seed_mm64_cold: inside the cold step 0 (cold-start); gpu/recompile: inside compiling
    # (recompilation); the others wait mostly for the profiler's buffer request (profiler-overhead)
    assert _findings(load_facts, name) == []


def test_a_cold_process_shows_untraced_set_up_a_warm_one_only_the_buffer_request(load_facts):
    # gpu/window_sync_*: the same single matmul_add call, profiled as the process's first (cold)
    # or after 3 un-profiled calls (warm)
    (cold,) = _findings(load_facts, "gpu/window_sync_cold")
    assert cold.record.untraced_us > 30 * cold.record.profiler_us
    facts = load_facts("gpu/window_sync_warm")
    trace = facts.trace
    region = _named(facts, "matmul_add")
    region = region[facts.is_host[region]][0]
    launch = _named(facts, "cuLaunchKernelEx")[0]
    (request,) = _named(facts, "Activity Buffer Request")
    gap = trace.ts[launch] - trace.ts[region]
    # warm: 2.0 ms before the launch, 1.8 ms of it the profiler's: its finding, not this one
    assert trace.dur[request] > 0.8 * gap and gap - trace.dur[request] < 1_000_000
    assert [f.rule for f in _findings(load_facts, "gpu/window_sync_warm", ONE_TIME_RULES)] == ["profiler-overhead"]
    assert cold.record.gap_us > 20 * gap / 1000


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/capture_mlp",
                                  "gpu/capture_transformer", "gpu/capture_linear"])
def test_healthy_traces_stay_quiet(load_facts, name):
    mine = _findings(load_facts, name, ONE_TIME_RULES)
    assert all(f.severity.value == "info" for f in mine), [(f.rule, f.severity) for f in mine]


def test_a_first_call_with_no_load_event_is_a_first_call_of_the_region(load_facts):
    # foreign/hta_alexnet (HTA's A100 sample, older CUPTI: no load events): the first convolution runs 10.8 s,
    # 10.0 s of it past the region's first launch (cuDNN's set-up, untraced). It was nobody's: the window's
    # dead windows and cudnn-setup said 74% of it; now the region's dead window holds it as a first call
    name = "foreign/hta_alexnet"
    findings = analyze(load_facts(name)).findings
    windows = [f for f in findings if f.rule == ID]
    region = raw.complete(name, "user_annotation", "[param|cuda]")[0]
    (finding,) = [f for f in windows if f.record.region == region["name"]]
    conv = min(raw.complete(name, "cpu_op", "aten::conv2d"), key=lambda e: float(e["ts"]))
    launches = [e for e in raw.complete(name) if e.get("cat") == "cuda_runtime" and e["name"] in (
        "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync") and float(e["ts"]) >= float(region["ts"])]
    first = min(float(e["ts"]) for e in launches)
    # and (review 4) allocation calls of 1 ms or more outside any op with the GPU idle, far longer than the others:
    # start-up (one cudaFree of 1.25 ms)
    busy = raw.busy_intervals(name)
    ops = raw.complete(name, "cpu_op")
    alone = [e["name"] for e in sorted(raw.complete(name, "cuda_runtime"), key=lambda e: float(e["ts"]))
             if e["name"] in ("cudaFree", "cudaMalloc") and float(e["dur"]) >= 1000 and raw.inside(region, e)
             and not any(raw.inside(o, e) for o in ops)
             and raw.total(raw.intersect([(float(e["ts"]), _end(e))], busy)) < 0.5 * float(e["dur"])]
    names = [c.name for c in finding.record.first_calls]
    assert names[0] == "aten::conv2d" and set(names[1:]) <= set(alone) and len(names) - 1 <= len(alone)
    assert finding.record.first_calls[0].dur_us == pytest.approx(float(conv["ts"]) + float(conv["dur"])
                                                                 - max(float(conv["ts"]), first))
    assert finding.record.loading_us == 0
    # with the cudnn-setup's first pass, the window's one-time costs now cover most of it
    once = sum(f.impact.us for f in findings if f.impact.once)
    assert once >= 0.9 * (float(region["dur"]))


def test_a_wait_that_is_mostly_the_profiler_s_is_no_dead_window(load_facts):
    # foreign/tl_b200_eager (TraceLens' vLLM eager decode on a B200, no steps): 2.6 ms before the first launch,
    # 1.5 ms of it the profiler's Activity Buffer Request. It was a dead window of 11.7 ms (its first calls with
    # it); the wait is the profiler's, and the first calls, each loading its kernel, are lazy-loading's
    name = "foreign/tl_b200_eager"
    analysis = analyze(load_facts(name))
    assert analysis.finding(ID) is None
    lazy = analysis.finding("lazy-loading")
    loads = [e for e in raw.complete(name, "overhead") if e["name"] in LOADS]
    assert lazy is not None and lazy.record.events == len(loads)
    assert {c.op for c in lazy.record.calls} >= {"aten::linear"}
    # the GEMMs among those first calls are different layers' first shapes, nothing varying: no gemm-heuristics
    assert analysis.finding("gemm-heuristics") is None


def _first_launch_gap(name: str) -> tuple[dict, float, float]:
    """The trace's one ProfilerStep, its start and its first launch of device work (µs)."""
    (step,) = raw.steps(name)
    corr = {k.get("args", {}).get("correlation") for k in raw.device_work(name)}
    launches = [e for e in raw.complete(name) if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e.get("args", {}).get("correlation") in corr and raw.inside(step, e)]
    return step, float(step["ts"]), min(float(e["ts"]) for e in launches)


def test_a_wait_spent_in_the_host_s_own_python_is_no_dead_window(load_facts):
    # foreign/tl_h100_timesformer (TraceLens' HF video-classification pipeline on an H100, held out in review 2):
    # the step waits 218 ms before its first launch, all of it the pipeline's preprocess (read_video_pyav, the
    # VideoMAE processor), work it does for every video. It was a dead window, 57% of the window 'once', with a
    # notice that the window was mostly one-time cost
    name = "foreign/tl_h100_timesformer"
    step, start, first = _first_launch_gap(name)
    frames = [e for e in raw.complete(name, "python_function") if e.get("tid") == step.get("tid")
              and float(e["ts"]) >= start and _end(e) <= first]
    top = [f for f in frames if not any(g is not f and raw.inside(g, f) for g in frames)]
    assert first - start > 100_000
    assert sum(float(f["dur"]) for f in top) >= 0.95 * (first - start)
    assert any("preprocess" in f["name"] for f in top)
    analysis = analyze(load_facts(name))
    assert analysis.finding(ID) is None
    assert not [n for n in analysis.notices if "one-time cost" in n]


@pytest.mark.parametrize("name", ["foreign/tl_h100_qwen05", "foreign/tl_mi300_qwen05"])
def test_a_wait_in_a_sync_for_earlier_work_is_no_dead_window(load_facts, name):
    # TraceLens' Qwen1.5-0.5B on an H100 and an MI300X: the step's first 13-14 ms before its first launch are the
    # harness's device synchronize, waiting for hundreds of kernels launched before the window (the GPU busy all
    # along): a wait for queued work, not start-up
    step, start, first = _first_launch_gap(name)
    (sync,) = [e for e in raw.complete(name) if e["name"].endswith("DeviceSynchronize") and float(e["ts"]) < first
               and raw.inside(step, e)]
    assert float(sync["dur"]) >= 0.9 * (first - start)
    launched = {e["args"]["correlation"] for e in raw.complete(name) if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "correlation" in e.get("args", {})}
    during = [k for k in raw.device_work(name) if float(k["ts"]) < _end(sync) and _end(k) > float(sync["ts"])]
    assert len(during) >= 400 and not [k for k in during if k["args"].get("correlation") in launched]
    assert analyze(load_facts(name)).finding(ID) is None


@pytest.mark.parametrize("name", ["foreign/rtx4090_tp2_llama_annot", "foreign/rtx4090_tp2_llama_dim1024"])
def test_one_cold_pass_is_told_once(load_facts, name):
    """Review 4: a cold LLaMA forward whose Embedding region waits 37-49% of the window before its first launch; the
    Attention regions after it wait for the same start-up (1-4% each) and were told as more dead windows, the same
    fix. One finding tells the cold pass; the later regions stay claimed, so lazy-loading does not restate them."""
    facts = load_facts(name)
    found = analyze(facts).findings
    dead = [f for f in found if f.rule == ID]
    assert len(dead) == 1 and dead[0].record.region == "Embedding"
    attention = _named(facts, "Attention")
    assert attention.size >= 2
    first = int(attention[0])
    lo, hi = int(facts.trace.ts[first]), int(facts.trace.ts[first] + facts.trace.dur[first])
    for f in found:
        if f.rule in ("lazy-loading", "cudnn-setup"):
            assert not any(lo <= e.ts_ns < hi for e in f.evidence), f.rule
