## manual-attention: the text of its findings, in English
title = Attention written out op by op: every step passes over the whole score tensor

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Attention written out op by op instead of one fused kernel: `q @ k^T`, a scale, a causal mask
    (`masked_fill`, `where` or an added mask), `softmax`, dropout, `@ v`, as nanoGPT without flash,
    transformers' "eager" attention and many hand-written models do. Each op between the two matmuls
    reads and writes the whole (batch, heads, queries, keys) score tensor, forward and backward, and
    autocast runs the softmax in fp32, so the scores are also cast both ways.

    Why:
    The score tensor grows with the square of the sequence: at 1024 tokens, 12 heads and a batch of 8 it
    is 100 M elements, 400 MB in fp32, for every layer. `F.scaled_dot_product_attention` (flash or
    memory-efficient attention) never writes it: it computes the softmax in tiles held on chip, so the
    scale, mask, softmax, dropout and casts cost no pass over memory at all, and their memory is free.

    Example:
    gpu/attn_manual (a GPT of 6 blocks, d=768, batch 8 x 1024, bf16 autocast, H200): 36 ops a step
    between the attention's matmuls launch 7.4 ms of kernels forward and 8.2 ms backward (masked_fill
    3.5 ms, the scores cast to fp32 and back, softmax, dropout); unprofiled the step takes 37.3 ms, and
    17.4 ms with `F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)`
    (gpu/attn_sdpa). transformers' GPT-2 with `attn_implementation="eager"` (gpu/attn_hf_eager): 14.1 ms
    of score kernels a step; 36.1 ms unprofiled against 23.1 ms with "sdpa".

    Impact:
    Replayed (pista.engine): the ops between the two matmuls (the scores' scale, mask, softmax, dropout and
    casts) go with their kernels, their backward nodes (matched by the autograd sequence number) and the host's
    time between them; the matmuls stay (the fused kernel still computes them). Without a timeline, the rule's
    own figure: those kernels' time times the GPU's busy share of the window. A GPU-bound model saves the
    kernels whole: review 4's tl_mi300_timesformer, 52.9 ms of score passes in a 99%-busy model part, read 16.2 ms
    (4.2%) at the window's 31% busy share, 52.9 ms (13.5%) replayed. Host-bound steps save less than measured,
    since the fused call also drops the matmuls' and reshapes' dispatch: gpu/attn_manual 11.1 ms replayed
    unprofiled (measured 19.9 ms), gpu/attn_hf_eager 4.0 ms (measured 13.0 ms); the busy-share figure had read
    15.2 and 8.8 ms.
    Under 1% of the step the rule is silent.

    Fix:
    `torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p,
    is_causal=True)` in place of the written-out attention (nanoGPT: `flash=True`); in transformers,
    `attn_implementation="sdpa"` (or "flash_attention_2") when loading the model.

shape = { $has_shape ->
    [yes] {" "}on { $shape } scores
   *[no] {""}
  }
message = { $layers } attentions per step compute softmax(q k^T) v op by op{ shape }: between the two matmuls,
    { $ops } each pass over the score tensor, { $forward_us } of kernels per step forward and { $backward_us }
    backward. A fused attention kernel never writes the scores: about { $saved_us } less GPU time per step.
advice = Call torch.nn.functional.scaled_dot_product_attention{ $masked ->
        [yes] (q, k, v, dropout_p=p, is_causal=True) for a causal (triangular) mask, attn_mask=mask for any other
            (a padding mask)
       *[no] (q, k, v, dropout_p=p)
    } in place of the matmul-mask-softmax-matmul code (nanoGPT: flash=True); for a transformers model, load it
    with attn_implementation='sdpa' (or 'flash_attention_2'). The scores' memory goes too.
fix = Attention runs op by op{ shape }, { $saved_us } of score-tensor kernels per step: use
    F.scaled_dot_product_attention (transformers: attn_implementation='sdpa').
basis = the kernel time of the ops between the attention's matmuls and of their backward nodes ({ $saved_us }
    { $per_step ->
        [yes] per step
       *[no] over the window
    }), times the { $busy }% of the window the GPU is busy; the matmuls, which a fused kernel still computes,
    are not counted
score-kernel = a pass over the scores ({ $op }{ $backward ->
    [yes] , backward
   *[no] {""}
  })
