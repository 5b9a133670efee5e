## trailing-sync: the text of its findings, in English
title = Synchronize at the end of a step with nothing left to wait for

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    An explicit `torch.cuda.synchronize()` (cudaDeviceSynchronize / cudaStreamSynchronize called from
    user code, not from inside an op) at the end of a step, issued when little or no GPU work was still
    outstanding: the host pays for the call and then starts the next step with an empty GPU queue.

    Why:
    A synchronize is only worth its cost when it waits for something. At the end of a step whose
    kernels have already finished, it buys nothing: it costs the call itself and it stops the host from
    queueing the next step's launches while the GPU drains, so CPU and GPU can no longer overlap. A
    sync that waits for long real GPU work (a 2.6 ms fp32 GEMM) is not this problem: there the time is
    the GPU's.

    Example:
    `matmul_add` at 64x64 in bf16 on an H200 (gpu/trailing_sync), then `torch.cuda.synchronize()` in
    a `sync` region every step: in step 2 the cudaDeviceSynchronize takes 3.799 µs while the GPU had
    0 µs of work left (its last kernel ended 26 µs earlier); over steps 2-4 the three syncs take
    9.887 µs, 2.9% of the 344 µs of steps.

    Impact:
    Per step: what each sync really costs, its duration capped by the GPU idle from its start until the
    next device work after it (or its end, in the last step). A sync with nothing outstanding costs its
    own call and no more (the GPU had nothing to do either way): gpu/trailing_sync 3.3 µs of a 114 µs
    step (2.9%, info), gpu/capture_mm64_sync 10.9 µs of 325 µs (3.4%, info); the 14 µs syncs of
    gpu/gpu_idle_dataloader's 15 ms steps (0.1%) and the window-end syncs of gpu/window_sync_* (under
    1% of the window) stay silent. It used to be a warning from 1 ms of sync time in all; now severity
    follows the step share. The cudaDeviceSynchronize torch.profiler issues when it stops is the
    profiler's, never counted.

    Fix:
    Drop the per-step synchronize; sync only where the host needs a result (logging every N steps,
    the end of an epoch) and time GPU work with CUDA events (`torch.cuda.Event(enable_timing=True)`)
    instead of sync + wall clock.

where = { $in_region ->
    [yes] {" "}in '{ $region }'
   *[no] {""}
  }
steps = { $steps_hit ->
    [none] the window
    [one] step { $step_list }
   *[many] steps { $step_list }
  }
message = { $syncs } { $name } call(s){ where } at the end of { steps } wait for little or no GPU work: the longest
    takes { $longest_us } with { $outstanding_us } of GPU work outstanding{ $idle_before ->
        [yes] {" "}(the GPU had been idle for { $idle_before_us })
       *[no] {""}
    }. Together { $sync_us }; they cost { $per_step_us } per step, { $share }% of the step time{ $outstanding ->
        [no] : the calls themselves, as the GPU had nothing left to do.
       *[yes] .
    }
advice = Remove the per-step { $call }{ where }: it waits for nothing. Synchronize only where the host needs a
    result (logging every N steps, the end of an epoch), and time GPU work with CUDA events
    (torch.cuda.Event(enable_timing=True)) rather than sync + wall clock.
fix = { $name }{ where } ends every step with { $outstanding_us } of GPU work left, costing { $per_step_us } per
    step: remove the per-step { $call } and time with CUDA events.
basis = the syncs' duration, capped by the GPU idle from each sync's start to the next device work, per step
idle-sync = { $outstanding_us } of GPU work outstanding{ where }; costs { $saved_us }
