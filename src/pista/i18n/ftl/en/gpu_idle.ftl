## gpu-idle: the text of its findings, in English
title = The GPU idles under a region that launches almost nothing

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    GPU idle inside the steps under a record_function region that runs for milliseconds and launches
    (almost) nothing: the host building a batch on the CPU, a `DataLoader`'s `__next__`, I/O, a sleep,
    checkpointing. The rule names the region, how long each call takes and what it launches, and the
    host ops with the most self time in that idle.

    Why:
    The GPU can only be as busy as the host keeps it. The short gaps between the launches of a loop of
    ops are per-op overhead (`overhead-bound`, `launch-bound`, `many-calls` share them out); here the
    host stops feeding the GPU altogether to do something else, and no amount of fusing or CUDA graphs
    recovers that time: the work has to move off the GPU's path (workers, prefetching, the GPU).

    Example:
    gpu/gpu_idle_dataloader on an H200: each step builds a batch on the CPU (`aten::randn`,
    normalisation, a 4 ms sleep) inside `data_loading`, then runs a bf16 MLP forward (0.75 ms of GPU
    time per step). `data_loading` lasts 13.0-14.7 ms per step with one launch (its H2D copy); the GPU
    is idle under it 13.4 ms per step, 87% of the 15.4 ms median step (critical, and the top fix).

    Impact:
    Per step: the GPU idle (no kernel, copy or memset on the busiest device) inside the steps under
    those regions, by interval arithmetic on the trace, so each ns is counted once: the idle after a
    sync until the next device work is the sync's (host-sync, trailing-sync, pageable-memcpy: 0.8 ms
    per step of gpu_idle_dataloader's, after its pageable copy's stream sync), and the idle between
    the launches of ops is per-op overhead, never this rule's. What moving the work off the GPU's path
    would save at most (upper bound: a loader in workers still costs the copy). The other specific
    causes of idle are other rules' findings and are left to them, so the same idle is never reported
    twice: torch.compile compiling (recompilation: gpu/recompile's 292 ms per step), one-time set-up in
    a first call (cold-start, dead-window, lazy-loading: seed_mm64_cold's first `matmul_add`, 137.8 ms)
    and the profiler's buffer requests (profiler-overhead). The GPU-idle ledger (`_idle`) marks all of them,
    and overhead-bound leaves them out too. Before, the rule reported every gap of 1 ms or more as one
    warning without an impact, whatever filled it, restating those rules.

    Each region is read from its own name and ops, and the advice follows: input (the DataLoader's
    marker, a region named for data on word boundaries, or one whose idle holds host work, copies and no
    compute op), the optimizer's step (named for it, or mostly under `Optimizer.step#` and foreach/fused
    ops: hta_nccl_data's and hta_sampled_rank0's '## optimizer ##', told "load in DataLoader workers"
    before), start-up (the calls that start CUDA up, or a window's one-off region before the GPU's first
    work: damaged_fields' '[param|cuda]'), a wait on a collective (most of its idle ends where a collective
    queued before that idle starts: hta_negq_rank0's '## KJTAllToAllSplitsAwaitable wait() ##', TorchRec
    reading back its all-to-all's split sizes, told "load in DataLoader workers" before), or the model's own
    ops on the host. The idle under the
    optimizer steps unfused-optimizer reports is its finding, priced from a measured fused pair, and left
    out here.

    Fix:
    Input: take the work off the GPU's critical path: `DataLoader(num_workers>0, pin_memory=True)` with
    prefetching, so batch N+1 is ready while the GPU runs batch N; copy with `non_blocking=True` from
    pinned memory; build the data on the GPU; move checkpointing and logging out of the step or to a
    thread. The optimizer: unfused-optimizer's remedies for the mode its ops show (`fused=True` for Adam,
    AdamW and SGD; foreach or a compiled step for a per-parameter one), none where it already runs fused
    or foreach with no fused version. Start-up: profile after a warm-up. A collective: overlap it with
    compute (launch it earlier or asynchronously, TorchRec's pipelined input distribution) and compare the
    ranks, since the last to arrive sets the wait. The model's ops on the host:
    find where they run (`with_stack=True`) and move them to the GPU.

step-word = { $step ->
    [step] step
   *[window] window
  }
of = { $step ->
    [step] the { $step_us } median step
   *[window] the { $step_us } window
  }
launches = { $launches ->
    [yes] launches { $launches_per_call } kernel(s) or copies
   *[no] launches nothing
  }
optimizer = { $has_optimizer ->
    [yes] { $optimizer }
   *[no] the optimizer
  }
reading = { $kind ->
    [optimizer] the optimizer's step: { optimizer }{ $mode ->
        [fused] , fused
        [foreach] , foreach
        [per-parameter] , per parameter
       *[none] {""}
      };{" "}
    [start-up] start-up;{" "}
    [host] the model's own ops on the host;{" "}
    [collective] waiting on a collective: { $collective };{" "}
   *[input] {""}
  }
region-item = '{ $name }' ({ reading }{ $many_calls ->
    [yes] { $calls } calls of { $host_us }
   *[no] one call of { $host_us }
  }, each { launches }): { $idle_us } per { step-word }
message = The GPU is idle { $idle_us } per { step-word } ({ $share } of { of }); { $claimed_us } per { step-word }
    of it is under regions that launch almost nothing{ $all_collective ->
        [yes] :{" "}
       *[no] , so the host is doing something other than feeding the GPU:{" "}
    }{ $regions }. The longest stretch lasts { $longest_us }{ $has_ops ->
        [yes] ; per step, most host self time in this idle: { $ops }
       *[no] {""}
    }{ $no_op ->
        [yes] ; { $no_op_us } per { step-word } in no recorded op at all (Python, file or network I/O, sleeping:
            with_stack=True names the code)
       *[no] {""}
    }.
remedy = { $remedy ->
    [already] { optimizer } already runs { $mode }, so there is no faster mode to switch to: what holds the GPU is
        the host code around its kernels (gradient clipping, schedulers, per-parameter bookkeeping); record with
        with_stack=True to see it
    [fused] torch.optim.{ $optimizer }(..., fused=True) runs the update as one kernel with a couple of host ops
        instead of an op and a launch per parameter and pass
    [foreach] pass foreach=True if it takes it, or compile its step (torch.compile(opt.step)), so the update is a
        few kernels over all parameters instead of an op per parameter
   *[unknown] its ops are not in the trace; if { optimizer } updates the parameters one by one, compile its step
        (torch.compile(opt.step)) or give it a foreach implementation; with_stack=True names its code
  }
Remedy = { $remedy ->
    [already] { $has_optimizer ->
            [yes] { $optimizer_cap }
           *[no] The optimizer
        } already runs { $mode }, so there is no faster mode to switch to: what holds the GPU is
        the host code around its kernels (gradient clipping, schedulers, per-parameter bookkeeping); record with
        with_stack=True to see it
    [fused] Torch.optim.{ $optimizer }(..., fused=True) runs the update as one kernel with a couple of host ops
        instead of an op and a launch per parameter and pass
    [foreach] Pass foreach=True if it takes it, or compile its step (torch.compile(opt.step)), so the update is a
        few kernels over all parameters instead of an op per parameter
   *[unknown] Its ops are not in the trace; if { optimizer } updates the parameters one by one, compile its step
        (torch.compile(opt.step)) or give it a foreach implementation; with_stack=True names its code
  }
advice = { $kind ->
    [optimizer] '{ $name }' is the optimizer's step ({ optimizer }), not input: its host time is the GPU's idle.
        { Remedy }.
    [start-up] '{ $name }' is start-up, not input: it runs once, before the GPU's first work or in the calls that
        start CUDA up (the context, cuBLAS/cuDNN handles, building the model and its data), not in the steady
        state. Run one iteration before profiling, or profile with torch.profiler.schedule(wait=1, warmup=1,
        active=N), to read the steps.
    [collective] '{ $name }' waits on a collective, not on input: the GPU's next work there is what { $collective }
        launched, queued before the idle began and run only as it ends, so the GPU waits for the other ranks
        (or a stream the collective depends on) and the host for its result. Overlap the collective with
        compute: launch it earlier or asynchronously and wait only where its result is needed (TorchRec's
        TrainPipelineSparseDist runs the next batch's input all-to-all during this batch), and compare the
        ranks' traces at this point: the last rank to arrive sets the wait.
    [host] '{ $name }' runs the model's own ops on the host (compute ops or autograd nodes) and launches
        almost nothing while the GPU waits: check where they run (tensors left on the CPU, a thread the
        step waits for); record with_stack=True to see its code, then move that work to the GPU or off the
        step.
   *[input] { $workers ->
        [yes] '{ $name }' already loads in worker processes, and the GPU still waits for it: the
            workers are slower than the step. Give them more (num_workers up to the free cores, prefetch_factor,
            persistent_workers=True), keep the step's threads off their cores, and make each sample cheaper
            (decode on the GPU, cache decoded data, batched transforms).
       *[no] '{ $name }' is input work on the GPU's critical path: load in DataLoader workers
            (num_workers>0, pin_memory=True, prefetching) so the next batch is ready while the GPU runs this one,
            copy with non_blocking=True, or build the data on the GPU; move checkpointing and logging out of the
            step or to a thread.
    }
  }
fix = { $kind ->
    [optimizer] { $name } takes { $host_us } of { of } with the GPU idle: it is the optimizer's step: { $fix_fused ->
        [yes] torch.optim.{ $optimizer }(..., fused=True)
       *[no] { remedy }
      }
    [start-up] { $name } takes { $host_us } of { of } once, before the GPU's work: start-up, profile
        after a warm-up
    [collective] { $name } waits { $host_us } a call on { $collective } with the GPU idle: overlap the
        collective with compute and compare the ranks
    [host] { $name } takes { $host_us } of { of } running the model's ops on the host: record
        with_stack=True and move that work to the GPU
   *[input] { $workers ->
        [yes] { $name } takes { $host_us } of { of } though it has workers: more workers, cheaper samples
       *[no] { $name } takes { $host_us } of { of } and { launches }: load in DataLoader workers
            (num_workers>0, pin_memory=True)
    }
  }
basis = GPU idle inside the steps under regions that launch almost nothing, per step, without the idle after
    syncs (other findings'); upper bound
idle-gap = GPU idle for { $idle_us } under a region that launches almost nothing
under-region = { $idle_us } of GPU idle under this call, { $launches } launch(es) in it
self-time = { $self_us } per step of this op's host self time inside the idle
