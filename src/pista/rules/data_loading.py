"""What:
A CPU-only step that spends a large part of its time getting its input: the DataLoader's
`enumerate(DataLoader)#..._DataLoaderIter.__next__` region torch records each step (or a
record_function region named for data: `data`, `dataset`, `collate`, `prefetch`). With
`_SingleProcessDataLoaderIter` (num_workers=0) the loading runs in the training process itself;
many `aten::select` calls and a `aten::stack` inside it mean the batch is fetched sample by sample
(`Dataset.__getitem__` per index, then `default_collate`).

Why:
Without a GPU to overlap with, every µs of loading is a µs of the step. A TensorDataset fetched one
index at a time pays an indexing op per sample and a stack per batch, where indexing the tensors with
the whole batch of indices is one op. With GPU work the same time shows as GPU idle, which gpu-idle
reports.

Example:
An expert review's tabular MLP (TensorDataset of 200k x 64, batch 256, Adam, one thread, this VM):
the DataLoader region took 1.75 ms of a 6.7 ms profiled step, 512 aten::select and 2 aten::stack a
step; fetching whole batches (`sampler=BatchSampler(RandomSampler(ds), 256)`, `batch_size=None`)
saved 0.62 ms of 3.91 ms a step unprofiled (15.8%). gpu/data_loading_per_sample and its twin
gpu/data_loading_batched reproduce it.

Impact:
Per step, the data regions' host time over the profiler's inflation of host time
(PROFILER_HOST_INFLATION: loading is many tiny ops, each recorded); an upper bound, since the batch
must still be built. many-calls leaves the calls inside these regions to this rule. Silent with a GPU
(gpu-idle's) and under WARNING_SHARE of the step: a few % of loading is normal.

Fix:
Fetch whole batches: for a TensorDataset, `DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
batch_size, drop_last=True), batch_size=None)` or index the tensors directly with a permutation; for
a Dataset with real per-sample work, `num_workers>0` (and `persistent_workers=True`) loads the next
batches while the step runs, on cores the step's threads leave free.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from pista.findings import WARNING_SHARE, Context, Finding, Record
from pista.rules._common import (
    PROFILER_HOST_INFLATION,
    evidence,
    name_mask,
    nearest_ancestor,
    pattern_mask,
    us,
)
from pista.trace.facts import Facts, per_facts

ID = "data-loading"
# torch's own marker for each batch a DataLoader yields; record_function regions named for data
DATALOADER = re.compile(r"^enumerate\(DataLoader\)#")
SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
DATA_REGION = re.compile(r"^enumerate\(DataLoader\)#|data|dataset|collate|prefetch", re.I)
# a batch fetched sample by sample: at least this many indexing ops per batch in the region (the review's
# TensorDataset: 2 per sample, 512 a batch of 256; batched indexing: 2 aten::index a batch)
PER_SAMPLE_MIN_SELECTS = 16
SAMPLE_OPS = frozenset({"aten::select"})
COLLATE_OPS = frozenset({"aten::stack"})
MIN_STEP_SHARE = WARNING_SHARE  # loading a few % of the step is normal work
EVIDENCE_REGIONS = 2  # the longest region calls; presentation


class DataLoading(Record):
    region: str  # the region that takes most of the time
    dataloader: bool  # torch's DataLoader marker (else a user region named for data)
    single_process: bool  # _SingleProcessDataLoaderIter: num_workers=0
    per_sample: bool  # indexing ops per batch: Dataset.__getitem__ per index, then default_collate
    selects_per_step: float
    stacks_per_step: float
    region_us_per_step: float  # the regions' host time, as profiled
    steps: int
    host_inflation: float


class RegionNote(Record):
    """Note on one data region call."""

    selects: int


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if facts.has_gpu:
        return []
    regions = data_regions(facts)
    if regions.size == 0:
        return []
    trace = facts.trace
    host_ns = float(trace.dur[regions].sum())
    impact = ctx.per_step(host_ns / PROFILER_HOST_INFLATION)
    if impact.share < MIN_STEP_SHARE:
        return []
    steps = ctx.step_count
    region_of = nearest_ancestor(facts, _mask(facts, regions))  # each event's data region, -1 outside
    ops = facts.is_host & trace.category_mask({"cpu_op"}) & (region_of >= 0)
    selects = np.flatnonzero(ops & name_mask(facts, SAMPLE_OPS))
    stacks = int((ops & name_mask(facts, COLLATE_OPS)).sum())
    ids, inverse = np.unique(trace.name[regions], return_inverse=True)
    name = trace.names[int(ids[np.argmax(np.bincount(inverse, weights=trace.dur[regions]))])]
    record = DataLoading(
        region=name, dataloader=bool(DATALOADER.match(name)), single_process=SINGLE_PROCESS in name,
        per_sample=selects.size >= PER_SAMPLE_MIN_SELECTS * regions.size, selects_per_step=selects.size / steps,
        stacks_per_step=stacks / steps, region_us_per_step=us(host_ns) / steps, steps=steps,
        host_inflation=PROFILER_HOST_INFLATION)
    per_region = Counter(region_of[selects].tolist())
    longest = regions[np.argsort(-trace.dur[regions], kind="stable")[:EVIDENCE_REGIONS]]
    ev = [evidence(facts, int(r), RegionNote(per_region.get(int(r), 0))) for r in longest.tolist()]
    return [Finding(ID, record, impact, ev)]


def _mask(facts: Facts, idx: np.ndarray) -> np.ndarray:
    mask = np.zeros(len(facts.trace), dtype=bool)
    mask[idx] = True
    return mask


@per_facts
def data_regions(facts: Facts) -> np.ndarray:
    """The outermost data regions in the steps (user annotations: the DataLoader's marker, regions
    named for data), in time order."""
    trace = facts.trace
    mask = facts.is_host & trace.category_mask({"user_annotation"}) & pattern_mask(facts, DATA_REGION)
    if facts.steps:
        mask &= facts.event_step >= 0
    idx = np.flatnonzero(mask & (nearest_ancestor(facts, mask, inclusive=False) < 0))
    return idx[np.argsort(trace.ts[idx], kind="stable")].astype(np.int64)
