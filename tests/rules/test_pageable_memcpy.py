from __future__ import annotations

import numpy as np
import pytest


def _named(trace, name: str) -> np.ndarray:
    return np.flatnonzero(trace.name_array[trace.name] == name)


def test_fires_on_both_directions_of_pageable_copies(analysis_of):
    analysis = analysis_of("gpu/pageable_memcpy")
    finding = analysis.finding("pageable-memcpy")
    assert finding is not None
    facts = analysis.facts
    trace = facts.trace
    htod = _named(trace, "Memcpy HtoD (Pageable -> Device)")
    dtoh = _named(trace, "Memcpy DtoH (Device -> Pageable)")
    pinned = _named(trace, "Memcpy HtoD (Pinned -> Device)")
    assert len(htod) == len(dtoh) == len(pinned) == 3  # one of each per profiled step
    # the .cpu() read-back into pageable memory is this rule's too (its sync counted once, here)
    assert analysis.finding("host-sync") is None
    back, group = finding.record.groups  # the costlier first: 64 MiB at 1.4 GB/s
    assert (back.direction, back.op, back.region) == ("DtoH", "aten::to", "device_to_host")
    assert back.device_us == pytest.approx(trace.dur[dtoh].sum() / 1000)
    assert (group.direction, group.op, group.region, group.loader) == ("HtoD", "aten::to", "pageable_copy", False)
    assert group.copies == 3 and group.mib == 3 * 64  # 64 MiB tensors in the capture script
    assert group.device_us == pytest.approx(trace.dur[htod].sum() / 1000)
    # torch's table: Memcpy HtoD (Pinned -> Device) 3.639 ms for the same 192 MiB
    assert group.pinned_gb_s > 5 * group.gb_s
    real = {(trace.ts[i] / 1000, trace.dur[i] / 1000, facts.step_of(i)) for i in [*htod, *dtoh]}
    copies = [e for e in finding.evidence if e.name.startswith("Memcpy")]
    assert {e.name for e in copies} <= {"Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)"}
    assert copies and {(e.ts_us, e.dur_us, e.step) for e in copies} <= real
    # the host call of a pageable copy lasts as long as the copy: it blocks
    calls = [e for e in finding.evidence if e.name == "cudaMemcpyAsync"]
    assert all(any(c.dur_us >= copy.dur_us for c in calls) for copy in copies)
    assert "pinned" in finding.fix and "aten::to in 'device_to_host'" in finding.fix


def test_fires_on_the_data_loader_s_batch_copy(analysis_of):
    finding = analysis_of("gpu/gpu_idle_dataloader").finding("pageable-memcpy")
    assert finding is not None
    [group] = finding.record.groups
    assert group.region == "data_loading" and group.loader  # the record_function region around the copy
    assert group.mib == 3 * 2
    assert "DataLoader with pin_memory=True" in finding.advice and "non_blocking=True" in finding.advice
    # 264 µs of a 15.4 ms step: worth knowing, not a warning (healthy apart from the loader)
    assert finding.severity.value == "info"


def test_a_batch_from_torch_s_dataloader_is_told_to_pin_there(analysis_of):
    # gpu/resnet_loader: `x, y = x.cuda(), y.cuda()` after each DataLoader batch, outside any region
    import raw

    name = "gpu/resnet_loader"
    assert any(str(e["name"]).startswith("enumerate(DataLoader)#") for e in raw.complete(name))
    pageable = [k for k in raw.complete(name, "gpu_memcpy") if "Pageable" in k["name"] and "HtoD" in k["name"]]
    assert pageable
    finding = analysis_of(name).finding("pageable-memcpy")
    group = finding.record.groups[0]
    assert group.region is None and group.loader and group.direction == "HtoD"
    assert "DataLoader with pin_memory=True" in finding.advice and "outside the loop" not in finding.advice


def test_a_small_copy_behind_queued_kernels_costs_the_idle_it_leaves(analysis_of):
    # gpu/pageable_behind_kernels: a 256 KiB pageable copy after 24 queued 4096² GEMMs; its op
    # blocks the host ~3.5 ms per step (the stream sync waits for the GEMMs), but the GPU computes
    # through nearly all of it: the cost is the idle left after, 3.7% of the step
    analysis = analysis_of("gpu/pageable_behind_kernels")
    finding = analysis.finding("pageable-memcpy")
    [group] = finding.record.groups
    assert group.mib == pytest.approx(3 * 0.25) and group.region == "small_copy"
    assert group.blocked_us > 3000 * 3 and group.saved_us < 0.1 * group.blocked_us
    assert finding.severity.value == "info"
    assert "device='cuda'" in finding.fix  # a small tensor: build it on the GPU
    assert analysis.finding("host-sync") is None  # the copy's stream sync is counted here, once


def test_silent_on_pinned_and_scalar_copies(analysis_of):
    # .item() reads back 4 bytes through pinned memory
    assert analysis_of("gpu/host_sync_item").finding("pageable-memcpy") is None
    assert analysis_of("series_linear_train").finding("pageable-memcpy") is None  # device-to-device only
    assert analysis_of("seed_mm4096_warm").finding("pageable-memcpy") is None
    assert analysis_of("gpu/cpu_only").finding("pageable-memcpy") is None


def _outermost_aten(events: list[dict], call: dict) -> dict:
    ops = [e for e in events if e.get("cat") == "cpu_op" and str(e["name"]).startswith("aten::")
           and _inside(e, call)]
    return max(ops, key=lambda e: float(e["dur"]))


def _inside(outer: dict, inner: dict) -> bool:
    import raw

    return raw.inside(outer, inner)


def _overlap(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in intervals)


@pytest.mark.parametrize("name", ["gpu/pageable_memcpy", "gpu/gpu_idle_dataloader", "gpu/pageable_behind_kernels"])
def test_impact_is_the_blocked_host_time_with_the_gpu_computing_nothing(analysis_of, name):
    import raw

    finding = analysis_of(name).finding("pageable-memcpy")
    events = raw.complete(name)
    steps = raw.steps(name)
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    busy_starts = sorted(a for a, _ in raw.busy_intervals(name))
    kernels = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events if e.get("cat") == "kernel"]
    total = 0.0
    for copy in events:
        if copy.get("cat") != "gpu_memcpy" or "Pageable" not in copy["name"]:
            continue
        op = _outermost_aten(events, runtime[copy["args"]["correlation"]])
        calls = [e for e in events if e.get("cat") == "cuda_runtime" and _inside(op, e)
                 and e["name"] in ("cudaMemcpyAsync", "cudaStreamSynchronize")]
        start = min(float(c["ts"]) for c in calls)
        end = max(float(c["ts"]) + float(c["dur"]) for c in calls)
        step_end = next(float(s["ts"]) + float(s["dur"]) for s in steps if _inside(s, op))
        nxt = max(end, min([b for b in busy_starts if b >= end] + [step_end]))
        blocked = sum(float(c["dur"]) for c in calls)
        cost = min(blocked, nxt - start - _overlap(kernels, start, nxt))
        if "DtoH" in copy["name"]:  # a read-back saves at most its staging: its time beyond a pinned copy's
            cost = min(cost, float(copy["dur"]) - float(copy["args"]["bytes"]) / 55e3)  # 55 GB/s, in µs
        total += cost
    per_step = total / len(steps)
    assert finding.impact.us == pytest.approx(per_step, rel=0.01)
    assert finding.impact.share == pytest.approx(per_step / raw.step_us(name), abs=0.002)
    assert "upper bound" in finding.basis


def test_every_field_renders_in_spanish(analysis_of):
    from pista.i18n import localize_finding

    for name in ("gpu/pageable_memcpy", "gpu/gpu_idle_dataloader"):
        english = analysis_of(name).finding("pageable-memcpy")
        spanish = localize_finding(english, "es")
        for part in ("title", "message", "advice", "fix", "basis"):
            assert getattr(spanish, part) != getattr(english, part), part
        assert all(e.note and e.note != n.note for e, n in zip(spanish.evidence, english.evidence, strict=True))


def test_advice_follows_the_cause_in_both_languages(analysis_of):
    import msgspec

    from pista.i18n._fluent import finding_text

    record = analysis_of("gpu/pageable_memcpy").finding("pageable-memcpy").record
    group = next(g for g in record.groups if g.direction == "HtoD")
    causes = {
        "read-back": msgspec.structs.replace(group, direction="DtoH"),
        "loader": msgspec.structs.replace(group, loader=True, region="data_loading"),
        "small": msgspec.structs.replace(group, mib=0.75, copies=3),
        "large": group,
    }
    words = {"read-back": "copy_(src, non_blocking=True)", "loader": "DataLoader", "small": "device='cuda'",
             "large": "pin_memory()"}
    for cause, g in causes.items():
        r = msgspec.structs.replace(record, groups=(g, group))
        en, es = ({part: finding_text("pageable_memcpy", part, r, lang) for part in ("message", "advice", "fix", "basis")}
                  for lang in ("en", "es"))
        for part in ("message", "advice", "fix", "basis"):
            assert en[part] != es[part], (cause, part)
        assert words[cause] in en["fix"] and words[cause] in es["fix"], cause


def test_a_read_back_waiting_for_queued_work_saves_only_its_staging(analysis_of):
    # foreign/hta_negq_rank0 (HTA's TorchRec rank 0, 5 steps of 216 ms): 6 read-backs of ~8.6 KB a step into
    # pageable memory, each cudaMemcpyAsync blocking the host up to 146 ms while the queued all-to-all and
    # embedding work it needs runs: the host is far ahead of the GPU. Pinned memory cannot take that wait away
    # (the host needs the values); it was critical, 82.5% of the step and 335 ms per step, more than the step
    import raw

    name = "foreign/hta_negq_rank0"
    steps = raw.steps(name)
    calls = {e["args"]["correlation"]: e for e in raw.complete(name, "cuda_runtime") if "correlation" in e["args"]}
    backs = [k for k in raw.complete(name, "gpu_memcpy") if "DtoH" in k["name"] and "Pageable" in k["name"]
             and any(raw.inside(s, calls[k["args"]["correlation"]]) for s in steps)]
    assert len(backs) == 6 * len(steps) and max(float(k["args"]["bytes"]) for k in backs) < 16 * 1024
    waited = [float(k["ts"]) - float(calls[k["args"]["correlation"]]["ts"]) for k in backs]
    assert max(waited) >= 100_000  # µs from the call to its copy: the queued work before it
    staging = sum(float(k["dur"]) for k in backs) / len(steps)  # at most what pinning saves, per step
    analysis = analysis_of(name)
    finding = analysis.finding("pageable-memcpy")
    assert finding is None or finding.impact.us <= staging
    assert all(f.impact.us <= raw.step_us(name) for f in analysis.findings if not f.impact.once)


def test_a_read_back_s_staging_is_still_saved(analysis_of):
    # the twin: gpu/pageable_memcpy's 64 MiB .cpu() read-backs run 48 ms at 1.4 GB/s with nothing queued before
    # them; a pinned copy takes ~1.2 ms, so most of each is staging and stays this rule's, critical
    import raw

    name = "gpu/pageable_memcpy"
    backs = [k for k in raw.complete(name, "gpu_memcpy") if k["name"] == "Memcpy DtoH (Device -> Pageable)"]
    pinned = sum(float(k["args"]["bytes"]) for k in backs) / 55e3  # µs at the H200's 55 GB/s pinned
    staging = (sum(float(k["dur"]) for k in backs) - pinned) / len(raw.steps(name))
    finding = analysis_of(name).finding("pageable-memcpy")
    back = next(g for g in finding.record.groups if g.direction == "DtoH")
    assert staging * 0.98 <= back.saved_us / len(raw.steps(name)) <= back.blocked_us / len(raw.steps(name))
    assert finding.severity.value == "critical"
