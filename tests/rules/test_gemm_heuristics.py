from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES
from torch_table import parse_table

from pista.findings import analyze
from pista.rules.gemm_heuristics import ID


def _findings(load_facts, name):
    return analyze(load_facts(name), rules=[ID]).findings


def test_fires_on_the_cold_cublas_gemm(load_facts):
    facts = load_facts("seed_mm64_cold")
    trace = facts.trace
    (finding,) = _findings(load_facts, "seed_mm64_cold")
    # torch's table: cudaOccupancyMaxActiveClusters x30, ...AvailableDynamicSMemPerBlock x1,
    # ...MaxActiveBlocksPerMultiprocessorWithFlags x1
    rows = [r for r in parse_table(FIXTURES / "seed_mm64_cold.table.txt").rows if r.name.startswith("cudaOccupancy")]
    assert finding.metrics["queries"] == sum(r.calls for r in rows) == 32
    assert finding.metrics["query_us"] == pytest.approx(sum(r.self_cpu_us for r in rows), abs=0.01)
    assert finding.metrics["kernels"] == {"nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT": 1}
    assert finding.metrics["steps"] == [0]
    first_query, launch, kernel = finding.evidence[:3]
    assert first_query.name.startswith("cudaOccupancy") and first_query.step == 0
    # the launch is the GEMM's cuLaunchKernelEx of step 0, not the add's cudaLaunchKernel
    launches = np.flatnonzero(trace.name_array[trace.name] == "cuLaunchKernelEx")
    step0 = launches[np.argmin(trace.ts[launches])]
    assert (launch.name, launch.step, launch.ts_us) == ("cuLaunchKernelEx", 0, trace.ts[step0] / 1000)
    assert kernel.name == "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT" and kernel.step == 0


def test_fires_every_step_on_the_embedding_backward(load_facts):
    (finding,) = _findings(load_facts, "big_gpt_eager_20steps")
    assert finding.metrics["queries"] == 40
    assert finding.metrics["steps"] == list(range(2, 22))


@pytest.mark.parametrize("name", ["seed_mm64_warm", "seed_mm4096_compile", "seed_mm4096_compile_cold",
                                  "gpu/cpu_only"])
def test_silent_without_occupancy_queries(load_facts, name):
    assert _findings(load_facts, name) == []
