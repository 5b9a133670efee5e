from __future__ import annotations

import numpy as np
import pytest

from pista.findings import analyze
from pista.rules.dead_window import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def _named(facts, name):
    trace = facts.trace
    idx = np.flatnonzero(facts.is_complete & (trace.name_array[trace.name] == name))
    return idx[np.argsort(trace.ts[idx])]


def test_fires_on_the_cold_first_step(load_facts):
    facts = load_facts("seed_mm64_cold")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    region = _named(facts, "matmul_add")
    region = region[facts.is_host[region]][0]  # the host-side region of step 0
    launch = _named(facts, "cuLaunchKernelEx")[0]  # the GEMM's launch: the step's first
    window, shown_region, shown_launch = finding.evidence[:3]
    assert (window.step, window.ts_us) == (0, trace.ts[region] / 1000)
    assert window.dur_us == pytest.approx((trace.ts[launch] - trace.ts[region]) / 1000)
    assert (shown_region.name, shown_region.ts_us) == ("matmul_add", trace.ts[region] / 1000)
    assert (shown_launch.name, shown_launch.ts_us) == ("cuLaunchKernelEx", trace.ts[launch] / 1000)
    assert "aten::mm" in shown_launch.note
    assert finding.metrics["gap_us"] > 100_000
    # the profiler's buffer request is the largest recorded call inside it
    assert finding.evidence[3].name == "Activity Buffer Request"


def test_fires_without_steps(load_facts):
    (finding,) = _findings(load_facts, "seed_mm4096_compile_cold")
    assert finding.metrics["region"].startswith("## Call CompiledFxGraph")
    assert finding.evidence[0].step is None
    assert "Activity Buffer Request" in {e.name for e in finding.evidence}


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_compile", "gpu/gpu_idle_dataloader",
                                  "big_gpt_eager_20steps", "gpu/cpu_only"])
def test_silent_when_warm(load_facts, name):
    # gpu_idle_dataloader waits 13 ms for its data every step: steady, not a one-time set-up
    assert _findings(load_facts, name) == []


def test_a_cold_process_shows_untraced_set_up_a_warm_one_only_the_buffer_request(load_facts):
    # gpu/window_sync_*: the same single matmul_add call, profiled as the process's first (cold)
    # or after 3 un-profiled calls (warm)
    gaps = {}
    for variant in ("cold", "warm"):
        name = f"gpu/window_sync_{variant}"
        facts = load_facts(name)
        trace = facts.trace
        (finding,) = _findings(load_facts, name)
        region = _named(facts, "matmul_add")
        region = region[facts.is_host[region]][0]
        launch = _named(facts, "cuLaunchKernelEx")[0]
        assert finding.metrics["region"] == "matmul_add" and finding.evidence[0].step is None
        assert finding.metrics["gap_us"] == pytest.approx((trace.ts[launch] - trace.ts[region]) / 1000)
        buffer_request = _named(facts, "Activity Buffer Request")
        assert finding.metrics["recorded_us"] >= trace.dur[buffer_request].sum() / 1000
        gaps[variant] = finding.metrics
    # warm: the profiler's buffer request is most of the gap; cold: tens of ms nobody recorded
    assert gaps["warm"]["untraced_us"] < gaps["warm"]["recorded_us"]
    assert gaps["cold"]["untraced_us"] > 100 * gaps["warm"]["untraced_us"]
    assert gaps["cold"]["gap_us"] > 20 * gaps["warm"]["gap_us"]
