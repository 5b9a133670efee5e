## compile-overhead: the text of its findings, in English
title = torch.compile's per-call wrapper leaves the GPU idle
severity-exception = info where the exposed wrapper may be the profiler's own cost (condition stated)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    torch.compile's per-call host cost leaves the GPU without work. Every call of a compiled function
    walks the guards (`TorchDynamo Cache Lookup`), enters the `Torch-Compiled Region`, runs `Pregraph
    bytecode` and the `AOTDispatcher Runtime Wrapper Prologue`, then the generated wrapper (`## Call
    CompiledFxGraph ...`) before the first launch; this rule adds up that host time (the region minus
    the aten ops, launches and profiler work inside it, plus the cache lookup) and measures how much of
    it runs while the GPU is idle.

    Why:
    The compiled graph saves work per kernel, but the wrapper costs a fixed few hundred µs of Python
    per call. When a call launches a 2 µs kernel, the wrapper is the runtime, and the compiled step
    can be slower than the eager one. While the GPU still has queued work, the same host time is
    hidden and costs nothing.

    Example:
    `torch.compile(matmul_add)` at 64x64 in bf16 on an H200 (seed_mm64_compile): per call 34 µs of
    cache lookup plus 345 µs in `Torch-Compiled Region: 0/1`, of which 115 µs is aten::addmm, for a
    2.1 µs kernel. At 4096 (seed_mm4096_compile) the same wrapper costs about 200 µs per call for a
    175 µs GEMM.

    Impact:
    The wrapper's host time (the cache lookup and the region outside its payload) during which no
    device work ran, in the median step: time hidden behind the GPU saves nothing, and the first step
    of a window often starts with an empty queue (capture_mm4096_compile: 169, 0 and 0 µs per step, so
    it stays silent). seed_mm64_compile 228 µs of 422 (54%, critical); series_mlp_compile 2.34 ms of
    8.44 (28%, critical); capture_mlp_compile 794 µs of 4.40 ms (18%, warning). Where the GPU work per
    call reaches half the wrapper, the exposure may be the profiler's (seed_mm4096_compile: 142 µs of a
    368 µs profiled step, yet 182 µs per step with 174 µs of GPU unprofiled, REVIEW.md;
    gpu/elementwise_compiled 92 µs of 199, 46%): the message says so and the finding is information,
    like a latent cost, with that condition stated. It used to fire on the ratio of host to GPU time
    (0.5x), hidden time included, always as a warning.

    Fix:
    Never "try torch.compile": the code is compiled already. Use `mode="reduce-overhead"` (CUDA graphs)
    to replay the launches without the Python wrapper; where the wrapper dominates, give each call more
    work (compile the whole step, not one small function; bigger batches), so the fixed cost is shared.

graphs = torch.compile(mode='reduce-overhead') to replay the launches as a CUDA graph without the wrapper's Python
change-text = { $change ->
    [op-by-op] compile with a backend that generates code (backend='inductor', torch.compile's default, not
        'aot_eager' or a no-op/TorchScript compiler for AOTAutograd), so the graph's ops fuse into kernels launched
        from one generated wrapper, then use { graphs }
    [eager] compile what the step runs eagerly around the compiled calls with them ({ $eager_ops }:
        { $eager_idle_us } of GPU idle per step under them), so one graph holds the step, and use { graphs }
    [dominates] give each compiled call more work (compile the whole step rather than small functions, bigger
        batches) and use { graphs }
   *[graphs] use { graphs }
  }
who = { $single ->
    [yes] { $region }
   *[no] Each compiled call ({ $regions })
  }
message = { $op_by_op ->
    [yes] { $calls } compiled call(s) ({ $regions }) run their graph op by op: { $ops } aten ops a call and no
        generated kernel, with { $call_us } of host time a call between and around those ops (the graph's Python,
        not a wrapper) for { $gpu_us } of GPU work launched per call. { $exposed_us } of it ran with the GPU idle:
        { $step_us } in the median step, { $share }% of the step time.
   *[no] { $calls } compiled call(s) ({ $regions }) spend { $wrapper_us } of host time in the torch.compile wrapper
        (cache lookup, guards, prologue, generated wrapper; { $call_us } per call) for { $gpu_us } of GPU work
        launched per call. { $exposed_us } of it ran with the GPU idle: { $step_us } in the median step,
        { $share }% of the step time.{ $profiler ->
            [yes] {" "}The GPU work per call nearly covers the wrapper: without the profiler (which about doubles the
                host time of op-dense loops) the host may run ahead and hide it; time the step unprofiled before
                acting.
           *[no] {""}
        }
  }
advice = { $op_by_op ->
    [yes] Each call runs { $ops } aten ops one by one: { change-text }.
   *[no] Each call launches { $gpu_us } of GPU work behind { $call_us } of wrapper: { change-text }; keep input
        shapes static so the graph is reused.{ $backward ->
            [yes] {" "}The compiled backward (CompiledFunctionBackward) is graphed with it.
           *[no] {""}
        }{ $profiler ->
            [yes] {" "}First check the cost unprofiled: it may be the profiler's.
           *[no] {""}
        }
  }
fix = { $op_by_op ->
    [yes] { who } runs its graph op by op ({ $ops } aten ops a call, no generated kernel), { $step_us } per step
        with the GPU idle: { change-text }.
   *[no] { who } spends { $call_us } per call in the compile wrapper for { $gpu_us } of GPU work, { $step_us } per
        step with the GPU idle: { change-text }{ $profiler ->
            [yes] {" "}(if it persists unprofiled).
           *[no] .
        }
  }
basis = { $op_by_op ->
    [yes] the host time between the compiled graph's ops while the GPU was idle, in the median step
   *[no] the wrapper's host time (cache lookup, guards, prologue, generated code) while the GPU was idle, in the
        median step{ $profiler ->
            [yes] {" "}(may be the profiler's own cost)
           *[no] {""}
        }
  }
wrapper-call = { $host_us } { $between_ops ->
        [yes] of host time between its ops
       *[no] of wrapper host time
    }{ $has_lookup ->
        [yes] {" "}(incl. { $lookup_us } cache lookup)
       *[no] {""}
    }, { $exposed_us } with the GPU idle, for { $gpu_us } of GPU work launched
guard-check = guard check before the call: { $lookup_us }
