## autocast-casts: the text of its findings, in English
title = autocast casts the same fp32 weights every step

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Under `torch.autocast`, fp32 weights are cast to bf16/fp16 again in every step: copy kernels
    (`bfloat16_copy_kernel`, `direct_copy_kernel_cuda`) under `aten::linear > aten::to > aten::_to_copy`
    whose tensor is the op's weight or bias (its `Input Dims` beyond the first input), and in the
    backward pass their gradients cast back to fp32 (`ToCopyBackward0` of the same autograd sequence
    number). Casts of activations and explicit `.float()`/`.to()` calls are counted apart.

    Why:
    autocast keeps the parameters in fp32 and casts each one on use; every cast streams the weight
    through memory (read fp32, write bf16) and its gradient back (read bf16, write fp32), every step,
    for the same weights, and each is an op the host dispatches (aten::to > _to_copy > copy_ forward,
    ToCopyBackward0 backward). Keeping the weights in bf16 removes both.

    Example:
    gpu/gpt_autocast on an H200 (GPT, 6 layers, d=1024, fp32 parameters under autocast bf16): cast
    kernels take 1.442 ms per step, 9.2% of the GPU time; 100 of them per step are the 50 weights and
    biases and their gradients (527 µs per step), the rest are activations around the fp32 LayerNorms
    and residual adds and the loss's `.float()`; the host spends 2.96 ms per step in the weights' cast
    ops. gpu/gpt_bf16_fused, the same GPT with bf16 parameters, casts only the loss (289 µs per
    step). Unprofiled on GPT n=6, cast kernels take 1.95 ms per step with fp32
    parameters and 1.10 ms with bf16 ones, and the step 11.8 vs 8.8 ms (REVIEW.md). Re-measured on
    the H200 for this rule with series_mlp_eager's MLP and fused AdamW: 3.03-3.21 ms per step with
    fp32 parameters under autocast, 2.24-2.34 ms with bf16 parameters and no autocast.

    Impact:
    Per step: the weight casts' kernel time, forward and backward, times the GPU's busy share of the
    window (a host-bound step hides the rest: run_mlp_stack, an expert's replay without the casts saved
    ~750 µs where the full kernel time said 811), plus the host time of their cast ops (`aten::to` under
    the op, `ToCopyBackward0`) during which the GPU is idle: with bf16 weights none of them is
    dispatched. The casts alone, not an upper bound: bf16 parameters also make the fp32 ops around them
    cheaper (a bf16 copy of an fp32 master still costs one write per step, and kernel time saves wall
    time only where the GPU is the limit). gpu/gpt_autocast 2.04 ms (527 µs of kernels at 56% busy +
    1.75 ms of exposed host, 8.1%), big_gpt_eager_20steps 5.84 ms (11.1%), series_mlp_eager 1.02 ms
    (14.8%), run_mlp_stack 686 µs (14.9%): host-bound traces, where the dispatch is most of the
    saving. Counting the kernels alone made all three info; GPT n=6 measured unprofiled saves 3.0 ms
    per step with bf16 weights, far more than its 0.85 ms of cast kernels. New in issue 15.

    Fix:
    Keep the weights in bf16: `model.to(torch.bfloat16)` with an fp32 master copy in the optimizer
    (or a bf16 optimizer state where that converges), or `torch.compile` the model so the casts fuse
    into their neighbours.

shape = { $has_shape ->
    [yes] { $shape }
   *[no] scalar
  }
shape-item = { shape } { $per_step }x { $us }
message = { $weights } { $source } weights and biases of { $ops } are cast to { $target } every step and their
    gradients cast back: { $casts } cast kernels per step take { $weight_us } ({ $forward_us } forward,
    { $backward_us } backward), { $weight_share }% of the GPU time (per step by shape: { $shapes }), and the host
    spends { $host_us } per step dispatching them, { $exposed_host_us } of it with the GPU idle: { $share }% of the
    step in all. All cast kernels take { $cast_us } per step ({ $cast_share }% of the GPU time); the other
    { $other_cast_us } are activations and explicit .to()/.float() calls.
advice = Keep the weights in { $target }: model.to(torch.{ $torch_dtype }) with an fp32 master copy of the
    parameters in the optimizer, so no cast runs in the forward pass and no gradient is cast back; or torch.compile
    the model, which fuses the casts into their neighbours. Running the whole model in that dtype without autocast
    also removes the activation casts around fp32 ops.
fix = autocast casts { $weights } weights of { $ops } every step, { $weight_us } of cast kernels and
    { $exposed_host_us } of exposed host dispatch per step with their gradients: keep the weights in { $target }
    (model.to(...), fp32 master in the optimizer)
basis = the weight casts' kernel time per step, forward and backward, times the GPU's busy share (a host-bound step
    hides the rest), plus the host time of their cast ops with the GPU idle; the casts alone: bf16 parameters also
    make the fp32 ops around them cheaper (the GPT of REVIEW.md: 11.8 -> 8.8 ms a step unprofiled, its casts 1.95 ->
    1.10 ms)
weight-cast = cast of a { shape } weight for { $op }, kernel { $kernel_us }
grad-cast = its { shape } gradient cast back, kernel { $kernel_us }
