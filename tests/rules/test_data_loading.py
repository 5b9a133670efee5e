"""data-loading: a CPU-only step waiting for a DataLoader that fetches sample by sample."""

from __future__ import annotations

import pytest
import raw

from pista.i18n import localize_finding
from pista.rules._common import PROFILER_HOST_INFLATION

RULE = "data-loading"
MARKER = "enumerate(DataLoader)#"


def _regions(name: str) -> list[dict]:
    return [e for e in raw.in_steps(name, raw.complete(name, "user_annotation")) if e["name"].startswith(MARKER)]


def test_per_sample_fetch_is_named_with_its_cost(analysis_of):
    name = "gpu/data_loading_per_sample"
    finding = analysis_of(name).finding(RULE)
    regions = _regions(name)
    steps = len(raw.steps(name))
    assert finding is not None and len(regions) == steps
    r = finding.record
    assert r.dataloader and r.single_process and r.per_sample
    region_us = sum(float(e["dur"]) for e in regions) / steps
    assert r.region_us_per_step == pytest.approx(region_us, rel=0.01)
    assert finding.impact.us == pytest.approx(region_us / PROFILER_HOST_INFLATION, rel=0.01)
    # within a third of what fetching whole batches saved unprofiled (668 us a step, fixtures README)
    assert finding.impact.us == pytest.approx(668, rel=0.33)
    selects = [o for o in raw.complete(name, "cpu_op") if o["name"] == "aten::select"
               and any(raw.inside(g, o) for g in regions)]
    assert r.selects_per_step == pytest.approx(len(selects) / steps)
    assert "BatchSampler" in finding.fix and analysis_of(name).top_fix is finding


def test_many_calls_leaves_the_fetch_to_it(analysis_of):
    assert analysis_of("gpu/data_loading_per_sample").finding("many-calls") is None


@pytest.mark.parametrize("name", ["gpu/data_loading_batched", "gpu/gpu_idle_dataloader", "gpu/resnet_loader",
                                  "gpu/cpu_mlp", "big_gpt_eager_20steps"])
def test_silent_when_loading_is_small_or_a_gpu_hides_it(analysis_of, name):
    assert analysis_of(name).finding(RULE) is None


def test_spanish(analysis_of):
    es = localize_finding(analysis_of("gpu/data_loading_per_sample").finding(RULE), "es")
    assert "BatchSampler" in es.fix and "muestra a muestra" in es.message
