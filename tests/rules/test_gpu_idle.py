from __future__ import annotations

import numpy as np
import pytest
from raw import idle_in_steps, intersect, merge, subtract, total  # noqa: F401

SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")













def sync_claims(name):
    """After each sync call in a step, the idle until the next device work, in its step, at most the GPU work
    it waited for (no DtoH copies here)."""
    import raw

    starts = sorted(a for a, _ in raw.busy_intervals(name))
    out = []
    for c in raw.complete(name):
        if c.get("cat") != "cuda_runtime" or c["name"] not in SYNCS:
            continue
        step = next((s for s in raw.steps(name) if raw.inside(s, c)), None)
        if step is None:
            continue
        end, stop = float(c["ts"]) + float(c["dur"]), float(step["ts"]) + float(step["dur"])
        nxt = min([a for a in starts if a >= end] + [stop])
        # no longer than the GPU work the call waited for: idle beyond it is the next op's dispatch
        waited = sum(max(0.0, min(b, end) - max(a, float(c["ts"]))) for a, b in raw.busy_intervals(name))
        out.append((end, max(end, min(nxt, stop, end + waited))))
    return merge(out)


# -- tests ---------------------------------------------------------------------------------------

def test_fires_on_the_cpu_data_loader_and_names_it(analysis_of):
    analysis = analysis_of("gpu/gpu_idle_dataloader")
    finding = analysis.finding("gpu-idle")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    names = trace.name_array[trace.name]
    loading = np.flatnonzero((names == "data_loading") & facts.is_host)
    assert len(loading) == 3  # one CPU batch build per profiled step
    region = finding.record.regions[0]
    assert (region.name, region.calls) == ("data_loading", 3)
    assert region.launches_per_call == 1  # its host-to-device copy
    assert region.host_us_per_call == pytest.approx(trace.dur[loading].mean() / 1000)
    regions = [e for e in finding.evidence if e.name == "data_loading"]
    assert regions and {(e.ts_us, e.dur_us, e.step) for e in regions} <= {
        (trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in loading}
    # the gaps shown are real: nothing runs on the GPU inside them, and they lie inside data_loading
    work = facts.is_device_work
    w_start, w_end = trace.ts[work] / 1000, (trace.ts[work] + trace.dur[work]) / 1000
    gaps = [e for e in finding.evidence if e.name == "GPU idle"]
    assert len(gaps) == 3 and {e.step for e in gaps} == {2, 3, 4}
    eps = 1e-3  # µs: float rounding of ns timestamps
    l_start, l_end = trace.ts[loading] / 1000, (trace.ts[loading] + trace.dur[loading]) / 1000
    for gap in gaps:
        assert gap.dur_us >= 1000
        assert not np.any((w_start < gap.ts_us + gap.dur_us - eps) & (w_end > gap.ts_us + eps))
        overlap = np.minimum(l_end, gap.ts_us + gap.dur_us) - np.maximum(l_start, gap.ts_us)
        assert overlap.max() >= gap.dur_us - eps
    # the CPU batch build is aten::randn -> aten::normal_ (torch: 21.022 ms self CPU over 3 calls),
    # said per step, as the rest of the record is
    import raw

    normal = raw.complete("gpu/gpu_idle_dataloader", "cpu_op", "aten::normal_")
    per_step = sum(raw.self_us("gpu/gpu_idle_dataloader", e) for e in raw.in_steps("gpu/gpu_idle_dataloader", normal)) / 3
    name, self_us = finding.record.ops_self_us[0]
    assert name == "aten::normal_" and self_us == pytest.approx(per_step, rel=0.01)
    # the top fix names the region and the change
    top = analysis.to_dict()["summary"]["top_fix"]
    assert top["rule"] == "gpu-idle" and top["text"].startswith("data_loading takes 13.981 ms of the 15.357 ms")
    assert "num_workers>0, pin_memory=True" in top["text"]


def test_impact_is_the_idle_under_the_region_from_the_raw_events(analysis_of):
    import raw

    name = "gpu/gpu_idle_dataloader"
    finding = analysis_of(name).finding("gpu-idle")
    regions = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"]))
                     for e in raw.complete(name, "user_annotation", "data_loading")])
    # the idle after the pageable copy's stream sync inside data_loading is the sync's, not this rule's
    claimed = intersect(subtract(idle_in_steps(name), sync_claims(name)), regions)
    per_step = total(claimed) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step, rel=1e-3)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=1e-3)
    assert finding.severity.value == "critical"  # 87% of the step
    # of it, the time under no op or runtime call: data_loading's time.sleep(0.004), which no op names
    ops = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for cat in ("cpu_op", "cuda_runtime")
                 for e in raw.complete(name, cat)])
    no_op = total(subtract(claimed, ops)) / len(raw.steps(name))
    assert finding.record.no_op_us_per_step == pytest.approx(no_op, rel=0.01)
    assert 4000 < no_op < 5000 and "no recorded op" in finding.message


def test_silent_on_overhead_bound_loops(analysis_of):
    # the GPU idles most of the time there too, but between launches: per-op overhead, not this rule's
    for name in ("gpu/launch_bound", "seed_mm64_warm", "gpu/host_sync_item", "gpu/trailing_sync",
                 "series_mlp_eager", "series_mlp_compile"):
        assert analysis_of(name).finding("gpu-idle") is None, name


def test_silent_when_the_gpu_is_busy(analysis_of):
    # healthy traces; big_gpt's one buffer request is 0.3% of its step, pageable_memcpy's copy regions
    # are copying, not idle
    for name in ("gpu/fp32_gemm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/pageable_memcpy"):
        assert analysis_of(name).finding("gpu-idle") is None, name


def test_silent_without_a_gpu(analysis_of):
    assert analysis_of("gpu/cpu_only").finding("gpu-idle") is None


@pytest.mark.parametrize(("name", "rule"), [
    ("gpu/recompile", "recompilation"),  # compiling every step
    ("seed_mm64_cold", "cold-start"),  # one-time set-up in the first call
    ("gpu/window_sync_cold", "dead-window"),  # the same, one call without steps
    ("gpu/window_sync_warm", "profiler-overhead"),  # the profiler's buffer request
])
def test_idle_with_its_own_rule_is_left_to_it(analysis_of, name, rule):
    # the same idle is not restated: these rules report it with their own fix, and overhead-bound
    # leaves it out too
    analysis = analysis_of(name)
    assert analysis.finding("gpu-idle") is None
    assert analysis.finding(rule) is not None
    per_op = analysis.finding("overhead-bound")
    if per_op is not None:
        e = per_op.record.elsewhere
        assert e.compile_us + e.cold_us + e.profiler_us > per_op.impact.us


def test_every_field_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    for name in ("gpu/gpu_idle_dataloader",):
        en = analysis_of(name).finding("gpu-idle")
        es = localize_finding(en, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(es, part) and getattr(es, part) != getattr(en, part), (name, part)
        assert all(e.note for e in es.evidence)
        assert [e.note for e in es.evidence] != [e.note for e in en.evidence]
    es = localize_finding(analysis_of("gpu/gpu_idle_dataloader").finding("gpu-idle"), "es")
    assert "workers del DataLoader" in es.advice and "workers del DataLoader" in es.fix


def test_a_loader_that_has_workers_is_not_told_to_add_them(tmp_path):
    """Issue 34: a DataLoader already in worker processes (_MultiProcessingDataLoaderIter) that still keeps the
    GPU waiting gets advice about its workers being too slow, not 'use num_workers>0'. gpu_idle_dataloader with
    its region named as torch names such a loader's fetch."""
    import gzip
    import json

    from conftest import fixture

    from pista.analysis import analyze

    name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    with gzip.open(fixture("gpu/gpu_idle_dataloader"), "rt") as f:
        data = json.load(f)
    for e in data["traceEvents"]:
        if e.get("name") == "data_loading":
            e["name"] = name
    path = tmp_path / "workers.json.gz"
    with gzip.open(path, "wt") as out:
        json.dump(data, out)
    named = [f for f in analyze(str(path)).findings if f.rule in ("gpu-idle", "data-loading")]
    assert named and all(name in f.advice + f.message for f in named[:1])
    for f in named:
        assert "already" in f.advice and "num_workers>0" not in f.advice and "num_workers>0" not in f.fix


# -- what a region's idle is, read from its own ops and name (review 2: every region was "input work ...
# load in DataLoader workers", optimizer and start-up regions included) ----------------------------------

def _spans(name, cat, event_name):
    import raw

    return merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name, cat, event_name)])


def test_an_optimizer_region_is_the_optimizers_step_not_input(analysis_of):
    """hta_sampled_rank0's '## optimizer ##' holds Optimizer.step#Shampoo.step (foreach, unfused-optimizer's
    finding) and Optimizer.step#EMAOptimizer.step: what is left to this rule is the optimizer's step, told so,
    not 'load in DataLoader workers'."""
    import raw

    name = "foreign/hta_sampled_rank0"
    analysis = analysis_of(name)
    finding = analysis.finding("gpu-idle")
    region = finding.record.regions[0]
    assert region.name == "## optimizer ##"
    # from the raw events: the region is the optimizer's (nearly all of it under Optimizer.step# markers)
    steps = merge([iv for e in raw.complete(name, "user_annotation") if e["name"].startswith("Optimizer.step#")
                   for iv in [(float(e["ts"]), float(e["ts"]) + float(e["dur"]))]])
    regions = _spans(name, "user_annotation", "## optimizer ##")
    assert total(intersect(steps, regions)) > 0.9 * total(regions)
    # Shampoo's step is unfused-optimizer's (foreach, no fused version); its idle is left to it
    unfused = analysis.finding("unfused-optimizer")
    assert unfused is not None and unfused.record.event == "Optimizer.step#Shampoo.step"
    left = subtract(intersect(idle_in_steps(name), regions), _spans(name, "user_annotation", "Optimizer.step#Shampoo.step"))
    assert region.idle_us_per_step == pytest.approx(total(left) / len(raw.steps(name)), rel=1e-3)
    # which is EMAOptimizer's step's: its class, and no ops recorded under it (the sampled trace dropped them)
    ema = _spans(name, "user_annotation", "Optimizer.step#EMAOptimizer.step")
    assert total(intersect(left, ema)) > 0.95 * total(left)
    assert (region.kind, region.optimizer, region.mode) == ("optimizer", "EMAOptimizer", "")
    assert "optimizer's step" in finding.advice and "DataLoader" not in finding.advice + finding.fix
    assert "optimizer's step" in finding.message


def test_the_optimizer_step_unfused_optimizer_reports_is_left_to_it(analysis_of):
    """hta_nccl_data: '## optimizer ##' is 14.8 ms a step, 14.7 of it Optimizer.step#SGD.step running
    foreach (_foreach_add_, _foreach_mul_): unfused-optimizer's finding (fused=True). Left here: under 1%."""
    import raw

    name = "foreign/hta_nccl_data"
    analysis = analysis_of(name)
    regions = _spans(name, "user_annotation", "## optimizer ##")
    sgd = _spans(name, "user_annotation", "Optimizer.step#SGD.step")
    assert total(intersect(sgd, regions)) > 0.99 * total(regions)
    unfused = analysis.finding("unfused-optimizer")
    assert unfused is not None and unfused.record.event == "Optimizer.step#SGD.step"
    assert unfused.record.mode == "foreach" and "fused=True" in unfused.fix
    left = total(subtract(intersect(idle_in_steps(name), regions), sgd)) / len(raw.steps(name))
    assert left < 0.01 * raw.median_step_us(name)
    assert analysis.finding("gpu-idle") is None


def test_a_one_off_region_before_the_gpus_first_work_is_start_up(analysis_of):
    """damaged_fields (hta_alexnet with its ops' times unreadable): '[param|cuda]' runs once, in a window without
    steps, before any device work: CUDA start-up (29.9 s of cudaDeviceGetStreamPriorityRange in the intact file),
    not input."""
    import raw

    name = "foreign/damaged_fields"
    finding = analysis_of(name).finding("gpu-idle")
    region = finding.record.regions[0]
    calls = raw.complete(name, "user_annotation", "[param|cuda]")
    work = [e for e in raw.events(name) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert len(calls) == 1 and not raw.steps(name)
    assert float(calls[0]["ts"]) < min(float(e["ts"]) for e in work)
    assert (region.name, region.kind) == ("[param|cuda]", "start-up")
    assert "start-up" in finding.advice and "warmup" in finding.advice and "DataLoader" not in finding.advice
    # the intact twin: the same region is dead-window's one-time set-up, never gpu-idle's
    intact = analysis_of("foreign/hta_alexnet")
    assert intact.finding("gpu-idle") is None and intact.finding("dead-window") is not None


@pytest.mark.parametrize(("name", "region"), [
    ("gpu/gpu_idle_dataloader", "data_loading"),
    ("gpu/resnet_loader", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
    ("savings/h100/numpy_preprocess__broken", "preprocess"),  # NumPy work, no compute op: input by its ops
])
def test_input_regions_keep_the_loader_advice(analysis_of, name, region):
    finding = analysis_of(name).finding("gpu-idle")
    top = finding.record.regions[0]
    assert (top.name, top.kind) == (region, "input")
    assert "load in DataLoader workers" in finding.advice and "num_workers>0" in finding.fix


def test_a_region_running_the_models_ops_is_not_input(analysis_of):
    """hta_backward_thread: '## backward ##' launches nothing while autograd nodes (AddmmBackward0, aten::mm) run
    on the host: the model's own work, not a batch to load in workers."""
    import raw

    name = "foreign/hta_backward_thread"
    finding = analysis_of(name).finding("gpu-idle")
    region = finding.record.regions[0]
    backward = _spans(name, "user_annotation", "## backward ##")
    nodes = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in raw.complete(name, "cpu_op")
                   if e["name"].startswith("autograd::engine::evaluate_function")])
    assert total(intersect(nodes, backward)) > 0
    assert (region.name, region.kind) == ("## backward ##", "host")
    assert "DataLoader" not in finding.advice and "with_stack=True" in finding.advice


# -- torch 1.8's DataLoader marker, an 'Operator' (review 2: kineto's num_workers=0 sample, 39% of each step
# with the GPU idle, unnamed) ---------------------------------------------------------------------------

KINETO_CATS = ("Kernel", "Memcpy", "Memset")  # torch 1.8's device work


def _kineto(name):
    import raw

    events = raw.complete(name)
    steps = sorted((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    busy = merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events if e.get("cat") in KINETO_CATS])
    return events, steps, busy


def test_torch_18s_dataloader_marker_is_the_input_that_keeps_the_gpu_waiting(analysis_of):
    import statistics

    name = "foreign/kineto_resnet50_w0_2021"
    events, steps, busy = _kineto(name)
    loader = [e for e in events if e["name"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"]
    assert {e["cat"] for e in loader} == {"Operator"} and len(loader) == len(steps) == 6
    idle = subtract(merge([(float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in steps]), busy)
    under = total(intersect(idle, merge([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in loader])))
    step_us = statistics.median(float(s["dur"]) for s in steps)
    assert under / len(steps) > 0.3 * step_us  # 59 ms of each 176 ms step
    finding = analysis_of(name).finding("gpu-idle")
    region = finding.record.regions[0]
    assert (region.name, region.kind, region.calls) == (loader[0]["name"], "input", 6)
    assert region.host_us_per_call == pytest.approx(statistics.mean(float(e["dur"]) for e in loader))
    assert region.idle_us_per_step == pytest.approx(under / len(steps), rel=1e-3)
    assert finding.impact.share == pytest.approx(under / len(steps) / step_us, abs=0.01)
    assert "num_workers>0" in finding.advice


def test_the_loader_in_workers_twin_says_what_the_workers_saved():
    """kineto's num_workers=4 twin of the same ResNet-50 (only in /work/foreign_traces): its loader waits 1-2 ms
    a step and its steps are ~28% shorter; the rule is silent there, and its predicted saving on the
    num_workers=0 sample is within 1.5x of that pair's."""
    import gzip
    import json
    import statistics
    from pathlib import Path

    from conftest import fixture

    from pista.analysis import analyze

    twin = Path("/work/foreign_traces/_cache/kineto_resnet50_w4_2021.json.gz")
    if not twin.exists():
        pytest.skip("the num_workers=4 twin is not on this machine")
    with gzip.open(twin, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    steps = [float(e["dur"]) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    loader = [float(e["dur"]) for e in events if str(e.get("name", "")).startswith("enumerate(DataLoader)#")]
    assert max(loader) < 5000  # µs: the workers keep the batches ready
    _, w0_steps, _ = _kineto("foreign/kineto_resnet50_w0_2021")
    measured = 1 - statistics.median(steps) / statistics.median(float(s["dur"]) for s in w0_steps)
    assert 0.2 < measured < 0.35
    predicted = analyze(fixture("foreign/kineto_resnet50_w0_2021")).finding("gpu-idle").impact.share  # as profiled
    assert measured / 1.5 < predicted < measured * 1.5
    assert analyze(str(twin)).finding("gpu-idle") is None


def test_every_reading_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    for name in ("foreign/hta_sampled_rank0", "foreign/damaged_fields", "foreign/hta_backward_thread"):
        en = analysis_of(name).finding("gpu-idle")
        es = localize_finding(en, "es")
        for part in ("message", "advice", "fix"):
            assert getattr(es, part) != getattr(en, part), (name, part)
    es = localize_finding(analysis_of("foreign/hta_sampled_rank0").finding("gpu-idle"), "es")
    assert "paso del optimizador" in es.advice and "DataLoader" not in es.advice
    es = localize_finding(analysis_of("foreign/damaged_fields").finding("gpu-idle"), "es")
    assert "arranque" in es.advice


def test_a_region_waiting_on_a_collective_is_not_input(analysis_of):
    """hta_negq_rank0's '## KJTAllToAllSplitsAwaitable wait() ##' (TorchRec reading back the split sizes of its
    input all-to-all): the GPU idles under it with an all-to-all already queued, which runs only as the idle ends;
    the host waits for its result. It was told 'input work: load in DataLoader workers'; the trace shows a wait on
    a collective, and the advice says so."""
    import raw

    name = "foreign/hta_negq_rank0"
    region_name = "## KJTAllToAllSplitsAwaitable wait() ##"
    launch = {c["args"]["correlation"]: c for c in raw.complete(name) if c.get("cat") == "cuda_runtime"
              and "correlation" in c.get("args", {})}
    work = sorted(raw.device_work(name), key=lambda k: float(k["ts"]))
    starts = [float(k["ts"]) for k in work]
    c10d = [e for e in raw.complete(name, "cpu_op") if e["name"].startswith("c10d::")]
    idle = intersect(idle_in_steps(name), _spans(name, "user_annotation", region_name))
    waited = 0.0
    for a, b in idle:
        nxt = work[next(k for k, s in enumerate(starts) if s >= b)]  # what ends this idle
        call = launch.get(nxt.get("args", {}).get("correlation"))
        if (nxt["name"].startswith("ncclKernel") and call is not None and float(call["ts"]) < a
                and any(raw.inside(op, call) and op["name"] == "c10d::alltoall_base_" for op in c10d)):
            waited += b - a
    assert waited > 0.9 * total(idle)
    finding = analysis_of(name).finding("gpu-idle")
    region = finding.record.regions[0]
    assert (region.name, region.kind, region.collective) == (region_name, "collective", "c10d::alltoall_base_")
    assert "DataLoader" not in finding.advice and "c10d::alltoall_base_" in finding.advice
    assert "compare the ranks" in finding.fix
    from pista.i18n import localize_finding

    es = localize_finding(finding, "es")
    assert "colectivo" in es.advice and "DataLoader" not in es.advice


@pytest.mark.parametrize("name", ["gpu/gpu_idle_dataloader", "gpu/resnet_loader", "foreign/kineto_resnet50_w0_2021",
                                  "foreign/hta_sampled_rank0", "foreign/hta_backward_thread"])
def test_regions_with_no_collective_behind_their_idle_keep_their_reading(analysis_of, name):
    """The twins: a loader's, an optimizer's or a backward's idle ends at work launched after it (or at no
    collective): none reads as a wait on a collective."""
    finding = analysis_of(name).finding("gpu-idle")
    assert finding is not None and all(g.kind != "collective" and not g.collective for g in finding.record.regions)
