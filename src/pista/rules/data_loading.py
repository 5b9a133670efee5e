"""What:
A CPU-only step that spends a large part of its time getting its input: the DataLoader's
`enumerate(DataLoader)#..._DataLoaderIter.__next__` region torch records each step, in whatever
category (torch 1.8 writes it as an 'Operator'), or a record_function region named for data on word
boundaries (`data_loading`, `## data_load ##`, `dataset`, `collate`, `prefetch`; not
`DistributedDataParallel.forward` nor TorchRec's `## sparse_data_dist ##`, its all-to-all). With
`_SingleProcessDataLoaderIter` (num_workers=0) the loading runs in the training process itself;
many `aten::select` calls and a `aten::stack` inside it mean the batch is fetched sample by sample
(`Dataset.__getitem__` per index, then `default_collate`). Without a data region: a step that runs
hundreds of ops before its model's first layer (a GEMM, convolution, attention, recurrent or embedding
op), every step: the batch built op by op in the step, most likely sample by sample (a Python loop of
per-sample transforms, then `torch.stack`).

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
gpu/data_loading_batched reproduce it. gpu/input_prep_per_sample (a CNN on 32x32 images at batch 64,
each image padded, cropped, flipped, scaled and normalized on its own): 865 ops a step in 7.5 ms before
its first aten::conv2d; transforming the whole batch at once (gpu/input_prep_batched, 18 ops) saved 3.38
of 39.7 ms a step unprofiled; an expert review's cnn_peraug, 1,187 ops, 5.6 ms estimated, 5.2 ms measured.

Impact:
Per step, the data regions' host time (without one, the time from the step's start to the model's first
layer) over the profiler's inflation of host time
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
from pista.query import name_mask, nearest_ancestor
from pista.rules._common import PROFILER_HOST_INFLATION, data_regions, evidence, index_mask, outer_ops, us
from pista.timeline import Edit
from pista.trace.facts import merge_intervals

ID = "data-loading"
# The share of the data regions' host time a batched fetch (or a batched transform) keeps: one index and
# one copy per batch for hundreds of per-sample ops (gpu/data_loading_per_sample against its batched twin).
BATCHED_SHARE = 0.1
# torch's own marker for each batch a DataLoader yields; record_function regions named for data
DATALOADER = re.compile(r"^enumerate\(DataLoader\)#")
SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
# a batch fetched sample by sample: at least this many indexing ops per batch in the region (the review's
# TensorDataset: 2 per sample, 512 a batch of 256; batched indexing: 2 aten::index a batch)
PER_SAMPLE_MIN_SELECTS = 16
SAMPLE_OPS = frozenset({"aten::select"})
COLLATE_OPS = frozenset({"aten::stack"})
MIN_STEP_SHARE = WARNING_SHARE  # loading a few % of the step is normal work
EVIDENCE_REGIONS = 2  # the longest region calls; presentation
# Without a data region: the ops a step runs before its model's first layer (a GEMM, convolution, attention
# or recurrent op). gpu/input_prep_per_sample builds its batch in ~865 of them a step (64 images x ~13);
# every other CPU fixture runs at most 120 (a tokenised batch's embedding and masks), the batched twin 18.
FIRST_LAYER_OPS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear", "aten::baddbmm", "aten::einsum",
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::lstm", "aten::gru", "aten::rnn_tanh",
    "aten::scaled_dot_product_attention", "aten::embedding",
})
PREP_MIN_OPS = 256


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


class InputPrep(Record):
    """The batch built op by op in the step, before the model's first layer, outside any data region."""

    ops_per_step: float  # outermost ops before the first compute op
    prep_us_per_step: float  # from the step's start to that op, as profiled
    top_ops: tuple[str, ...]  # the most frequent of those ops
    first_compute: str  # the model's first layer op
    steps: int
    host_inflation: float


class PrepNote(Record):
    """Note on the first op of a step's input preparation, or on the model's first layer after it."""

    first_layer: bool
    ops: int


def check(ctx: Context) -> list[Finding]:
    facts = ctx.facts
    if facts.has_gpu:
        return []
    regions = data_regions(facts)
    if regions.size == 0:
        return _input_prep(ctx)
    trace = facts.trace
    host_ns = float(trace.dur[regions].sum())
    impact = ctx.per_step(host_ns / PROFILER_HOST_INFLATION)
    if impact.share < MIN_STEP_SHARE:
        return []
    steps = ctx.step_count
    region_of = nearest_ancestor(facts, index_mask(facts, regions))  # each event's data region, -1 outside
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
    return [Finding(ID, record, impact, ev, edit=Edit("whole batches", host_scale=((regions, BATCHED_SHARE),)))]


def _input_prep(ctx: Context) -> list[Finding]:
    """The batch built in the step before the model: many ops ahead of its first layer, every step."""
    facts = ctx.facts
    trace = facts.trace
    if not facts.steps:
        return []
    outer, _ = outer_ops(facts)
    first_layer = name_mask(facts, FIRST_LAYER_OPS)[outer]
    spans, counts = [], []
    prep: np.ndarray | None = None  # the first step's ops before its first layer, and that layer's op
    for step in facts.steps:
        mine = np.flatnonzero((trace.ts[outer] >= step.start) & (trace.ts[outer] < step.end))
        layer = mine[first_layer[mine]]
        if layer.size == 0:
            return []
        start = trace.ts[outer[layer[0]]]
        before = outer[mine[trace.ts[outer[mine]] < start]]
        spans.append(int(start) - step.start)
        counts.append(before.size)
        if prep is None:
            prep, layer_op = before, int(outer[layer[0]])
    steps = len(facts.steps)
    if min(counts) < PREP_MIN_OPS:
        return []
    impact = ctx.per_step(sum(spans) / PROFILER_HOST_INFLATION)
    if impact.share < MIN_STEP_SHARE:
        return []
    assert prep is not None  # set by the first step (facts.steps is not empty)
    names = Counter(trace.event_name(i) for i in prep.tolist())
    record = InputPrep(ops_per_step=sum(counts) / steps, prep_us_per_step=us(sum(spans)) / steps,
                       top_ops=tuple(n for n, _ in names.most_common(5)), first_compute=trace.event_name(layer_op),
                       steps=steps, host_inflation=PROFILER_HOST_INFLATION)
    ev = [evidence(facts, int(prep[0]), PrepNote(False, counts[0])), evidence(facts, layer_op, PrepNote(True, counts[0]))]
    spans_ = merge_intervals(np.array([s.start for s in facts.steps]), np.array([s.start + d for s, d in zip(facts.steps, spans, strict=True)]))
    return [Finding(ID, record, impact, ev, edit=Edit("batched input", host_scale_spans=((spans_, BATCHED_SHARE),)))]
