"""The data-loading rule's detection. What it finds, why, an example, its impact and the fix (`pista explain
data-loading`) are its docs, with the text of its findings, in pista/i18n/ftl/<lang>/data_loading.ftl."""

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
