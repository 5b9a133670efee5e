## kernel-variability: the text of its findings, in English
title = The same kernel varies from call to call

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The same kernel doing the same work takes very different times from call to call or from step to
    step: the same name, the same launch configuration (grid and block), launched by an op with the
    same recorded inputs (`Input Dims`, `Input type`, `Concrete Inputs`) and as the same launch within
    that op call (a cuDNN convolution launches its padding helper twice, on two different tensors).
    The tail of its distribution (p95, max) stands far above its median, beyond timer and clock noise,
    and the slow calls cost a measurable share of the step.

    Why:
    Identical launches doing identical work should take the same time. A wide spread means something
    outside the kernel changes: other streams or processes sharing the SMs, clock/power throttling,
    cold caches or TLBs after other work, data-dependent work (sorts, sparse ops). The mean hides it;
    the slow calls are what stretch the step. Calls whose inputs differ are different work: their
    times differ for that reason alone, and say nothing.

    Example:
    `tests/fixtures/gpu/kernel_variability` (an elementwise mul on 64 MiB, 8 calls a step, a second
    stream running GEMMs in steps 3 and 6): vectorized_elementwise_kernel grid [32768,1,1] block
    {""}[128,1,1], 48 calls, median 33.5 µs, p95 53.2 µs (1.59x), max 54.2 µs; its median per step is
    32.0-32.2 µs except 50.7 µs and 51.8 µs in steps 3 and 6.

    Impact:
    Per step: the time the calls spend above the median of their own group (same kernel, launch,
    inputs), summed and divided by the steps: gpu/kernel_variability 240 µs over 6 steps, 40 µs of a
    406 µs median step (9.9%, warning). An upper bound: a slow call on a side stream may hide behind the
    main stream's work. Under 1% of the step it is silent. It used to be a warning whatever it cost,
    and it grouped calls by name, launch and input shapes only: on gpu/resnet50_bf16 it flagged cuDNN's
    nhwcAddPaddingKernel (1.9 µs padding the weights, 86 µs padding the input, both inside one
    convolution) and batch-norm kernels launched outside any op (no inputs to compare); both are gone.

    Two kinds of slow call are not variability and are left out (review 4): a collective's (NCCL kernels), whose
    time is its wait for the slowest rank plus the transfer, so that its spread is the ranks' skew
    (exposed-communication and straggler say it; tokenomics' rtx4090_tp2_llama_dim1024: the first reduce-scatter,
    59.7 ms against a 13.7 ms median, NCCL connecting to its peer, was "look at what else runs ... clocks"), and a
    group's first call in the window when it is the group's slowest, at least KV_MAX_RATIO times the median of the
    others: a one-time set-up (a cold cache, a first launch), not a spread of the steady calls.

    Fix:
    Find what overlaps the slow calls (the evidence's timestamps; other streams, other processes,
    nvidia-smi for clocks), serialise or separate the competing work, warm caches, pin clocks for
    benchmarks, and compare step medians rather than means.

config-item = { $has_config ->
    [yes] { $config }
   *[no] no launch config in the trace
  }
inputs-item = inputs { $dims }
launch-item = launch { $launch } within its op
message = { $kernel } ({ $what }) over { $calls } calls with the same inputs: min { $min_us }, median { $median_us },
    p95 { $p95_us } ({ $p95_ratio }x), max { $max_us } ({ $max_ratio }x); the calls above the median cost
    { $excess_us } more than the median would, { $step_excess_us } per step ({ $share }% of the step).{ $slow ->
        [none] {""}
        [one] {" "}Median per step { $min_med }-{ $max_med } µs; slow in step { $slow_list }.
       *[many] {" "}Median per step { $min_med }-{ $max_med } µs; slow in steps { $slow_list }.
    }
advice = Look at what else runs { $slow ->
        [none] at the slowest calls
        [one] in step { $slow_list }
       *[many] in steps { $slow_list }
    } beside { $kernel } (other streams, other processes, clocks: nvidia-smi), separate or serialise the competing
    work, and compare medians per step rather than means.
fix = { $kernel } takes up to { $max_ratio_1 }x its median for the same inputs{ $slow ->
        [none] {""}
        [one] {" "}in step { $slow_list }
       *[many] {" "}in steps { $slow_list }
    }, { $step_excess_us } per step: find and separate the work that competes with its slow calls.
basis = the calls' time above the median of calls with the same kernel, launch and inputs, summed per step (an upper
    bound: a slow call off the critical path costs nothing)
slow-call = { $ratio }x the median
typical-call = a typical call (nearest the { $median_us } median)
