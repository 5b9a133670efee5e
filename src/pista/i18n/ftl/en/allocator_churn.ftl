## allocator-churn: the text of its findings, in English
title = Memory is allocated and freed with CUDA runtime calls every step

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Memory allocation runtime calls inside the steps, step after step: `cudaMalloc`/`cudaFree` (and
    the pinned-memory `cudaHostAlloc`/`cudaMallocHost`/`cudaFreeHost`, the driver's `cuMem*` of
    expandable segments), and HIP's (`hipMalloc`/`hipFree`, `hipHostMalloc`/`hipHostFree`). PyTorch's
    caching allocator makes them only when it misses: when `torch.cuda.empty_cache()` runs in the loop and
    hands the cache back, when shapes keep changing or memory is fragmented, when an allocation fails and it
    frees its cache to retry, or when caching is off (`PYTORCH_NO_CUDA_MEMORY_CACHING=1`). A window without
    steps is read as one, where frees recur (MIN_WINDOW_FREES): TraceLens' tl_mi300_ddp_resnet18_train, 1,360
    hipFree in 3.35 s of a 3.39 s window, most of it inside ops, was read as dispatch overhead before.

    Why:
    `cudaFree` synchronizes the device (the host waits for the GPU to drain, then the GPU waits for
    the host), and `cudaMalloc` of a large block costs tens of µs to milliseconds of host time in
    which nothing is launched. A warm cache serves the same tensors in about a µs.

    Example:
    gpu/allocator_churn on an H200: 4x (randn 4096x2048 bf16, matmul, relu_) then
    `torch.cuda.empty_cache()` each step. Every step calls cudaMalloc twice (under `aten::empty` in
    `aten::randn` and under `aten::mm`, 42-77 µs each) and cudaFree twice at the end of the step (35-133
    µs, the first one waiting for the GPU to drain): 6 + 6 calls in 3 steps, 830 µs of host time, and
    the GPU idles through most of it.

    Impact:
    Per step: the time the GPU sits idle from the start of each call until the next device work
    starts (within the step), the calls' intervals merged: the host time the calls cost that no GPU
    work hides, plus the idle they leave behind. An upper bound (the op after a call still takes its
    own dispatch time). gpu/allocator_churn 296 µs per step (49.9%, critical). Calls in a single step
    (seed_mm64_cold's first cuBLAS workspace, gpu/gemm_new_shapes' one new size) are one-time
    growth, not churn: cold-start's. Calls inside a cuDNN call that sets up a new shape (its
    workspaces; gpu/multiscale_benchmark's algorithm search) are cudnn-setup's.

    Fix:
    Remove `torch.cuda.empty_cache()` from the loop (call it, if at all, between phases); where the frees
    run inside ops, check `num_alloc_retries` (lower the peak memory) and that caching is on; keep shapes
    static or bucketed so cached blocks fit again; try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`
    against fragmentation; see `torch.cuda.memory_stats()` (`num_alloc_retries`, `num_device_alloc`).

per = { $has_steps ->
    [yes] per step
   *[no] in the window
  }
call-item = { $name } { $per_step }x { per } under { $has_under ->
        [yes] { $under }
       *[no] no op
    }, { $host_us } { per }
message = { $calls }: { $has_steps ->
        [yes] the caching allocator misses in { $steps_with_calls } of { $steps } steps
       *[no] the caching allocator misses all through the window (it has no steps)
    }. The calls take { $host_us } of host time { per } and leave the GPU idle { $idle_us } { per }, { $share }% of
    { $has_steps ->
        [yes] the step
       *[no] the window
    }.{ $frees_in_ops ->
        [yes] {" "}Most of the frees' time is inside ops: memory is given back while the ops run, so the allocator
            frees its cache to retry allocations that failed (memory at its limit), or caching is off.
       *[no] {""}
    }
advice = { $first ->
        [grad-mode] Inference runs in grad mode (inference-grad-mode): each step's outputs, and a KV cache, keep its
            autograd graph and saved tensors alive, so memory grows and the allocator asks CUDA for more;
            torch.inference_mode() removes the cause.{" "}
        [in-ops] The frees run inside ops, not after an empty_cache(): check
            torch.cuda.memory_stats()['num_alloc_retries'] (the allocator freeing its cache to retry: lower the peak
            memory with a smaller batch or activation checkpointing) and that PYTORCH_NO_CUDA_MEMORY_CACHING is not
            set (caching off: every tensor is a malloc and a free).{" "}
        [outside-ops] cudaFree runs outside any op, which is torch.cuda.empty_cache() (or a cache flush) inside the
            loop: remove it, or call it between phases only, so the next step reuses the cached blocks.{" "}
       *[none] {""}
    }Keep tensor shapes static (or bucket them) so cached blocks fit again, try
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation, and watch
    torch.cuda.memory_stats()['num_device_alloc'] and ['num_alloc_retries'] across steps.
fix = { $names } run { $per_step }x { per }, { $idle_us } of GPU idle { per }: { $change ->
        [grad-mode] run the inference under torch.inference_mode() (grad mode keeps each step's graph alive)
        [in-ops] the frees run inside ops: check num_alloc_retries (memory at its limit) and that caching is on
        [outside-ops] remove torch.cuda.empty_cache() from the loop
       *[static] keep shapes static or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cache hits
    }
basis = GPU idle from the start of each allocation or free call until the next device work, per step, the calls'
    intervals merged (upper bound: the op after a call keeps its own dispatch time)
alloc-note = under { $has_under ->
        [yes] { $under }
       *[no] no op
    }: host { $host_us }, GPU busy { $busy_us } of it
