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


FIRST_LAYER = ("aten::conv2d", "aten::linear", "aten::addmm", "aten::mm", "aten::matmul", "aten::embedding")


def _before_first_layer(name: str) -> list[tuple[int, float]]:
    """Per step: the outermost ops before its first layer op, and the µs from the step's start to it."""
    ops = [e for e in raw.complete(name, "cpu_op")]
    out = []
    for s in raw.steps(name):
        mine = sorted((e for e in ops if raw.inside(s, e) and e["tid"] == s["tid"]), key=lambda e: e["ts"])
        outer = [e for e in mine if not any(o is not e and raw.inside(o, e) for o in mine if o["ts"] <= e["ts"])]
        first = next(e for e in outer if e["name"] in FIRST_LAYER)
        out.append((sum(1 for e in outer if e["ts"] < first["ts"]), float(first["ts"]) - float(s["ts"])))
    return out


def test_a_batch_built_sample_by_sample_before_the_model_is_named(analysis_of):
    name = "gpu/input_prep_per_sample"
    finding = analysis_of(name).finding(RULE)
    per_step = _before_first_layer(name)
    r = finding.record
    assert r.first_compute == "aten::conv2d"
    assert r.ops_per_step == pytest.approx(sum(n for n, _ in per_step) / len(per_step))
    prep_us = sum(us for _, us in per_step) / len(per_step)
    assert r.prep_us_per_step == pytest.approx(prep_us, rel=0.01)
    assert finding.impact.us == pytest.approx(prep_us / PROFILER_HOST_INFLATION, rel=0.01)
    # within a fifth of what transforming the whole batch saved unprofiled (3.38 ms, fixtures README)
    assert finding.impact.us == pytest.approx(3380, rel=0.2)
    assert "whole batch" in finding.fix and analysis_of(name).top_fix is finding
    assert all(n < 64 for n, _ in _before_first_layer("gpu/input_prep_batched"))
    assert analysis_of("gpu/input_prep_batched").finding(RULE) is None


# -- data regions on word boundaries, frameworks' names left out (review 2: TorchRec's '## sparse_data_dist ##'
# read as the DataLoader, 'load in workers') -----------------------------------------------------------------

@pytest.mark.parametrize(("region", "data", "loading"), [
    ("data_loading", True, True), ("## data_load ##", True, True), ("my_dataset", True, True),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", True, True),
    ("## load_batch ##", False, True), ("## copy_batch_to_gpu ##", False, True), ("get_batch", False, True),
    ("slow_input", False, True),
    ("DistributedDataParallel.forward", False, False), ("BatchNorm affine=False", False, False),
    ("## sparse_data_dist ##", False, False), ("## wait_sparse_data_dist ##", False, False),
    ("## all2all_tw_data:init ##", False, False), ("metadata", False, False),
    ("FullyShardedDataParallel.forward", False, False), ("update", False, False),
])
def test_a_region_is_named_for_data_on_word_boundaries(region, data, loading):
    """DATA_REGION (data-loading's regions) and the wider LOADER_REGION (the host-time header's data, gpu-idle's
    input): words bounded by anything but a letter, frameworks' names left out."""
    from pista.query import DATA_REGION, LOADER_REGION

    assert bool(DATA_REGION.search(region)) is data
    assert bool(LOADER_REGION.search(region)) is loading


def test_torchrecs_sparse_feature_distribution_is_not_data_loading(analysis_of):
    """hta_distinfo_missing (its GPU records missing: a CPU-only reading): '## sparse_data_dist ##' is TorchRec's
    all-to-all of sparse features (its nccl:all_to_all calls inside), not a DataLoader."""
    name = "foreign/hta_distinfo_missing"
    dist = raw.complete(name, "user_annotation", "## sparse_data_dist ##")
    inside = [e for e in raw.complete(name) if e["name"].startswith(("nccl:all_to_all", "record_param_comms"))
              and any(raw.inside(d, e) for d in dist)]
    assert dist and inside
    analysis = analysis_of(name)
    assert analysis.finding(RULE) is None
    # what is named for data there is the pipeline's own '## load_batch ##', a millisecond
    load = raw.complete(name, "user_annotation", "## load_batch ##")
    (times,) = analysis.summary.host_time_by_region.values()
    assert times["data"] == pytest.approx(sum(float(e["dur"]) for e in load), rel=0.2)
