"""Traces `pista run` and the examples captured on an H200 (tests/fixtures/gpu/capture_*, see
capture_README.md there): what the capture defaults put in them, and the verdicts the workloads'
arithmetic predicts. (Their totals against torch's printed tables are checked in test_table.py.)
"""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from pista.analysis import analyze

CAPTURES = sorted(p.name.removesuffix(".json.gz") for p in (FIXTURES / "gpu").glob("capture_*.json.gz"))


def gpu(name: str):
    return analyze(FIXTURES / "gpu" / f"{name}.json.gz")


def test_the_captures_are_there():
    assert {"capture_mm64", "capture_mm4096", "capture_mm4096_compile", "capture_mm64_sync",
            "capture_linear", "capture_mlp", "capture_transformer"} <= set(CAPTURES)


@pytest.mark.parametrize("name", CAPTURES)
def test_capture_defaults(name):
    analysis = gpu(name)
    facts = analysis.facts
    # schedule(wait=1, warmup=1, active=3): steps 2, 3 and 4 are kept
    assert analysis.summary.step_numbers == [2, 3, 4]
    assert facts.has_gpu and analysis.summary.devices
    # record_shapes=True: ops carry their input shapes
    trace = facts.trace
    ops = [i for i in range(len(trace)) if trace.event_name(i).startswith("aten::")]
    assert ops and any("Input Dims" in trace.args(i) for i in ops)
    # the profiler synchronizes once when it stops; --sync adds one at each of the 3 kept step ends
    syncs = analysis.table.row("cudaDeviceSynchronize")
    if name.endswith("_sync"):
        assert syncs.calls == 3 + 1
    elif name != "capture_profile_item":  # that script's .item() syncs through cudaStreamSynchronize
        assert syncs.calls == 1


def test_mm64_is_overhead_bound():
    # 2 x 64^3 flops is well under a microsecond of an H200; launching the two kernels takes longer
    assert gpu("capture_mm64").summary.verdict == "overhead-bound"


def test_mm4096_is_compute_bound():
    # 2 x 4096^3 = 137 GFLOP per call: over 100 µs of bf16 tensor-core time, far above the launch cost
    summary = gpu("capture_mm4096").summary
    assert summary.verdict == "compute-bound"
    assert summary.self_device_total_us > 3 * 100


def test_compiled_mm4096_is_one_addmm():
    # inductor turns matmul + add into one addmm with the bias in the GEMM's epilogue
    analysis = gpu("capture_mm4096_compile")
    assert analysis.summary.verdict == "compute-bound"
    table = analysis.table
    assert table.row("aten::addmm").calls == 3
    assert table.row("aten::add") is None and table.row("aten::mm") is None


def test_step_end_sync_leaves_the_gpu_idle_between_steps():
    # with a synchronize at each step end the GPU drains and waits for the next launches
    for name in ("capture_mm4096_compile", "capture_mm64"):
        plain, synced = gpu(name).summary, gpu(name + "_sync").summary
        assert synced.gpu_busy_share < plain.gpu_busy_share
    assert "trailing-sync" in gpu("capture_mm64_sync").rules_fired
    assert "trailing-sync" not in gpu("capture_mm64").rules_fired


def test_profiled_script_steps_are_the_named_function():
    # user_train.py (scripts/device_capture.sh), run with --function train_step, calls loss.item()
    # once per train_step: one item, one device-to-host copy, one stream sync per kept step
    table = gpu("capture_profile_item").table
    assert table.row("aten::item").calls == 3
    assert table.row("cudaStreamSynchronize").calls == 3
    assert table.row("Optimizer.step#SGD.step", "CPU").calls == 3


def test_real_sweep_turns_between_1024_and_4096():
    from pista.cli.sweep import turning_point

    points = json.loads((FIXTURES / "gpu" / "capture_sweep.json").read_text())["points"]
    assert [p["size"] for p in points] == [64, 256, 1024, 4096]
    # 1024: 2 GFLOP, a few µs of GPU per call against tens of µs of launch; 4096: 137 GFLOP, ~170 µs
    assert [p["verdict"] for p in points] == ["overhead-bound"] * 3 + ["compute-bound"]
    assert "between size 1024 (overhead-bound) and size 4096" in turning_point("matmul_add", points)
