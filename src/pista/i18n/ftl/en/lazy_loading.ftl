## lazy-loading: the text of its findings, in English
title = First calls inside the window: CUDA loads their kernels lazily

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    "Runtime Triggered Module Loading" / "Lazy Function Loading" events on the profiler's overhead
    lane inside the profiled window: CUDA loaded a kernel the first time it was needed (lazy loading,
    the default `CUDA_MODULE_LOADING=LAZY` since CUDA 11.7), while the program ran. The op that holds
    the load is running for the first time in the process, and its first call costs far more than the
    load event itself: tens of ms of set-up nothing records, on this H200.

    Why:
    A first call is paid once per kernel, but it lands inside whatever step first runs the op (a
    branch taken every N steps, an evaluation, a new dtype): that step is many times wider, and the
    op looks slow in the table. It means the window holds first calls, not steady state.

    Example:
    `gpu/lazy_late_kernel` (a warmed-up MLP forward; the second profiled step also computes a
    cross-entropy loss and an accuracy for the first time, straight in the step): 6 Lazy Function
    Loadings of 28-68 µs each (283 µs), in aten::to (25.1 ms), aten::cross_entropy_loss (62.3 ms),
    aten::argmax (15.9 ms), aten::eq (15.2 ms) and aten::mean (19.2 ms): step 3 takes 140.5 ms against
    2.5-2.6 ms for the others.

    Impact:
    One-time: the GPU idle time of the op calls that hold a load (the outermost op the user called),
    less what the same op takes in calls without one, spread over the window's steps:
    gpu/lazy_late_kernel 137.5 ms over 3 steps, 45.8 ms per step against a 2.6 ms median step
    (critical). Before, only the load events counted (0.2% of the window), though the calls holding
    them cost 500x more. Loads inside a cold first step, a dead window, a new-shape GEMM call or
    compile spans belong to cold-start, dead-window, gemm-heuristics and recompilation (seed_mm64_cold,
    gpu/window_sync_cold, gpu/gemm_new_shapes, gpu/recompile: 5, 5, 3 and 8 loads, reported here before).

    Without load events (CUDA before 11.7, older CUPTI, ROCm) the same first calls are found by their
    start-up (issue 35): a runtime call of 1 ms or more that neither waits, copies nor allocates
    (context creation, a first launch loading its module: TraceLens' tl_normalization on an MI300X,
    331 ms in a first hipLaunchKernel), or a torch op's first call with 5 ms of host time in no
    recorded call (cuBLAS's or cuDNN's set-up), each five times the other calls of its name or alone.
    gpu/window_sync_cold without its region and load events: 108.7 ms once, where overhead-bound
    reported 109 ms "per step" of per-op overhead with torch.compile advice before. A slow launch whose
    kernel starts later after it returns than the call took waited for room in a full launch queue, and
    one whose op shows one in several steps is what the op costs every step: neither is start-up
    (foreign/hta_negq_rank0: 1-7 ms cudaLaunchKernel calls in NEMetric:update in all 5 steps, their
    kernels starting 164-176 ms after they return, read as 48 ms of first calls before).

    Fix:
    Run every code path once before profiling (warm-up iterations that take the branch, or
    `torch.profiler.schedule(wait=1, warmup=1, active=N)`). `CUDA_MODULE_LOADING=EAGER` moves the
    loading to start-up (longer start, more memory) if a first call itself must be fast.

steps = { $steps_hit ->
    [none] the window
    [one] step { $step_list }
   *[many] steps { $step_list }
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $active })
call-item = { $op } { $dur_us }{ $has_usual ->
        [yes] {" "}(usually { $typical_us })
       *[no] {""}
    }, { $has_loads ->
        [yes] { $loads } load(s) in { $via }
       *[no] { $has_setup ->
            [yes] { $setup_us } in { $setup }
           *[no] { $setup_us } of set-up no call records
        }
    }
message = { $has_events ->
    [no] { $count } call(s) start CUDA up for the first time in the process, in { steps }, { $first_calls_us } in
        all: the context, cuBLAS/cuDNN's handles and their kernels' loading (this trace records no load event for
        them): { $calls }.
   *[yes] { $count } op call(s) run for the first time in the process, in { steps }: { $events } kernel load
        event(s), { $load_us }, but the calls holding them take { $first_calls_us }: { $calls }.
  }
advice = { $has_events ->
    [no] { $ops } start CUDA up inside the window: a one-time cost of the process, not of the steady state. Run one
        iteration before profiling, or profile with { schedule }; nothing to optimise in the loop itself.
   *[yes] { $ops } run for the first time inside the window (a branch taken late, an evaluation, a new dtype): run
        every code path once before profiling, or profile with { schedule }; CUDA_MODULE_LOADING=EAGER loads the
        kernels at start-up if a first call itself must be fast.
  }
others = { $has_others ->
    [yes] {" "}and { $others } other op(s)
   *[no] {""}
  }
fix = { $has_events ->
    [no] { $op }{ others } start CUDA up in { steps } ({ $first_calls_us } of one-time start-up): run one iteration
        before profiling.
   *[yes] { $op }{ others } run for the first time in { steps } ({ $first_calls_us } of first calls, kernels loaded
        lazily): take that code path once before profiling.
  }
basis = { $has_events ->
    [no] one-time: the GPU idle in the first calls that start CUDA up, less the same ops' usual time
   *[yes] one-time: the GPU idle in the op calls that load their kernels, less the same ops' usual time
  }
call-note = a first call: { $loads } kernel load(s), { $load_us }
load-note = inside { $via }
startup-note = { $has_setup ->
    [yes] a first call: { $setup_us } in { $setup }
   *[no] a first call: { $setup_us } of host time no call records (set-up)
  }
setup-note = start-up inside it, { $dur_us }
