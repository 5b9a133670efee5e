## data-loading: the text of its findings, in English
title = The step waits for its input: data loading runs in the training process

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
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

where = { $where ->
    [single] the DataLoader, in the training process (num_workers=0)
    [workers] the DataLoader
   *[region] '{ $region }'
  }
Where = { $where ->
    [single] The DataLoader, in the training process (num_workers=0)
    [workers] The DataLoader
   *[region] '{ $region }'
  }
message = { $form ->
    [prep] Each step runs { $ops } ops ({ $top_ops }...) in { $prep_us } before its model's first layer
        ({ $first_compute }), outside any DataLoader: the batch is built op by op in the step, most likely sample
        by sample (a Python loop of per-sample transforms, then a stack). Without a GPU to overlap with, every µs
        of it is a µs of the step.
   *[loading] Each step spends { $region_us } of host time in { where } before it can compute{ $per_sample ->
            [yes] : { $selects } aten::select and { $stacks } aten::stack a step, the batch fetched sample by
                sample (Dataset.__getitem__ per index, then default_collate)
           *[no] {""}
        }. Without a GPU to overlap with, every µs of it is a µs of the step.
  }
advice = { $form ->
    [prep] Transform the whole batch at once (one pad, crop, flip and normalize on an N,C,H,W tensor:
        torchvision.transforms.v2 takes batches) instead of one sample at a time, or move the per-sample
        work into a Dataset's __getitem__ and load with DataLoader(num_workers>0), so it runs beside the
        step.
   *[loading] { $per_sample ->
        [yes] Fetch whole batches: for a TensorDataset, DataLoader(ds, sampler=BatchSampler(RandomSampler(ds),
            batch_size, drop_last=True), batch_size=None), or index the tensors with a permutation yourself: one
            indexing op a batch instead of one a sample and a stack. Where each sample needs real work,
            num_workers>0 loads the next batches while the step runs.
       *[no] { $where ->
            [workers] The DataLoader already loads in worker processes and the step still waits for it: the
                workers are slower than the step. Give them more (num_workers up to the free cores,
                prefetch_factor), check they are not starved of cores by the step's own threads
                (torch.set_num_threads), and make each sample cheaper (decode on the GPU, cache decoded data,
                batched transforms).
           *[other] Load the next batches while the step runs: num_workers>0 with persistent_workers=True (on
                cores the step's threads leave free), and make the per-sample work lighter or batched.
        }
    }
  }
fix = { $form ->
    [prep] The step builds its batch in { $ops } ops before { $first_compute }: transform the whole batch at once,
        or move the per-sample work into DataLoader workers.
   *[loading] { $per_sample ->
        [yes] The DataLoader fetches each batch sample by sample ({ $selects } aten::select a step): index whole
            batches (sampler=BatchSampler(...), batch_size=None).
       *[no] { $where ->
            [workers] { Where } takes { $region_us } a step though it has workers: more workers, or cheaper
                samples.
           *[other] { Where } takes { $region_us } a step: load in workers (num_workers>0).
        }
    }
  }
basis = { $form ->
    [prep] the host time from each step's start to its model's first layer, over { $inflation } for the
        profiler's inflation of host time; an upper bound (the batch must still be built)
   *[loading] the data regions' host time per step, over { $inflation } for the profiler's inflation of host
        time; an upper bound (the batch must still be built)
  }
prep-note = { $first_layer ->
    [yes] the model's first layer, after { $ops } ops building the batch
   *[no] the first of { $ops } ops building the batch
  }
region-note = { $has_selects ->
    [yes] a data region call, { $selects } aten::select in it
   *[no] a data region call
  }
