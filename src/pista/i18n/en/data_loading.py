"""data-loading in English."""

from __future__ import annotations

from pista.i18n._fmt import t
from pista.rules.data_loading import DataLoading, InputPrep, PrepNote, RegionNote

TITLE = "The step waits for its input: data loading runs in the training process"


def _where(r: DataLoading) -> str:
    if r.dataloader:
        return "the DataLoader, in the training process (num_workers=0)" if r.single_process else "the DataLoader"
    return f"'{r.region}'"


def message(r: DataLoading | InputPrep) -> str:
    if isinstance(r, InputPrep):
        return (f"Each step runs {r.ops_per_step:.0f} ops ({', '.join(r.top_ops)}...) in {t(r.prep_us_per_step)} "
                f"before its model's first layer ({r.first_compute}), outside any DataLoader: the batch is built op "
                "by op in the step, most likely sample by sample (a Python loop of per-sample transforms, then a "
                "stack). Without a GPU to overlap with, every µs of it is a µs of the step.")
    text = f"Each step spends {t(r.region_us_per_step)} of host time in {_where(r)} before it can compute"
    if r.per_sample:
        text += (f": {r.selects_per_step:.0f} aten::select and {r.stacks_per_step:.0f} aten::stack a step, the batch "
                 "fetched sample by sample (Dataset.__getitem__ per index, then default_collate)")
    return text + ". Without a GPU to overlap with, every µs of it is a µs of the step."


def advice(r: DataLoading | InputPrep) -> str:
    if isinstance(r, InputPrep):
        return ("Transform the whole batch at once (one pad, crop, flip and normalize on an N,C,H,W tensor: "
                "torchvision.transforms.v2 takes batches) instead of one sample at a time, or move the per-sample "
                "work into a Dataset's __getitem__ and load with DataLoader(num_workers>0), so it runs beside the "
                "step.")
    if r.per_sample:
        return ("Fetch whole batches: for a TensorDataset, DataLoader(ds, sampler=BatchSampler(RandomSampler(ds), "
                "batch_size, drop_last=True), batch_size=None), or index the tensors with a permutation yourself: one "
                "indexing op a batch instead of one a sample and a stack. Where each sample needs real work, "
                "num_workers>0 loads the next batches while the step runs.")
    if r.dataloader and not r.single_process:
        return ("The DataLoader already loads in worker processes and the step still waits for it: the workers are "
                "slower than the step. Give them more (num_workers up to the free cores, prefetch_factor), check they "
                "are not starved of cores by the step's own threads (torch.set_num_threads), and make each sample "
                "cheaper (decode on the GPU, cache decoded data, batched transforms).")
    return ("Load the next batches while the step runs: num_workers>0 with persistent_workers=True (on cores the "
            "step's threads leave free), and make the per-sample work lighter or batched.")


def fix(r: DataLoading | InputPrep) -> str:
    if isinstance(r, InputPrep):
        return (f"The step builds its batch in {r.ops_per_step:.0f} ops before {r.first_compute}: transform the "
                "whole batch at once, or move the per-sample work into DataLoader workers.")
    if r.per_sample:
        return (f"The DataLoader fetches each batch sample by sample ({r.selects_per_step:.0f} aten::select a step): "
                "index whole batches (sampler=BatchSampler(...), batch_size=None).")
    if r.dataloader and not r.single_process:
        return (f"{_where(r)[0].upper() + _where(r)[1:]} takes {t(r.region_us_per_step)} a step though it has workers: "
                "more workers, or cheaper samples.")
    return f"{_where(r)[0].upper() + _where(r)[1:]} takes {t(r.region_us_per_step)} a step: load in workers (num_workers>0)."


def basis(r: DataLoading | InputPrep) -> str:
    if isinstance(r, InputPrep):
        return (f"the host time from each step's start to its model's first layer, over {r.host_inflation:.0f} for "
                "the profiler's inflation of host time; an upper bound (the batch must still be built)")
    return (f"the data regions' host time per step, over {r.host_inflation:.0f} for the profiler's inflation of host "
            "time; an upper bound (the batch must still be built)")


NOTES = {
    PrepNote: lambda n: (f"the model's first layer, after {n.ops} ops building the batch" if n.first_layer
                         else f"the first of {n.ops} ops building the batch"),
    RegionNote: lambda n: f"a data region call, {n.selects} aten::select in it" if n.selects else "a data region call",
}
