## many-calls: the text of its findings, in English
title = Ops called very many times per step: their per-call cost adds up

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Ops (or kernels) called very many times per step, each call cheap and mostly host work, that
    together keep the GPU waiting: the count is the problem. All such ops of a trace are one finding,
    each with its calls per step, where they come from (a Python loop, the optimizer, dtype casts,
    compiled code) and the GPU idle while the host is inside them.

    Why:
    Every call pays the same fixed toll: Python and the dispatcher for an op (10-20 µs), a launch for
    a kernel (5-10 µs on the host, a few µs of GPU ramp). A hundred tiny calls cost a hundred tolls;
    one batched or fused call pays once. The toll only costs time where the GPU waits for it: behind
    long kernels it is hidden. An op whose time is the elements it makes or moves (random numbers, fills,
    copies) at 200 µs or more a call is that work, not a toll, and is left out: one batched call takes as
    long (monisha_trace: 100 aten::randn of 2.9 ms each on the CPU, told "batch the calls" before).

    Example:
    big_gpt_eager_20steps (a 12-layer GPT, bf16 autocast, eager) on an H200: aten::to is called 271
    times per step (32.8 µs each, autocast's casts of the fp32 weights), and the GPU is idle 7.3 ms
    per step while the host is inside them, 13.9% of the 52.7 ms median step (warning). On gpu/launch_bound (200 tiny elementwise ops per
    step) the ops are aten::mul and aten::add, 100 calls each per step; their idle is launch-bound's
    (the tiny kernels explain it), so this rule stays silent there.

    Impact:
    Per step: the GPU idle while the host is inside the calls of the listed ops (for kernels: inside
    their launch calls), not counting idle another finding claims (syncs, data loading, compiling, the
    profiler, launch-bound's tiny-kernel ops): what batching or fusing them could save at most (upper
    bound; the batched op still costs one call). Host time hidden behind GPU work saves nothing and is
    not counted. Without a GPU the calls' own host time counts. Before, each op was its own warning
    with its wall time as the cost, hidden or not, and restated overhead-bound.

    A kernel's (or copy's) row gives its launch calls and its GPU time apart, and its cost counts a
    blocking copy's launch call and the copy once (issue 35: copies' CPU calls summed with their GPU
    time, 181.7 ms claimed where the GPU ran 82.7 ms). Per-step figures are shares of the mean step.

    Fix:
    Batch the work (one op on a stacked tensor instead of a loop of ops on slices), use the
    `torch._foreach_*` / fused optimizer variants (`fused=True`), keep the weights in the compute dtype
    so autocast does not cast them every step, fuse with torch.compile, or replay the whole step as a
    CUDA graph so the per-call host cost disappears (already-compiled code: the CUDA graph).

step-word = { $step ->
    [step] step
   *[window] window
  }
source = { $source ->
    [loop] a loop of calls
    [optimizer] in the optimizer's step
    [cast] dtype casts
   *[compiled] in compiled code
  }
hidden = { $has_gpu ->
    [yes] { $idle_us } of it with the GPU idle
   *[no] { $idle_us } of host time
  }
call-item = { $kind ->
    [kernel] kernel { $name } { $per_step }x per { step-word } ({ source }): { $launch_us } of launch calls and
        { $gpu_us } on the GPU per { step-word }, { hidden }
   *[op] op { $name } { $per_step }x per { step-word } ({ source }), { $avg_us } each, { $cost_us } per
        { step-word }, { hidden }
  }
message = { $count } op(s) called very many times per { step-word }: { $calls }. Together { $has_gpu ->
        [yes] the GPU waits while the host is inside them
       *[no] the host spends in them
    }: { $idle_us } per { step-word }, { $share } of the { $whole_us } { $step ->
        [step] mean step.
       *[window] window.
    }
advice-item = { $source ->
    [loop] Batch the loop: one op on a stacked tensor (torch.stack, torch._foreach_*) instead of one call per
        slice, or torch.compile the loop so the calls fuse.
    [optimizer] Pass fused=True to the optimizer (Adam, AdamW, SGD): its update becomes one kernel per group.
    [cast] These are dtype casts every step (autocast casting fp32 weights): keep the weights in the compute
        dtype (model.to(torch.bfloat16)), or torch.compile the step so the casts fuse.
   *[compiled] They run inside compiled code: capture it as a CUDA graph (torch.compile(mode='reduce-overhead')).
  }
advice = { $advices }{ $graph ->
    [yes] {" "}A CUDA graph of the whole step also pays the per-call cost once.
   *[no] {""}
  }
action = { $source ->
    [loop] batch the calls into one op on stacked tensors or torch.compile the loop
    [optimizer] pass fused=True to the optimizer
    [cast] keep the weights in bf16 or torch.compile the step
   *[compiled] capture the step as a CUDA graph (mode='reduce-overhead')
  }
fix = { $name } is called { $per_step }x per { step-word } ({ source }), { $has_gpu ->
        [yes] { $call_idle_us } of GPU idle
       *[no] { $call_idle_us } of host time
    } per { step-word }: { action }
basis = { $has_gpu ->
    [yes] GPU idle while the host is inside the listed calls, per step, without idle other findings claim (syncs,
        data loading, compiling, tiny kernels' launches); upper bound: a batched call still costs one call
   *[no] host time of the listed calls, per step (no GPU to hide their cost behind); upper bound
  }
one-of-many = one of { $per_step } calls { $steps ->
    [yes] per step
   *[no] in the window
  }
