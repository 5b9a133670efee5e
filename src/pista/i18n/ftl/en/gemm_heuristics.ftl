## gemm-heuristics: the text of its findings, in English
title = GEMMs on new shapes wait for cuBLAS to choose a kernel

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    GEMM calls (aten::mm, addmm, bmm...) on input shapes not seen earlier in the trace that take long
    on the host before launching their kernel: cuBLAS(Lt) runs its heuristics for each new problem
    size, picks a kernel (often a new one, which CUDA then loads lazily) and only then launches. Seen
    in two or more calls with different shapes, the shapes change in the steady state (a dynamic
    batch or sequence length). The cudaOccupancy* queries cuBLASLt issues on the process's first GEMM
    are counted when present; CUB's sorts and scans ask them on every call (big_gpt_eager_20steps'
    embedding backward) and are not GEMMs.

    Why:
    The choice is cached per shape, so a fixed shape pays it once; a shape that changes every step
    pays it every step, on the host, with the GPU idle when the host is the bottleneck.

    Example:
    `gpu/gemm_new_shapes` (one bf16 `x @ w` with w 1024x1024, a new M each step: 1000, 3000, 7777 in the
    profiled steps): each aten::mm runs 2.6-3.6 ms on the host before its 6-25 µs nvjet kernel, a new
    kernel each time (one Lazy Function Loading each); no occupancy query is recorded.

    Impact:
    The GPU idle time from each new-shape GEMM call's start to its launch, less what the same op takes
    on shapes it has seen (none in gpu/gemm_new_shapes, so an upper bound there), per step:
    gpu/gemm_new_shapes 3.0 ms per step, about all of its 2.9 ms median step (critical). Before, the
    rule counted occupancy queries, whatever they cost: it reported CUB's sorts in
    big_gpt_eager_20steps (9 µs per step) and cuBLAS's first call inside seed_mm64_cold's cold step
    (cold-start's). A call inside a cold step, a dead window or compile spans belongs to those.

    Without steps, new shapes that all run again after the last of them are a first pass: one-time
    (issue 35: first-call cuBLAS set-up shown as a per-step cost); gpu/gemm_new_shapes without its
    steps stays recurring (a new M each call, never seen again). New shapes of different layers (no two
    differing in one size) in a window without steps are first calls, lazy-loading's (TraceLens'
    tl_b200_eager: vLLM's first four GEMMs, each loading its kernel).

    Fix:
    Keep shapes static: pad or bucket the varying dimension to a few sizes (and warm each up before
    profiling); under torch.compile mark it dynamic; CUDA graphs need static shapes too.

steps = { $steps_hit ->
    [none] the window
    [one] step { $step_list }
   *[many] steps { $step_list }
  }
call-item = { $op } { $dims }: { $wait_us } before { $kernel }
message = { $calls } GEMM calls on { $shapes } new shapes in { steps } wait { $wait_us } in all between their start
    and their launch{ $usual ->
        [yes] , against { $typical_us } on shapes seen before
       *[no] {""}
    }: { $new }.{ $has_loads ->
        [yes] {" "}{ $loads } kernel load(s) (CUDA lazy loading) in them: the kernels are new too.
       *[no] {""}
    }{ $has_queries ->
        [yes] {" "}{ $queries } occupancy queries recorded in them.
       *[no] {""}
    }
advice = { $once ->
    [yes] The new shapes ({ $dims }) are a first pass: they run again afterwards without the wait, so cuBLAS chose
        their kernels once. Warm each shape up before profiling (one iteration, or torch.profiler.schedule(wait=1,
        warmup=1, active=N)); nothing recurs in the steady state.
   *[no] The GEMM's shape changes from call to call ({ $dims }): pad or bucket the varying dimension to a few sizes
        and warm each one up before profiling; under torch.compile mark it dynamic; CUDA graphs need static shapes
        too.
  }
fix = { $first_pass ->
    [yes] { $op } meets { $shapes } new shapes in { steps } ({ $chain }), { $wait_us } before their launches while
        cuBLAS chooses kernels: warm each shape up before profiling, and keep the shapes to a few sizes.
   *[no] { $op } gets a new shape every step ({ $chain }), { $per_step_us } per step before its launch while cuBLAS
        chooses a kernel: pad or bucket the shapes to a few sizes.
  }
basis = the GPU idle from each new-shape GEMM call's start to its launch ({ $idle_us }){ $usual ->
        [yes] , less the op's wait on shapes seen before
       *[no] , an upper bound (no shape seen before to compare with)
    }, { $per ->
        [once] once, a first pass
        [step] per step
       *[window] over the window
    }
shape-note = new shape { $dims }: { $wait_us } before its launch
kernel-note = the kernel it chose, { $dur_us }
