## exposed-communication: the text of its findings, in English
title = Exposed communication: steps wait for collectives

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The step waits on communication: collectives (NCCL kernels on the GPU, gloo's all-reduce on the
    CPU) run while nothing else does, so their time adds straight onto the step instead of hiding
    behind the backward pass or other compute.

    Why:
    Data-parallel training overlaps the all-reduce of one gradient bucket with the backward of the
    next; only what is left when compute runs out is paid for. Exposed communication grows with the
    number of ranks and the model size, and it is also where ranks wait for a slower peer, so it is
    often the first place scaling efficiency goes.

    Example:
    Two gloo ranks training a 4-layer 256-wide MLP with DDP (0.25 MB buckets) on the CPU: each step's
    all-reduces overlap backward for only part of their time, and the main thread waits for the rest
    (tests/fixtures/gloo/balanced_2). With a slowed peer (straggler_2), the waiting rank's exposed
    communication is most of its step.

    Impact:
    Per step: the communication work during which no compute runs (on the GPU, no other kernel or
    copy; on gloo's threads, no op of the compute threads), summed over the steps and divided by their
    number; share of the median step. An upper bound: the last bucket's all-reduce always ends the
    backward alone. Over a folder (`{"pista analyze DIR"}`), the part that is this rank waiting for a late
    peer is the straggler's impact, not this one's: it is taken out here, and the finding stays only if
    what is left still passes the thresholds. Before, the rule reported the median share and a fixed
    warning. balanced_2: 2.6 ms of a 6.7 ms step on rank 0 (38%), 5.6 of 9.8 ms on rank 1 (57%);
    straggler_2 rank 0 alone 36.4 of 39.4 ms (92%), of which 31.9 ms is its wait for rank 1 (in the
    folder: 4.6 ms, 12%, warning).

    The advice follows the collective that exposes the most, read from the trace: the work's own
    'Collective name' argument, else the host call that launched it (`nccl:all_to_all`, `c10d::alltoall_base_`,
    `record_param_comms`' 'Collective name'), else the kernel's name (AllReduce, AllGather, ReduceScatter,
    Broadcast; SendRecv alone says nothing: NCCL 2.1x runs every collective of hta_negq_rank0 as
    `ncclKernel_SendRecv`). Before, every exposure got DDP's all-reduce advice, TorchRec's all-to-all of
    embeddings included (hta_diff_control: 42 `nccl:all_to_all`; hta_negq_rank0, hta_sampled_rank0:
    `c10d::alltoall_base_`).

    Fix:
    Give communication compute to hide behind. An all-reduce (DDP's gradients): tune DDP's
    `bucket_cap_mb` so buckets start earlier, keep `gradient_as_bucket_view=True`, accumulate gradients
    over several micro-batches under `no_sync()`, shard with FSDP/ZeRO and prefetch, or compress
    gradients (DDP comm hooks). An all-to-all (TorchRec's input and embedding distribution, a mixture of
    experts' tokens): overlap it with the previous batch's compute (TorchRec's `TrainPipelineSparseDist`
    runs the next batch's input distribution during this one's forward and backward), and check the ranks
    for imbalance (a rank with more ids or tokens makes every other wait). All-gather and reduce-scatter
    (FSDP's parameters and gradients): prefetch (`forward_prefetch=True`,
    `backward_prefetch=BackwardPrefetch.BACKWARD_PRE`; FSDP2 `set_modules_to_forward_prefetch`) and wrap in
    fewer, larger units. If a peer is late (see `straggler`), fix that rank first: the wait is its lateness.

    Whose all-gather or reduce-scatter it is, is read from the trace too (review 4): FSDP's own markers
    (`FSDP::` regions, `FullyShardedDataParallel`) mean FSDP's parameters and gradients; a collective launched
    under DTensor's `Redistribute` (or a functional collective, `_c10d_functional::`, in a window with no
    backward) with no FSDP marker is tensor or sequence parallelism moving activations, whose advice is other:
    send them in bf16 (half the bytes), keep to the fewest collectives (sequence parallelism needs one all-gather
    and one reduce-scatter per attention and per MLP block), overlap them (async tensor parallelism), or do not
    shard a model that fits one GPU
    (tokenomics' rtx4090_tp2_llama_dim1024: a 4-layer LLaMA forward on 2 RTX 4090s, 39 Redistribute calls, fp32
    reduce-scatters of [4096, 8, 1024] activations, 313 ms of 370 ms of GPU time; FSDP's prefetch advice before).
    Two calls are not what they seem and are told apart: the first call of a collective in the window, far
    slower than its later calls, is its one-time set-up (NCCL connecting to its peers), left out of the impact
    (dim1024's first reduce-scatter, 59.7 ms against a 13.7 ms median); a call far longer than the other calls of
    its collective waits for another rank to arrive (rtx4090_tp2_llama_annot: one all-gather of 442 ms against a
    3.6 ms median, 441 of its 551 ms exposed), which this rank's trace cannot explain: compare the ranks.

kind-item = { $kind } { $us }
mib-item = { $mib } MiB a call
moved = { $has_moved ->
    [yes] {" "}({ $moved })
   *[no] {""}
  }
late = { $has_late ->
    [yes] {" "}{ $late_wait_us } of it is this rank waiting for rank { $late_rank }, which comes late (see straggler);
        { $own_exposed_us } is its own.
   *[no] {""}
  }
role = { $tp ->
    [yes] {" "}They move tensor or sequence parallelism's activations{ moved }: DTensor redistributes
        { $redistributes } time(s) a step{ $forward_only ->
            [yes] , in a forward with no backward
           *[no] {""}
        }, and no FSDP marker is in the trace.
   *[no] {""}
  }
wait-what = { $wait_has_kind ->
    [yes] { $wait_kind } call
   *[no] call
  }
wait = { $has_wait ->
    [yes] {" "}{ $wait_many ->
            [yes] { $wait_calls } { wait-what }s take up to
           *[no] One { wait-what } takes
        } { $wait_dur_us } against a { $wait_median_us } median of the collective's { $wait_siblings } calls:
        { $wait_exposed_us } a step of waiting for another rank to arrive, not transfer time; this rank's trace cannot
        say why the other was late.
   *[no] {""}
  }
setup = { $has_setup ->
    [yes] {" "}Left out: { $setup_us } in the window's first calls of its collectives, up to { $setup_ratio }x their
        later calls' median: one-time set-up (NCCL connecting to its peers, each rank's first pass).
   *[no] {""}
  }
message = { $exposed_us } of communication per step runs with no compute beside it: { $share } of a { $step_us } step.
    Of { $comm_us } of collectives per step { $domain ->
        [gpu] on the GPU
       *[host] on gloo's threads
    } ({ $collectives } events in { $steps } step(s)), { $overlap } overlap compute; { $collective } exposes the
    most.{ $many_kinds ->
        [yes] {" "}By collective, per step: { $kinds }.
       *[no] {""}
    }{ late }{ role }{ wait }{ setup }
shard-prefetch = prefetch the next unit's parameters while this one computes (FSDP forward_prefetch=True and
    backward_prefetch=BackwardPrefetch.BACKWARD_PRE; FSDP2 set_modules_to_forward_prefetch and
    set_modules_to_backward_prefetch)
own-advice = { $own_case ->
    [all_to_all] this all-to-all ({ $collective }) is TorchRec's input and embedding distribution or a mixture of
        experts' token exchange, not a gradient all-reduce, so DDP's bucket settings do not touch it: overlap it with
        compute by pipelining the input distribution, so the next batch's all-to-all runs during this batch's forward
        and backward (TorchRec's TrainPipelineSparseDist), and compare the ranks: a rank with more ids or tokens to
        send makes every other wait
    [fsdp] this { $kind_name } ({ $collective }) moves FSDP's or ZeRO's parameters and gradients: { shard-prefetch },
        and wrap fewer, larger units so each collective moves more
    [broadcast] this broadcast ({ $collective }): if it is DDP's buffers (batch norm's statistics) sent at every
        forward, set broadcast_buffers=False where the ranks keep them in step (or use SyncBatchNorm); otherwise issue
        it with async_op=True and wait for it only where its result is needed
    [tp] these collectives ({ $collective }) are tensor or sequence parallelism's activations{ moved }, not FSDP's
        parameters, and each layer waits for them: { $bf16 ->
            [yes] send them in bf16 (run the model in bf16, or cast the activations the parallel styles redistribute:
                half the bytes),{" "}
           *[no] {""}
        }keep to the fewest collectives (sequence parallelism needs one all-gather and one reduce-scatter per attention
        and per MLP block; more come from input or output layouts that replicate in between), overlap them with compute
        (async tensor parallelism: torch.compile with torch._inductor.config._micro_pipeline_tp = True), or, if the
        model fits on one GPU, do not shard it: run a whole copy on each GPU
    [shard] if this { $kind_name } ({ $collective }) moves FSDP's or ZeRO's parameters and gradients (the trace has no
        FSDP marker to say so), { shard-prefetch } and wrap fewer, larger units; if it moves tensor parallelism's
        activations, send them in bf16 and overlap them (async tensor parallelism)
    [gpu] let { $collective } overlap the backward: tune DDP's bucket_cap_mb so the first buckets start while backward
        still runs, keep gradient_as_bucket_view=True, accumulate gradients under no_sync() to all-reduce once every N
        micro-batches, or shard with FSDP and prefetch
   *[host] { $collective } runs on gloo's CPU threads beside the compute it should hide behind ({ $overlap }
        overlapped): accumulate gradients under no_sync() to all-reduce once every N steps, use bigger buckets
        (bucket_cap_mb) for fewer, larger messages, or train on GPUs with NCCL
  }
advice = { $advice_case ->
    [late] Rank { $late_rank } comes late and this rank waits { $late_wait_us } per step for it: fix that rank first
        (see straggler). For the other { $own_exposed_us }, { own-advice }.
    [wait] First compare the ranks: { $wait_exposed_us } a step is a call waiting for another rank, which overlap or
        smaller messages cannot shorten; run pista analyze on the folder of every rank's trace, or look at what the
        other ranks do at that time, and make the late one arrive on time. For the rest, { own-advice }.
   *[own] { $own_cap }.
  }
fix-own = { $fix_case ->
    [tp] tensor-parallel activations: send them in bf16, keep to the fewest collectives, overlap them (async TP), or
        do not shard a model that fits one GPU
    [shard] if FSDP's, prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch); if tensor
        parallelism's activations, send them in bf16 and overlap them (async TP)
    [all_to_all] pipeline the input distribution (TorchRec's TrainPipelineSparseDist) and check the ranks' balance
    [all_gather] prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)
    [reduce_scatter] prefetch the next unit's parameters (FSDP forward_prefetch, backward_prefetch)
    [broadcast] broadcast_buffers=False if it is DDP's buffers, else async_op=True
   *[all_reduce] accumulate gradients under no_sync() to all-reduce once every N steps, and tune DDP's bucket_cap_mb
        so buckets start during backward
  }
fix = { $has_late ->
    [yes] { $collective } exposes { $own_exposed_us } per step of its own besides waiting for rank { $late_rank }: fix
        rank { $late_rank } first, then { $fix_case ->
            [all_reduce] accumulate gradients under no_sync() to all-reduce once every N steps
           *[other] { fix-own }
        }
   *[no] { $collective }{ $fix_kind ->
            [yes] {" "}({ $kind_name })
           *[no] {""}
        } runs { $exposed_us } of every { $step_us } step with no compute beside it: { $waits_most ->
            [yes] { $wait_exposed_us } of it is a call waiting for another rank (compare the ranks first); for the
                rest,{" "}
           *[no] {""}
        }{ fix-own }
  }
basis = communication with no compute beside it, summed per step { $tp ->
        [yes] (each layer waits for its activations: only overlapping them, async tensor parallelism, hides it)
       *[no] (upper bound: { $last_bucket ->
            [yes] the last bucket's all-reduce
           *[no] the last { $kind_name }
        } cannot hide)
    }{ $has_setup ->
        [yes] , less { $setup_us } of one-time set-up in first calls
       *[no] {""}
    }{ $has_late ->
        [yes] , less the wait for rank { $late_rank }, which counts in straggler
       *[no] {""}
    }
exposed-call = { $exposed_us } of its { $dur_us } with no compute beside it
waiting-call = { $ratio }x its collective's { $median_us } median: waiting for another rank
setup-call = the collective's first call, { $ratio }x its later calls' { $median_us } median:
    one-time set-up
