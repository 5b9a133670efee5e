from __future__ import annotations

import gzip
import json

import pytest
import raw
from conftest import fixture

GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm")


def _gemm_self_us_per_step(name: str) -> float:
    calls = raw.in_steps(name, [e for e in raw.complete(name, "cpu_op") if e["name"] in GEMMS])
    return sum(raw.self_us(name, e) for e in calls) / len(raw.steps(name))


def test_fires_on_one_thread_of_two_cores(analysis_of):
    name = "gpu/cpu_linear_1thread"
    with gzip.open(fixture(name)) as fh:
        host = json.load(fh)["pista_host"]
    assert (host["intra_op_threads"], host["cores"]) == (1, 2)
    finding = analysis_of(name).finding("cpu-threads")
    assert finding is not None and (finding.record.threads, finding.record.cores) == (1, 2)
    expected = _gemm_self_us_per_step(name) * (1 - 1 / 2)
    assert finding.impact.us == pytest.approx(expected, rel=0.01)
    assert "set_num_threads(2)" in finding.fix


def test_the_two_thread_twin_runs_the_gemms_faster():
    # the linear scaling the impact assumes, on the fixtures themselves: 2 threads vs 1
    one, two = _gemm_self_us_per_step("gpu/cpu_linear_1thread"), _gemm_self_us_per_step("gpu/cpu_linear_host")
    assert one / two >= 1.5


@pytest.mark.parametrize("name", ["gpu/cpu_linear_host", "gpu/cpu_mlp", "gpu/cpu_linear", "gpu/cpu_only",
                                  "seed_mm64_warm"])
def test_silent_with_every_core_or_without_host_facts(analysis_of, name):
    assert analysis_of(name).finding("cpu-threads") is None
