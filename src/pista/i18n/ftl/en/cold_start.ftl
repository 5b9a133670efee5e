## cold-start: the text of its findings, in English
title = Cold start: the first step is much slower than the rest

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The first recorded step takes far longer than the steps after it: one-time work (CUDA context and
    cuBLAS handle creation, lazy module loading, allocator growth, the profiler's first buffer
    request) landed inside the profiled window. Without ProfilerStep events, the first of several
    calls of the same top-level record_function region is compared with the later ones instead; without
    regions either, the first iteration of a compiled model (from one top-level `Torch-Compiled Region`
    call to the next) with the later ones.

    Why:
    A cold step is not what the program does in steady state: its ops look many times slower than
    they are, and every total in the table (and every other rule) is skewed towards the warm-up.

    Example:
    `seed_mm64_cold` (64x64 matmul_add, `schedule(wait=0, warmup=0, active=3)`, no warm-up): step 0
    took 137.932 ms against a median of 256.6 µs for steps 1-2, 537x wider; aten::mm's own (untraced)
    time is 102.6 ms of it and aten::add's 24.5 ms, the first calls of cuBLAS and of the elementwise
    kernels; the profiler's buffer request (2.5 ms), 5 module loads (0.6 ms) and 32 occupancy queries
    (42 µs) are in it too.

    Impact:
    One-time: the GPU idle time of the first step beyond the median of the other steps' (compile time,
    recompilation's, left out), spread over the window's steps. seed_mm64_cold: 137.7 ms over 3 steps,
    45.9 ms per step against a median step of 368 µs (critical). This finding owns all of the first
    step: dead-window, profiler-overhead, gemm-heuristics and lazy-loading say nothing about the events
    inside it (before, the seed gave five findings for this one step). The step must be cold on its own
    account: seed_mm4096_compile_cold's first call is 7.4x the second, but 2.9 ms of its 3.7 ms excess
    is the profiler's buffer request, which profiler-overhead reports. Compile spans are
    recompilation's: gpu/compile_warmup's step 0 takes 2.5 s, 2.41 s of it compiling; the 86 ms of GPU
    idle left (69 ms of it the compiled graph's first aten::mm) is this finding's, 28.8 ms per step.

    Fix:
    Run a few iterations before profiling, or let the profiler skip them:
    `torch.profiler.schedule(wait=1, warmup=1, active=3)`; read only the steady-state steps.

first = { $kind ->
    [step] step { $step }
    [iteration] the first iteration (from the first '{ $name }' call to the next)
    [update] the first iteration (up to the end of the first '{ $name }')
   *[region] the first '{ $name }' call
  }
First = { $kind ->
    [step] Step { $step }
    [iteration] The first iteration (from the first '{ $name }' call to the next)
    [update] The first iteration (up to the end of the first '{ $name }')
   *[region] The first '{ $name }' call
  }
others = { $kind ->
    [step] { $other_steps ->
        [one] step { $other_first }
       *[many] steps { $other_first }-{ $other_last }
    }
    [iteration] the { $others } later iteration(s)
    [update] the { $others } later iteration(s)
   *[region] the { $others } later call(s)
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
op-item = { $name } { $us } (usually { $typical_us })
message = { First } took { $first_us }{ $has_compile ->
        [yes] {" "}({ $own_us } once compiling, { $compile_us }{ $has_profiler ->
            [yes] {" "}and the profiler's own events, { $profiler_us }
           *[no] {""}
        }, are left out)
       *[no] { $has_profiler ->
            [yes] {" "}({ $own_us } once the profiler's own events, { $profiler_us }, are left out)
           *[no] {""}
        }
    }, { $ratio }x the median { $median_us } of { others }: one-time set-up was profiled.{ $has_ops ->
        [yes] {" "}Most of it is self time of { $ops }.
       *[no] {""}
    }{ $has_loading ->
        [yes] {" "}It also holds CUDA module loading, { $loading_us }{ $has_queries ->
            [yes] ; { $queries } occupancy queries, { $query_us }.
           *[no] .
        }
       *[no] { $has_queries ->
            [yes] {" "}It also holds { $queries } occupancy queries, { $query_us }.
           *[no] {""}
        }
    }
advice = { $cause ->
    [profiler] Most of it is the profiler's own buffer requests, not the program: profile with { schedule } so
        they fall in the warm-up steps, and read only the steady steps.
    [library] { $gpu ->
        [no] { $op }'s first call sets up the CPU's GEMM library (oneDNN/MKL: its thread pool, weight packing,
            kernel choice): run the step once before profiling, or profile with { schedule } and read only the
            steady steps.
       *[yes] { $op }'s first call sets up cuBLAS (handle, workspace, kernel choice) and loads its kernels: run
            the step once before profiling, or profile with { schedule } and read only the steady steps.
    }
    [host] { First }'s own Python (outside any op) is slow the first time (imports, caches, data loader
        start-up): warm up before profiling, or profile with { schedule }.
   *[first-calls] { $gpu ->
        [no] The first calls of { $op_names } allocate and set up their CPU kernels: run the step once (every
            branch and shape) before profiling, or profile with { schedule }.
       *[yes] The first calls of { $op_names } load their CUDA kernels and allocate: run the step once (every
            branch and shape) before profiling, or profile with { schedule }; CUDA_MODULE_LOADING=EAGER moves the
            loading to start-up.
    }
  }
fix = { First } takes { $first_us } against { $median_us } for the rest{ $has_ops ->
        [yes] , { $op_us } of it in { $op }
       *[no] {""}
    } (one-time set-up): warm up before profiling with { schedule }.
basis = { $kind ->
    [step] one-time: the GPU idle in step { $step } beyond the other steps' median
    [iteration] one-time: the GPU idle in the first iteration beyond the later iterations' median
    [update] one-time: the GPU idle in the first iteration beyond the later iterations' median
   *[region] one-time: the GPU idle in the first '{ $name }' call beyond its later calls' median
  }
first-note = { $ratio }x the median { $median_us } of the other { $others }
op-note = self time { $us }; usually { $typical_us }
profiler-note = the profiler's own work, { $us }
steady-note = a steady one, { $us }, for comparison
