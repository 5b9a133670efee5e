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

    from pista.findings import analyze

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
