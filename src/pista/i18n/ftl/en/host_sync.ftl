## host-sync: the text of its findings, in English
title = Ops inside the step synchronize the host with the GPU

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Ops inside the steps that make the host wait for the GPU: `.item()`, `.cpu()`, `.tolist()`,
    printing or branching on a CUDA tensor. In the trace they are a cudaStreamSynchronize (or
    cudaDeviceSynchronize) under an aten op such as aten::item > aten::_local_scalar_dense or
    aten::to > aten::_to_copy > aten::copy_ with a DtoH copy. The rule names the op that synced,
    counts it per step and adds up what it cost: the time blocked in the sync plus the GPU idle
    that follows, while the host issues the next launches into an empty queue.

    Why:
    CUDA work is asynchronous: the host normally runs ahead and keeps the GPU's queue full. A sync
    drains the queue; after it, the GPU waits for every launch of the next op's dispatch. One
    `.item()` per step in a logging line is cheap; one per layer or per micro-step serialises the
    whole step.

    Example:
    gpu/host_sync_item on an H200, 8x (1024² bf16 matmul, then `.float().mean().item()`) per step:
    24 aten::item calls over 3 steps (8 per step), each aten::item > aten::_local_scalar_dense with a
    DtoH cudaMemcpyAsync and a ~6.3 µs cudaStreamSynchronize: the host is blocked 265 µs in all, and
    the GPU then idles another 801 µs before the next launches reach it, 36% of the step time.

    Impact:
    Per step, per sync: the GPU idle after it until the next device work, but no more than the GPU work
    the host waited for in it. Without the sync the host dispatches the next op while that work runs;
    idle beyond it is the dispatch itself (overhead-bound's), which the sync did not cause. gpu/tf32_gemm
    (torch.cuda.synchronize() after a 340 µs GEMM): 21 µs per step, as measured unprofiled (342 -> 367
    µs). gpu/host_sync_item: 8 `.item()` per step drain ~1 µs of matmul each, then the host spends ~40 µs
    dispatching: a few µs per step, info (measured unprofiled: 514 -> 521 µs per step without them). It
    used to count the whole idle after each sync (345 µs, 38%). Under 5% of the step the finding is info,
    as a latent cost: it grows once the host is faster (one .item() per step on GPT n=2: +20%), and a
    step that syncs cannot be captured as a CUDA graph.
    A value read between the graphs of a compiled call that Dynamo broke is graph-break's, and the
    autograd engine's NaN checks in anomaly mode are anomaly-mode's (the cause, and the fix, are theirs).
    Replayed (pista.engine), the fix removes the statement, not only the wait: a value read goes with its op
    and the Python frame that called only it, `torch.cuda.synchronize()` with its wrapper (its frames, or up
    to SYNC_WRAPPER_GAP_NS of the gap before it), a boolean-mask index with its backward (the shape kept
    static by a multiply or torch.where), and reads after the same op in a loop over tensors batch those ops
    (savings/h100: sync_cuda_synchronize 7.3% predicted for 12.9% measured, sync_bool_mask 12.5% for 9.6%,
    sync_per_param 17.6% for 20.5%). A sync that waits for work launched before the window (a harness's
    torch.cuda.synchronize() at the step's start) keeps its wait: the fix saves the GPU idle it left after
    it, not the earlier work (TraceLens' Qwen1.5-0.5B: 283 µs of a 14.1 ms wait on the H100, 632 µs of
    13.1 ms on the MI300X, replayed before as 3.1% and 8.6% of the step).

    Fix:
    Keep values on the GPU (accumulate losses in a tensor, `.item()` once every N steps), move
    checks out of the hot loop, use `non_blocking=True` copies into pinned memory and read them after
    an event, and find hidden syncs with `torch.cuda.set_sync_debug_mode("warn")`.

step-item = { $has_step ->
    [yes] step { $step }: { $calls }
   *[no] no step: { $calls }
  }
op-item = { $name } { $count }x ({ $per_step }; { $chain }): host blocked { $blocked_us }, { $stall_us } of GPU
    idle it caused
message = { $syncs } syncing op calls in { $steps } step(s): { $ops }. Together they left the GPU idle
    { $stall_us } per step.{ $latent ->
        [yes] {" "}Cheap while the host is the bottleneck; once the host runs ahead, each sync drains the GPU's
            queue and costs a step's worth of launch latency, and a step that syncs cannot be captured as a CUDA
            graph.
       *[no] {""}
    }
advice = { $explicit ->
    [yes] Take { $op } out of the step ({ $chain }): it drains the GPU's queue and the GPU then waits for every
        launch that follows. Time with CUDA events (torch.cuda.Event(enable_timing=True)) and synchronize only
        where the host needs a result.
   *[no] { $checks ->
        [yes] The step tests values on the host ({ $check } > { $op }: an assert or an if on a tensor): drop
            the check from the step or run it every N steps; an assert can stay on the GPU with
            torch._assert_async(cond), which raises without a sync.
       *[no] Keep results on the GPU and read them rarely (accumulate, then .item() every N steps); copy with
            non_blocking=True into pinned memory; find hidden syncs with torch.cuda.set_sync_debug_mode('warn').
    }
  }
fix = { $explicit ->
    [yes] { $chain } drains the GPU's queue { $per_step }x per step, { $op_stall_us } of GPU idle per step: drop
        the synchronize from the step (time with CUDA events).
   *[no] { $checks ->
        [yes] { $check } > { $op } tests a value on the host { $per_step }x per step, each test a sync that
            drains the GPU's queue: drop the check or run it every N steps (an assert: torch._assert_async(cond)).
       *[no] { $op } syncs the host { $per_step }x per step ({ $chain }), { $op_stall_us } per step with the GPU
            waiting: keep the value on the GPU and read it once every N steps.
    }
  }
basis = per sync, the GPU idle after it until the next device work, at most the GPU work it waited for (what the
    host could have dispatched meanwhile), per step
synced-via = synced via { $via }; host blocked { $blocked_us }, { $stall_us } with the GPU idle after
blocked = host blocked { $blocked_us }, GPU busy { $busy_us }
