from __future__ import annotations

import pytest
import raw

from pista.rules import unfused_optimizer

RULE = "unfused-optimizer"
WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def _optimizer_steps(name: str) -> list[dict]:
    return [e for e in raw.complete(name, "user_annotation") if str(e["name"]).startswith("Optimizer.step#")
            and any(raw.inside(s, e) for s in raw.steps(name))]


def _launched_under(name: str, outer: dict) -> list[dict]:
    """Device work whose launching runtime call (same correlation id) ran inside `outer`."""
    calls = {c["args"]["correlation"] for c in raw.complete(name) if c.get("cat") in ("cuda_runtime", "cuda_driver")
             and "correlation" in c.get("args", {}) and raw.inside(outer, c)}
    return [k for k in raw.device_work(name) if k.get("args", {}).get("correlation") in calls]


def _busy_us(name: str, lo: float, hi: float) -> float:
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in raw.busy_intervals(name))


def test_fires_on_foreach_adamw(analysis_of):
    for name in ("series_mlp_eager", "gpu/adamw_foreach", "gpu/gpt_autocast"):
        finding = analysis_of(name).finding(RULE)
        assert finding is not None, name
        r = finding.record
        assert (r.optimizer, r.event, r.mode, r.fusable) == ("AdamW", "Optimizer.step#AdamW.step", "foreach", True)
        # AdamW foreach: mul, lerp, mul, addcmul, sqrt, div, add, addcdiv, each one sweep
        assert r.passes == 8 and "aten::_foreach_addcdiv_" in r.foreach_ops
        assert "fused=True" in finding.fix and "torch.optim.AdamW" in finding.advice
        assert {e.name for e in finding.evidence} >= {"Optimizer.step#AdamW.step"}


def test_series_mlp_eager_spends_most_of_its_gpu_time_in_adamw(analysis_of):
    # issue 15: series_mlp_eager's optimizer share of the GPU time is 0.55-0.70 (REVIEW.md: 62.6%)
    name = "series_mlp_eager"
    finding = analysis_of(name).finding(RULE)
    opt = sum(float(k["dur"]) for s in _optimizer_steps(name) for k in _launched_under(name, s))
    steps = raw.steps(name)
    lo, hi = float(steps[0]["ts"]), max(float(s["ts"]) + float(s["dur"]) for s in steps)
    # the window runs on to the end of the last work launched in a step
    launched = [k for s in steps for k in _launched_under(name, s)]
    hi = max([hi] + [float(k["ts"]) + float(k["dur"]) for k in launched])
    total = sum(float(k["dur"]) for k in raw.device_work(name) if lo <= float(k["ts"]) < hi)
    assert 0.55 <= opt / total <= 0.70
    assert abs(finding.record.gpu_share_percent - 100 * opt / total) < 0.1
    assert abs(finding.record.gpu_us - opt / len(steps)) < 0.01 * opt / len(steps)


def test_fused_ratios_are_the_pair_measured_on_the_h200():
    def totals(name: str) -> tuple[float, float]:
        calls = _optimizer_steps(name)
        return (sum(float(k["dur"]) for s in calls for k in _launched_under(name, s)),
                sum(float(s["dur"]) for s in calls))

    gpu_fused, host_fused = totals("gpu/adamw_fused")
    gpu_foreach, host_foreach = totals("gpu/adamw_foreach")
    assert abs(unfused_optimizer.FUSED_GPU_RATIO - gpu_fused / gpu_foreach) < 0.001
    assert abs(unfused_optimizer.FUSED_HOST_RATIO - host_fused / host_foreach) < 0.001


def _launches(name: str) -> list[tuple[dict, dict]]:
    """(runtime call, the device work it launched), by the call's start."""
    work = {k["args"]["correlation"]: k for k in raw.device_work(name) if "correlation" in k.get("args", {})}
    pairs = [(c, work[c["args"]["correlation"]]) for c in raw.complete(name)
             if c.get("cat") in ("cuda_runtime", "cuda_driver") and c.get("args", {}).get("correlation") in work]
    return sorted(pairs, key=lambda p: float(p[0]["ts"]))


def test_impact_is_how_much_earlier_the_next_work_starts(analysis_of):
    gpu_ratio, host_ratio = unfused_optimizer.FUSED_GPU_RATIO, unfused_optimizer.FUSED_HOST_RATIO
    for name, severity in (("gpu/adamw_foreach", "warning"), ("series_mlp_eager", "warning")):
        finding = analysis_of(name).finding(RULE)
        launches = _launches(name)
        work = raw.device_work(name)
        known, unknown = [], 0
        for call in _optimizer_steps(name):
            kernels = _launched_under(name, call)
            s = sum(float(k["dur"]) for k in kernels) * (1 - gpu_ratio)
            h = float(call["dur"]) * (1 - host_ratio)
            after = [(c, k) for c, k in launches if float(c["ts"]) >= float(call["ts"]) + float(call["dur"])]
            if not after:
                unknown += 1
                continue
            c, k = after[0]
            start = float(k["ts"])
            queued = min(start, float(c["ts"]) + float(c["dur"]))
            gpu = sum(float(k2["dur"]) for k2 in kernels)
            first = min(float(k2["ts"]) for k2 in kernels)
            # fused: one kernel of gpu - s once the work before the step's first kernel is done and the
            # shorter call has ended (launched it)
            ready = max(float(w["ts"]) + float(w["dur"]) for w in work if float(w["ts"]) < first)
            fused_end = max(ready, float(call["ts"]) + float(call["dur"]) - h) + gpu - s
            known.append(min(max(start - max(fused_end, queued - h), 0.0), s + h))
        assert known and unknown == 1  # the last step has nothing after it in the window
        per_step = (sum(known) + unknown * sum(known) / len(known)) / len(raw.steps(name))
        assert abs(finding.impact.us - per_step) <= 0.01 * per_step, name
        assert abs(finding.impact.share - per_step / raw.step_us(name)) <= 0.002
        assert finding.severity.value == severity
        assert "gpu/adamw_fused" in finding.basis


def _from_optimizer_to_step_end(name: str) -> float:
    """Mean µs per step from Optimizer.step's start to the end of the step (the host's ProfilerStep
    span or the step's last device work, whichever is later): what fused can shorten."""
    calls = _optimizer_steps(name)
    work = raw.device_work(name)
    out = []
    for s in raw.steps(name):
        lo, hi = float(s["ts"]), float(s["ts"]) + float(s["dur"])
        call = next(c for c in calls if lo <= float(c["ts"]) < hi)
        launched = [float(k["ts"]) + float(k["dur"]) for k in work if lo <= float(k["ts"]) < hi]
        out.append(max([hi, *launched]) - float(call["ts"]))
    return sum(out) / len(out)


@pytest.mark.parametrize("foreach, fused", [("gpu/adamw_foreach", "gpu/adamw_fused"),
                                            ("gpu/adamw_foreach_bf16", "gpu/adamw_fused_bf16")])
def test_the_saving_matches_the_profiled_twins(analysis_of, foreach, fused):
    # the same MLP both ways: the time from Optimizer.step to the step's end shrinks by about the
    # saving (the steps before the optimizer vary by +-400 µs between the runs, so only that part)
    measured = _from_optimizer_to_step_end(foreach) - _from_optimizer_to_step_end(fused)
    saving = analysis_of(foreach).finding(RULE).impact.us
    assert abs(saving - measured) <= 0.25 * measured


def test_exposed_host_time_is_the_span_with_the_gpu_idle(analysis_of):
    name = "gpu/adamw_foreach"
    r = analysis_of(name).finding(RULE).record
    calls = _optimizer_steps(name)
    exposed = sum(float(s["dur"]) - _busy_us(name, float(s["ts"]), float(s["ts"]) + float(s["dur"])) for s in calls)
    assert abs(r.exposed_host_us - exposed / len(raw.steps(name))) <= 0.01 * exposed


def test_silent_when_fused_or_a_single_pass(analysis_of):
    # fused=True (AdamW in the GPT and the MLP, SGD in ResNet-50); plain SGD foreach is one
    # _foreach_add_ sweep, as good as fused on the GPU; no optimizer at all; no GPU
    for name in ("gpu/adamw_fused", "gpu/gpt_bf16_fused", "gpu/resnet50_bf16", "series_linear_train",
                 "seed_mm4096_warm", "gpu/cpu_only"):
        assert analysis_of(name).finding(RULE) is None, name


def test_spanish_names_the_change(analysis_of):
    from pista.i18n import localize_finding

    finding = localize_finding(analysis_of("gpu/adamw_foreach").finding(RULE), "es")
    assert "fused=True" in finding.fix and "por paso" in finding.fix
    assert "pasadas sobre los parámetros" in finding.message


def test_cpu_loop_adamw_is_the_cpu_step(analysis_of):
    # a CPU-only trace: AdamW's default loop over parameters; the saving is Optimizer.step's own span
    # times what fused would not keep, and the fused twin measures it
    from pista.rules.unfused_optimizer import FUSED_CPU_RATIO

    name = "gpu/cpu_adamw_loop"
    finding = analysis_of(name).finding("unfused-optimizer")
    assert finding is not None and finding.record.device == "cpu" and finding.record.mode == "per-parameter"
    calls = raw.in_steps(name, raw.complete(name, "user_annotation", "Optimizer.step#AdamW.step"))
    per_step = sum(float(e["dur"]) for e in calls) / len(raw.steps(name))
    assert finding.impact.us == pytest.approx(per_step * (1 - FUSED_CPU_RATIO["per-parameter"]), rel=0.01)
    fused = raw.in_steps("gpu/cpu_adamw_fused", raw.complete("gpu/cpu_adamw_fused", "user_annotation",
                                                              "Optimizer.step#AdamW.step"))
    measured = per_step - sum(float(e["dur"]) for e in fused) / len(raw.steps("gpu/cpu_adamw_fused"))
    assert 0.7 * measured <= finding.impact.us <= 1.3 * measured
    assert "fused=True" in finding.fix
    assert analysis_of("gpu/cpu_mlp").finding("unfused-optimizer") is not None


@pytest.mark.parametrize("name", ["gpu/cpu_adamw_fused", "gpu/cpu_linear_host", "gpu/cpu_only"])
def test_cpu_silent_fused_or_one_pass(analysis_of, name):
    # fused; plain SGD's loop (one add_ per parameter: a single pass)
    assert analysis_of(name).finding("unfused-optimizer") is None


def test_a_hand_written_update_loop_is_named(analysis_of):
    """savings/h100/optim_manual_sgd: `buf.mul_(m).add_(p.grad); p.data.add_(buf, alpha=-lr)` over 98
    parameters after backward(), no Optimizer.step (fused SGD saved 27% unprofiled): the in-place ops after
    each step's last autograd node, counted from the raw events."""
    import raw

    name = "savings/h100/optim_manual_sgd__broken"
    finding = analysis_of(name).finding(RULE)
    assert finding is not None and finding.record.mode == "hand-written" and finding.record.optimizer == "SGD"
    counts = []
    for step in raw.steps(name):
        ops = [e for e in raw.complete(name, "cpu_op") if raw.inside(step, e)]
        last = max(float(e["ts"]) + float(e["dur"]) for e in raw.complete(name, "cpu_op")
                   if str(e["name"]).startswith("autograd::engine::evaluate_function") and
                   float(step["ts"]) <= float(e["ts"]) < float(step["ts"]) + float(step["dur"]))
        outer = [e for e in ops if not any(raw.inside(o, e) and o is not e for o in ops)]
        counts.append(sum(1 for e in outer if float(e["ts"]) > last and e["name"] in ("aten::add_", "aten::mul_")))
    assert counts == [294] * len(counts)
    assert finding.record.ops_per_step == pytest.approx(294)
    assert "fused=True" in finding.fix and "opt.step()" in finding.fix


@pytest.mark.parametrize("name", ["savings/h100/optim_manual_sgd__fixed", "savings/h100/optim_adam_loop__fixed",
                                  "savings/h100/healthy_gpt_bf16__broken", "gpu/gpt_bf16_fused", "gpu/run_mlp_stack",
                                  "savings/h100/sync_per_param__fixed"])
def test_no_hand_written_loop_where_an_optimizer_updates(name, analysis_of):
    """Training steps whose update is an Optimizer.step (fused or foreach), or a few in-place ops after the
    backward (a gradient-norm, a loss scale): no hand-written update loop."""
    finding = analysis_of(name).finding(RULE)
    assert finding is None or finding.record.mode != "hand-written"


def test_a_closure_s_forward_and_backward_are_not_the_optimizer_s(analysis_of):
    """Issue 34: Lightning runs forward and backward inside optimizer.step(closure), so the Optimizer.step#
    region spans the whole step (savings/h100/closure_unfused: AdamW(foreach=False) stepped with a closure, a
    new user's Lightning run had read 'fused=True saves 71%' for a 3% saving). The finding's kernels are those
    launched after the last autograd node inside the call: the update's, not the forward's GEMMs."""
    name = "savings/h100/closure_unfused__broken"
    f = next(f for f in analysis_of(name).findings if f.rule == "unfused-optimizer")
    nodes = [e for e in raw.complete(name) if str(e.get("name", "")).startswith("autograd::engine::evaluate_function")]
    steps = raw.steps(name)
    update = forward = 0
    for c in raw.complete(name, "user_annotation"):
        if not str(c["name"]).startswith("Optimizer.step#") or not any(raw.inside(s, c) for s in steps):
            continue
        lo, hi = float(c["ts"]), float(c["ts"]) + float(c["dur"])
        last = max(float(n["ts"]) + float(n["dur"]) for n in nodes if lo <= float(n["ts"]) + float(n["dur"]) <= hi)
        for k in raw.complete(name, "kernel"):
            at = raw.launched_at(name, k)
            update += last <= at < hi
            forward += lo <= at < last and k["name"].startswith("nvjet")
    assert forward > 0  # the closure's GEMMs ran inside the call
    assert f.record.kernels_per_step == pytest.approx(update / len(steps))
    assert f.record.kernels_per_step == 8 * 20  # 20 tensors (10 Linear layers), 8 kernels each

def _in_flight_us(name: str, call: dict) -> tuple[float, float, set[str]]:
    """From the raw JSON, for one Optimizer.step call: the GPU time of the NCCL kernels launched inside it, the
    host time inside the call from each one's launch to its end (merged), and the host ops that launched them."""
    lo, hi = float(call["ts"]), float(call["ts"]) + float(call["dur"])
    launch = {c["args"]["correlation"]: c for c in raw.complete(name) if c.get("cat") in ("cuda_runtime", "cuda_driver")
              and "correlation" in c.get("args", {}) and raw.inside(call, c)}
    nccl = [k for k in raw.device_work(name) if k["name"].startswith("ncclKernel")
            and k.get("args", {}).get("correlation") in launch]
    spans = sorted((max(lo, float(launch[k["args"]["correlation"]]["ts"])), min(hi, float(k["ts"]) + float(k["dur"])))
                   for k in nccl)
    flight, end = 0.0, lo
    for a, b in spans:
        flight += max(0.0, b - max(a, end))
        end = max(end, b)
    ops = {e["name"] for e in raw.complete(name, "cpu_op") if e["name"].startswith("c10d::") and raw.inside(call, e)}
    return sum(float(k["dur"]) for k in nccl), flight, ops


def test_a_collective_in_the_step_is_communication_not_the_update(analysis_of):
    """HTA's hta_sampled_rank0 (distributed Shampoo): each Shampoo.step launches an all-gather (c10d::_allgather_base_,
    42-64 ms on the GPU) and the host goes on only once it has ended. Fusing or compiling the update does not shorten
    that: its GPU time and the host's time while it is in flight are left out of the optimizer's figures (the
    review: 53 ms/step of all-gather counted as optimizer time, 81 ms claimed), and the message names it."""
    name = "foreign/hta_sampled_rank0"
    calls = [e for e in raw.complete(name) if e["name"] == "Optimizer.step#Shampoo.step"]
    steps = len(raw.steps(name))
    per_call = [_in_flight_us(name, c) for c in calls]
    gpu, flight = sum(x[0] for x in per_call), sum(x[1] for x in per_call)
    ops = set().union(*(x[2] for x in per_call))
    r = analysis_of(name).finding(RULE).record
    assert ops == {"c10d::_allgather_base_"} and r.comm_op == "c10d::_allgather_base_"
    assert r.comm_us == pytest.approx(gpu / steps, rel=0.01) and r.comm_us > 40_000
    assert r.comm_wait_us == pytest.approx(flight / steps, rel=0.01)
    spans = sum(float(c["dur"]) for c in calls) / steps
    assert r.host_us == pytest.approx(spans - r.comm_wait_us, rel=0.01)
    assert r.gpu_us < 5_000  # the update's own kernels: the all-gather is not among them
    # what fusing saves is bounded by the update's own host and GPU time, the all-gather's wait left out
    assert r.saving_us <= r.host_saving_us + r.gpu_saving_us + 1.0
    assert r.saving_us < (spans * (1 - unfused_optimizer.FUSED_HOST_RATIO)) / 2
    f = analysis_of(name).finding(RULE)
    assert "c10d::_allgather_base_" in f.message and "exposed-communication" in f.message


def test_an_optimizer_without_collectives_reads_as_before(analysis_of):
    """The twin: hta_nccl_data's SGD step (DDP all-reduces in the backward, not in the step) launches no collective:
    its host time is the whole Optimizer.step span, nothing is left out, and the message names no collective."""
    name = "foreign/hta_nccl_data"
    calls = _optimizer_steps(name)
    assert calls and all(_in_flight_us(name, c)[0] == 0 for c in calls)
    f = analysis_of(name).finding(RULE)
    assert f.record.comm_op == "" and f.record.comm_wait_us == 0.0
    assert f.record.host_us == pytest.approx(sum(float(c["dur"]) for c in calls) / len(raw.steps(name)), rel=0.01)
    assert "exposed-communication" not in f.message
