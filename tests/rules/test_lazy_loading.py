from __future__ import annotations

import statistics

import pytest
import raw
from conftest import FIXTURES
from torch_table import parse_table

from pista.analysis import analyze
from pista.rules.lazy_loading import ID

ONE_TIME_RULES = ["cold-start", "dead-window", "profiler-overhead", "gemm-heuristics", "lazy-loading"]
LOADS = ("Lazy Function Loading", "Runtime Triggered Module Loading")


def _findings(load_facts, name, rules=(ID,)):
    return analyze(load_facts(name), rules=list(rules)).findings


def _end(e) -> float:
    return float(e["ts"]) + float(e["dur"])


def _first_calls(name: str) -> tuple[list[dict], list[dict]]:
    """The top-level op calls (in no other op) that hold a kernel load, and all top-level op calls."""
    ops = raw.complete(name, "cpu_op")
    top = [o for o in ops if not any(p is not o and raw.inside(p, o) for p in ops)]
    loads = [e for e in raw.complete(name, "overhead") if e["name"] in LOADS]
    holding = [o for o in top if any(float(o["ts"]) <= float(x["ts"]) < _end(o) for x in loads)]
    return holding, top


def test_fires_on_ops_first_run_late_in_the_window(load_facts):
    # gpu/lazy_late_kernel: a warmed-up MLP whose second profiled step also computes a loss and an
    # accuracy for the first time in the process
    name = "gpu/lazy_late_kernel"
    (finding,) = _findings(load_facts, name)
    r = finding.record
    rows = {row.name: row for row in parse_table(FIXTURES / "gpu/lazy_late_kernel.table.txt").rows}
    assert r.events == rows["Lazy Function Loading"].calls == 6
    assert r.load_us == pytest.approx(rows["Lazy Function Loading"].cpu_total_us, abs=0.01)
    holding, _ = _first_calls(name)
    assert {c.op for c in r.calls} == {o["name"] for o in holding} == {
        "aten::to", "aten::cross_entropy_loss", "aten::argmax", "aten::eq", "aten::mean"}
    assert r.first_calls_us == pytest.approx(sum(float(o["dur"]) for o in holding))
    assert r.in_steps == (3,) and r.calls[0].op == "aten::cross_entropy_loss"  # the longest first
    to = next(c for c in r.calls if c.op == "aten::to")
    assert to.typical_us is not None and to.typical_us < 1000  # its later, warm call in the same step
    assert {e.name for e in finding.evidence} >= {"Lazy Function Loading", "aten::cross_entropy_loss"}
    assert all(e.step == 3 for e in finding.evidence)
    assert "aten::cross_entropy_loss" in finding.fix


def test_impact_is_the_first_calls_idle_time_less_their_usual(load_facts):
    name = "gpu/lazy_late_kernel"
    (finding,) = _findings(load_facts, name)
    holding, top = _first_calls(name)
    busy = raw.busy_intervals(name)
    idle = sum(_end(o) - float(o["ts"]) - sum(max(0.0, min(_end(o), b) - max(float(o["ts"]), a)) for a, b in busy)
               for o in holding)
    usual = 0.0
    for o in holding:
        others = [float(p["dur"]) for p in top if p["name"] == o["name"] and p not in holding]
        usual += statistics.median(others) if others else 0.0
    total = idle - usual
    assert finding.impact.once and finding.impact.us == pytest.approx(total, rel=0.01)
    assert finding.impact.share == pytest.approx(min(1.0, total / raw.window_us(name)), abs=0.01)
    assert finding.severity.value == "warning"  # 94% of the window, once
    assert "one-time" in finding.basis and finding.impact.once


@pytest.mark.parametrize("name", ["seed_mm64_cold", "gpu/window_sync_cold", "gpu/eval_first_call",
                                  "gpu/gemm_new_shapes", "gpu/recompile"])
def test_silent_where_another_finding_owns_the_loads(load_facts, name):
    # the loads sit in a cold first step (cold-start), a cold region call (dead-window), new-shape
    # GEMMs (gemm-heuristics) or compiling (recompilation): each says so once
    facts = load_facts(name)
    names = facts.trace.name_array[facts.trace.name]
    assert any(str(n) in LOADS for n in names)
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_compile_cold", "gpu/cpu_only"])
def test_silent_without_module_loading(load_facts, name):
    assert _findings(load_facts, name) == []


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_warm", "big_gpt_eager_20steps", "gpu/capture_mlp",
                                  "gpu/capture_transformer", "gpu/capture_mlp_compile"])
def test_healthy_traces_stay_quiet(load_facts, name):
    mine = _findings(load_facts, name, ONE_TIME_RULES)
    assert all(f.severity.value == "info" for f in mine), [(f.rule, f.severity) for f in mine]


# -- start-up without load events (issue 35, item 2) ---------------------------------------------------------

def _bare(name: str, directory) -> str:
    """The fixture as a capture without steps, regions or CUPTI's load events records it (older CUDA/CUPTI,
    ROCm; the foreign windows of issue 35)."""
    return str(raw.cut(name, directory, lambda e: raw.annotation(e) or raw.kernel_load(e), "bare"))


def _idle_in(name: str, spans: list[tuple[float, float]]) -> float:
    return raw.total(raw.subtract(raw.merge(spans), raw.merge(raw.busy_intervals(name))))


@pytest.mark.parametrize("fixture", ["gpu/window_sync_cold", "seed_mm64_cold"])
def test_start_up_without_load_events_is_one_time(tmp_path, fixture):
    # the process's first matmul_add profiled (window_sync_cold: once; seed_mm64_cold: 3 times), read as a
    # window with no step, no region and no load event: 97% of it was overhead-bound's "per step" idle with
    # torch.compile advice, or nobody's
    name = _bare(fixture, tmp_path)
    analysis = analyze(name)
    finding = analysis.finding(ID)
    assert finding is not None and finding.impact.once and finding.record.events == 0
    top = [o for o in raw.complete(name, "cpu_op") if not any(p is not o and raw.inside(p, o)
                                                             for p in raw.complete(name, "cpu_op"))]
    first = {}
    for o in sorted(top, key=lambda o: float(o["ts"])):
        first.setdefault(o["name"], o)
    assert {c.op for c in finding.record.calls} == {"aten::matmul", "aten::add"}
    assert finding.record.first_calls_us == pytest.approx(sum(float(o["dur"]) for o in first.values()))
    # the set-up in no recorded call: aten::matmul's and aten::mm's own time, the profiler's buffer request
    # inside (its own lane) left out
    mm = raw.complete(name, "cpu_op", "aten::mm")[0]
    profiler = sum(float(e["dur"]) for e in raw.complete(name, "overhead")
                   if float(mm["ts"]) <= float(e["ts"]) and _end(e) <= _end(mm))
    own = raw.self_us(name, first["aten::matmul"]) + raw.self_us(name, mm) - profiler
    matmul = next(c for c in finding.record.calls if c.op == "aten::matmul")
    assert matmul.setup == "" and matmul.setup_us == pytest.approx(own, rel=1e-3)
    assert "one iteration before profiling" in finding.fix and "torch.compile" not in finding.fix
    # nothing reports those calls' idle as steady overhead
    window = raw.complete(name)
    lo = min(float(e["ts"]) for e in window if e.get("cat") == "cpu_op")
    hi = max(_end(e) for e in window if e.get("cat") == "cpu_op")
    steady = _idle_in(name, [(lo, hi)]) - _idle_in(name, [(float(o["ts"]), _end(o)) for o in first.values()])
    bound = analysis.finding("overhead-bound")
    assert bound is None or bound.record.per_op_us_per_step <= steady + 1.0
    assert analysis.notices and "lazy-loading" in analysis.notices[-1]


@pytest.mark.parametrize("fixture", ["gpu/window_sync_warm", "seed_mm64_warm"])
def test_warm_twins_without_load_events_hold_no_start_up(tmp_path, fixture):
    # the same programs after warm-up calls: nothing starts up, and overhead-bound keeps its per-op idle
    name = _bare(fixture, tmp_path)
    analysis = analyze(name)
    assert analysis.finding(ID) is None
    assert analysis.finding("overhead-bound") is not None


def test_a_start_up_call_another_finding_holds_is_told_there(tmp_path):
    # foreign/kineto_resnet50_autograd_api (kineto's ResNet-50 sample, no steps, no load events): the first
    # conv2d (1.4 s) holds the first cudnn_convolution, cudnn-setup's first pass; lazy-loading listed it too, so
    # its calls (3.57 s) were more than its impact (2.05 s). Now each call it lists is the time it claims. Without
    # its Optimizer.step# regions (with them the first iteration is cold-start's whole)
    name = "foreign/kineto_resnet50_autograd_api"
    analysis = analyze(raw.cut(name, tmp_path, lambda e: str(e.get("name", "")).startswith("Optimizer."),
                               "no_optimizer_regions"))
    finding = analysis.finding(ID)
    assert finding is not None and finding.record.events == 0
    assert "aten::conv2d" not in {c.op for c in finding.record.calls}
    assert analysis.finding("cudnn-setup") is not None
    ops = {(o["name"], float(o["dur"])) for o in raw.complete(name, "Operator")}  # torch 1.8's category
    assert all((c.op, c.dur_us) in ops for c in finding.record.calls)
    listed = sum(c.dur_us for c in finding.record.calls)
    assert finding.record.first_calls_us == pytest.approx(listed)
    assert finding.impact.us == pytest.approx(listed, rel=0.01)


def _launch_delays(name: str, min_us: float) -> list[tuple[dict, float, int | None]]:
    """The launch calls of min_us or more in the file, each with how long after it returned its device work
    started (µs), and the step it ran in (its number, None outside steps)."""
    starts: dict = {}
    for k in raw.device_work(name):
        c = k.get("args", {}).get("correlation")
        starts[c] = min(starts.get(c, float("inf")), float(k["ts"]))
    steps = raw.steps(name)
    out = []
    for e in raw.complete(name):
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "Launch" in e["name"] and float(e["dur"]) >= min_us:
            c = e.get("args", {}).get("correlation")
            step = next((s["name"] for s in steps if raw.inside(s, e)), None)
            if c in starts:
                out.append((e, starts[c] - _end(e), step))
    return out


def test_a_slow_launch_behind_a_full_queue_is_no_first_call(load_facts):
    # foreign/hta_negq_rank0 (HTA's TorchRec rank 0, steps 550-554, no load events): 1-7 ms cudaLaunchKernel calls
    # in NEMetric:update, in every step, whose kernels start 164-176 ms after they return: the host is that far
    # ahead of the GPU and the launch waited for room in the queue. They were 'first calls starting CUDA up'
    # (lazy-loading, 48 ms once); a cold launch's kernel starts as it returns (tl_normalization's, below)
    name = "foreign/hta_negq_rank0"
    slow = _launch_delays(name, 1000.0)
    assert len(slow) >= 10 and all(delay >= 100_000 for _, delay, _ in slow)
    assert {step for _, _, step in slow} == {s["name"] for s in raw.steps(name)}  # every step
    analysis = analyze(load_facts(name))
    assert not [f for f in analysis.findings if f.rule in ONE_TIME_RULES]
    # the twin: TraceLens' normalization test on an MI300X (no steps), whose first launches of each op take
    # 8.6-332 ms with their kernels starting within 0.1 ms of the return: start-up, still lazy-loading's
    twin = "foreign/tl_normalization"
    cold = _launch_delays(twin, 5000.0)
    assert len(cold) >= 5 and all(delay < 100 for _, delay, _ in cold)
    finding = analyze(load_facts(twin)).finding(ID)
    assert finding is not None and finding.impact.once
    assert {c.op for c in finding.record.calls} >= {"aten::batch_norm", "aten::group_norm", "aten::instance_norm"}
