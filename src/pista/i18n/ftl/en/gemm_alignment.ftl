## gemm-alignment: the text of its findings, in English
title = GEMMs on dimensions that are not multiples of 8 run on slow fallback kernels

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Tensor-core GEMMs (bf16, fp16, fp8, tf32) with a dimension that is not a multiple of 16 bytes of
    its dtype (8 bf16/fp16 elements, 16 fp8, 4 tf32) that run far below the trace's other GEMMs of
    that dtype: cuBLAS cannot use its aligned kernels for such a matrix and falls back to slower ones
    (on Hopper, Turing-era `cutlass_75_..._align1` kernels). The FLOPs come from the launching ops'
    recorded shapes (record_shapes).

    Why:
    A vocabulary of 50257 (GPT-2's) or any odd hidden size makes every GEMM that touches it, forward
    and backward, misaligned: the language-model head, often the biggest GEMM of the model, then runs
    at a fraction of the card's rate. Padding the dimension to a multiple of 64 costs a few unused rows.

    Example:
    `gpu/gpt2_conv1d` (transformers' GPT-2, 6 blocks, d=768, vocab 50257, bf16 autocast, batch 8 x 512,
    H200): the head's three GEMMs (4096x768 by 768x50257 forward, and the two backward) run on
    `cutlass_75_tensorop_bf16_s1688gemm` kernels at 94-145 TFLOP/s where the model's aligned GEMMs reach
    400-720: 7.9 ms per step, 36% of the GPU time. Unprofiled, with fused AdamW: 22.08 ms per step
    at vocab 50257, 20.61 ms at 50304.

    Impact:
    Per step, the misaligned calls' kernel time less their FLOPs at the time-weighted rate of the
    trace's aligned GEMMs of the same dtype (the GPU time padding gives back), times the share of the
    window the GPU is busy: GPU time saved shortens the step only where the GPU is the limit, and a
    host-bound step hides most of it. gpu/gpt2_conv1d: 6.4 ms of GPU time per step, 30% busy (profiled
    with stacks), 1.9 ms; measured unprofiled, padding saved 1.07-1.47 ms (the step turned host-bound).
    Without aligned GEMMs of that dtype to compare with, or under 1% of the step, the rule is silent. The
    matmuls of an attention written out that manual-attention reports are left to it: F.scaled_dot_product_
    attention removes them whatever the length (tl_h100_timesformer's bmm over 3137 tokens and tl_h100_owlv2's
    over 5185 were told "pad ... for a vocabulary": review 3 of issue 35). A GEMM whose odd dimension is a
    sequence length (twice among M, N and K of a batched GEMM, as an attention's, or the tokens per sample an
    embedding reads) is padded by padding every sequence, which all the token work pays for: where that costs
    more than the GEMMs give back (the padded share of the GPU time, at least), it is left out.

    Fix:
    Pad the dimension to a multiple of 64: `vocab_size=50304` (the extra logits are never targets; slice
    them off or leave them), hidden and feed-forward sizes in multiples of 64, batch x sequence in
    multiples of 8. A sequence length: pad the sequences to a multiple of 8 (`pad_to_multiple_of=8` in the
    tokenizer or the data collator, the padding masked), or run the attention as
    F.scaled_dot_product_attention.

group-item = { $op } { $batched ->
        [yes] { $b }x{" "}
       *[no] {""}
    }{ $m }x{ $k } by { $k }x{ $n } { $dtype } { $calls }x: { $us } per step at { $tflops } TFLOP/s ({ $kernel })
message = { $calls } GEMM calls on a dimension that is not a multiple of 8 ({ $dims }) take { $kernel_us } per step,
    { $gpu_share }% of the GPU time, where this trace's aligned GEMMs of the same dtype run at { $reference } TFLOP/s:
    { $groups }.
advice = { $sequence ->
    [yes] { $dim } is a sequence length (tokens per sample), not a weight's size: pad the sequences to { $pad_to } (a
        multiple of 8; pad_to_multiple_of=8 in the tokenizer or the data collator, the padding masked out of the
        attention and the loss), or run the attention as F.scaled_dot_product_attention, whose fused kernels take
        any length. cuBLAS then picks its aligned tensor-core kernels.
   *[no] Pad { $dim } to { $pad_to } (a multiple of 64): for a vocabulary, build the embedding and the output layer
        with the padded size (the extra logits are never targets); hidden and feed-forward sizes in multiples of 64,
        tokens per batch in multiples of 8. cuBLAS then picks its aligned tensor-core kernels.
  }
fix = { $sequence ->
    [yes] GEMMs over the sequence length { $dim } run at a fraction of the card's rate, { $kernel_us } per step: pad
        the sequences to { $pad_to } (pad_to_multiple_of=8).
   *[no] GEMMs on the dimension { $dim } run at a fraction of the card's rate, { $kernel_us } per step: pad it to
        { $pad_to } (a multiple of 64).
  }
basis = the misaligned GEMMs' kernel time less their FLOPs at the aligned GEMMs' { $reference } TFLOP/s
    ({ $gpu_saved_us } of GPU time { $per ->
        [step] per step
       *[window] over the window
    }), times the { $busy }% of the window the GPU is busy: GPU time saved shortens the step only where the GPU is
    the limit
call-note = { $tflops } TFLOP/s, against { $reference } for the aligned GEMMs
