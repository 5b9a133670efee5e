## launch-bound: the text of its findings, in English
title = Many tiny kernels: the GPU waits while the host dispatches and launches them

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Each step launches many tiny kernels, and launching one costs more host time than running it:
    the median kernel lasts a few µs or less, while the launch call alone (cudaLaunchKernel,
    cuLaunchKernelEx) takes as long or longer, and the op that dispatched it longer still. The rule
    names the kernels and the ops that launch them, and the GPU idle while the host dispatches them.

    Why:
    A kernel launch costs ~5-10 µs of host time (Python, the dispatcher, the CUDA driver); an
    elementwise op on a small tensor runs in 1 µs. With hundreds of them per step the GPU finishes
    each kernel before the next one arrives, so the step time is the sum of launch costs. A faster GPU
    does not help; fewer, bigger kernels do.

    Example:
    gpu/launch_bound on an H200: 200 tiny elementwise ops (mul, add on 256 floats) per step; 600
    kernels over 3 steps with a median of 0.928 µs each, against a median cudaLaunchKernel of 6.49 µs;
    188 µs of kernels per step for 1.37 ms of launch calls. The GPU waits 4.19 ms per step for these
    kernels to be launched, 95% of the 4.41 ms median step.

    Impact:
    Per step: the GPU idle just before each tiny kernel, from the end of the device's previous work to
    the kernel's start (the GPU was waiting for this launch), not counting idle another finding
    claims (a sync's, a data-loading region's, compiling, the profiler's): what fusing those ops into a
    few kernels, or replaying them as a CUDA graph, could save at most (upper bound). This is the part
    of the per-op idle the tiny kernels explain: `many-calls` and `overhead-bound` take only what is
    left, so the same idle is never reported twice (on gpu/launch_bound overhead-bound keeps 59 µs,
    1.3%, and many-calls nothing). Before, the rule had no impact and restated overhead-bound's
    verdict and many-calls' aten::mul / aten::add.

    Kernels a graph launch replays (cudaGraphLaunch, hipGraphLaunch) are not launched one by one and
    are left out; a program that already replays graphs is told to fuse the rest or capture it into
    those graphs, not to capture the step (issue 35: foreign/hta_negq_rank0, 14 graph launches a step,
    its 135 graph kernels counted before). Per-step figures are means over the steps, shares of the
    mean step (a mean part against the median step could exceed it).

    Fix:
    Fuse the ops: torch.compile (Inductor fuses elementwise chains into one Triton kernel),
    foreach/fused optimizers (`fused=True`), vectorise over a batch instead of looping in Python;
    replay the whole step as a CUDA graph (`torch.compile(mode="reduce-overhead")`,
    `torch.cuda.CUDAGraph`) so the launches cost one graph launch. Code that is already compiled needs
    the CUDA graph (or bigger work per call), not another torch.compile.

example-item = { $count }x { $kernel }{ $has_op ->
    [yes] {" "}from { $op }
   *[no] {""}
  }
ops = { $has_ops ->
    [yes] { $ops }
   *[no] the ops
  }
message = { $kernels } kernels in { $steps } step(s) ({ $per_step } per step), median { $median_kernel_us } each,
    while the median launch call takes { $median_launch_us }{ $has_op ->
        [yes] , the median dispatching op { $median_op_us }
       *[no] {""}
    }; per step { $kernel_us } of kernels for { $launch_us } of launch calls. The GPU waits { $idle_us } per step
    ({ $share } of the { $whole_us } { $has_steps ->
        [yes] mean step
       *[no] window
    }) for the { $tiny } of them that run { $tiny_max_us } or less to be launched{ $compiled ->
        [yes] {" "}from compiled code
       *[no] {""}
    }. Most launched: { $examples }.
# where the steps' shapes change, the CUDA graph's condition (overhead-bound's Python text says it too)
static-first = { $new_shape ->
    [yes] {" "}The shapes change every step ({ $new_shape_op }: { $new_shape_calls } calls per step on a shape no
        other step in the window has): a CUDA graph replays fixed shapes, so make them static first (a preallocated
        static KV cache where a sequence grows, padded or bucketed lengths), or torch.compile recompiles and records a
        graph per shape.
   *[no] {""}
  }
advice = { $graphed ->
    [yes] The step already replays CUDA graphs ({ $graph_launches } graph launch(es) per step); these kernels are
        launched one by one outside them: fuse the small ops ({ ops }) with torch.compile, or capture them into the
        graphs with the rest, so their launches ride on a replay.{ static-first }
   *[no] { $compiled ->
        [yes] These tiny kernels come from code that is already compiled: capture the step as a CUDA graph
            (torch.compile(mode='reduce-overhead')) so their launches cost one graph launch, or give each kernel
            more work (a bigger batch).{ static-first }
       *[no] Fuse the small ops ({ ops }): torch.compile fuses elementwise chains into one kernel; turn a Python
            loop over slices into tensor ops on the whole batch; or capture the step as a CUDA graph
            (torch.compile(mode='reduce-overhead')) so the launches cost one graph launch.{ static-first }
    }
  }
fix = { $tiny } tiny kernels per step ({ ops }) wait for the host to dispatch and launch them, { $idle_us } of GPU
    idle per step{ $graphed ->
        [yes] , outside the CUDA graphs the step replays: fuse them, or capture them into those graphs
       *[no] { $compiled ->
            [yes] : capture the compiled step as a CUDA graph (mode='reduce-overhead')
           *[no] : fuse them with torch.compile or capture the step as a CUDA graph{ $new_shape ->
                [yes] {" "}once its shapes are static ({ $new_shape_op } changes shape every step)
               *[no] {""}
            }
        }
    }
basis = GPU idle just before each tiny kernel, from the end of the previous device work to its start, per step,
    without idle other findings claim (syncs, data loading, compiling); upper bound
tiny-kernel = { $count } launches of this kernel in the steps ({ $per_step } per step)
its-launch = its launch call: { $launch_us } to launch a { $kernel_us } kernel
its-op = the op that dispatched it: { $op_us }
