## unfused-elementwise: the text of its findings, in English
title = Chains of memory-bound elementwise kernels, each a full pass over memory

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Elementwise work that one fused kernel would do in one pass, run as many eager kernels, each a pass
    over memory. Two shapes of it:
    - Code written out op by op (pista.rules._written_out): runs of at least 4 eager kernels of at
      least 3 distinct primitive ops (mul, add, pow, mean, rsqrt, cat, neg, silu, casts...) back to
      back on one stream, as an RMSNorm (pow, mean, rsqrt, mul), a rotary embedding (mul, neg, cat,
      add) or a SiLU gate with its casts runs without torch.compile. Reported where the runs take 10%
      of the GPU time or more, named by what they compute and by the nn.Module and source line that
      run them (with_stack traces), beside the share of all eager elementwise, reduction and cast
      kernels. Native fused ops (layer_norm, gelu, softmax, a { "batch norm" }) are one pass already and are
      not counted; GELU's tanh formula is tanh-gelu's and an attention's score passes manual-attention's.
    - Chains over tensors of the same size: consecutive kernels on one stream (purpose "elementwise",
      nothing else between them) whose launching ops take a first tensor of the same shape (`Input
      Dims`), each moving its bytes near the card's bandwidth (bytes = the full-size tensor inputs plus
      the output, at the dtype of `Input type`).
    Kernels already made by a compiler (Triton `triton_*`) and kernels under a compiled region are left out.

    Why:
    An elementwise kernel on a large tensor does almost no arithmetic: its time is one read and one
    write of the tensor at the memory bandwidth. N such ops in a row stream the data N times where one
    fused kernel (torch.compile) streams it once. An RMSNorm written out in fp32 is 8 passes (upcast,
    square, mean, add, rsqrt, scale, downcast, weight) over an activation that F.rms_norm reads and
    writes once.

    Example:
    tl_h100_qwen05 (TraceLens: Qwen1.5-0.5B's forward, batch 16 x 559, bf16, H100): eager elementwise,
    reduction and cast kernels take 28.7 ms a step (63% of the GPU time); 17.3 ms of it is written-out
    code: the rotary embedding in Qwen2Attention (apply_rotary_pos_emb: mul > neg > cat > mul > add, q
    and k, then 3 copies) 9.06 ms, Qwen2RMSNorm (add > copy_ > pow > mean > add > rsqrt > mul > copy_
    > mul) 8.25 ms. The same model (its shapes, random weights) measured on an H100 (torch 2.11):
    29.9 ms eager, 23.0 ms with F.rms_norm in Qwen2RMSNorm, 18.2 ms under torch.compile.
    gpu/elementwise_chain on an H200: six eager ops (mul, add, relu, mul, sigmoid, sub) on a 64 Mi
    fp32 tensor, 126-187 µs each at 4.1-4.3 TB/s (the card's measured 4.27), 825 µs per step.
    gpu/elementwise_compiled runs the same chain under torch.compile as one
    `triton_poi_fused_add_mul_relu_sigmoid_sub_0` kernel of 127 µs.

    Impact:
    Per step: for each written-out run, its kernel time less one fused pass (one read and one write of
    its largest tensor at the card's bandwidth, and no less than its longest kernel, which makes such a
    pass already; the engine replays the run's kernels shrunk to that, not removed); for each chain,
    (N-1)/N of its time, the passes fusion saves, an upper bound (the fused kernel still reads every
    distinct input once). tl_h100_qwen05: 17.3 ms of runs fused to 2.62 ms, 14.4 ms a step (29.7%)
    predicted without the profiler, against 11.7 ms (39%) measured on its H100 twin above.
    savings/h100/elementwise_rmsnorm (Llama-style RMSNorm and SwiGLU written out, 4 blocks, H100):
    measured 39.9% by torch.compile; the rule's own estimate 29.0%. gpu/elementwise_chain 687 µs
    (77.9% of the step, which lasts its GPU work); gpu/resnet50_bf16's residual add + ReLU pairs
    (forward) and add_ + threshold_backward pairs (backward) 1.78 ms (5.5%). New in issue 15; the
    written-out runs in issue 35.

    Fix:
    `torch.compile` the model, or the function (or the module) that holds the run or the chain. Without
    compile, the fused op where one exists: `F.rms_norm` / `nn.RMSNorm` for an RMSNorm (Liger Kernel's
    in a transformers model), a fused rotary kernel (flash_attn's `apply_rotary_emb`), a fused SwiGLU
    without .float()/.to() round trips; by hand, fold scalar ops into one (`torch.addcmul`; in-place
    ops do not help: they still make a pass each) or write one kernel (Triton).

ceiling-text = { $ceiling_tbps } TB/s, { $ceiling_source ->
    [measured] measured on the { $card }
    [datasheet] estimated for the { $card }
   *[trace] the best in this trace
  }
chain-item = { $kernels } kernels ({ $ops }) on { $shape } { $dtype }, { $count }x in the window: { $us } per step at
    { $tbps } TB/s
idiom-name = { $idiom ->
    [rmsnorm] RMSNorm
    [layernorm] LayerNorm
    [rotary] rotary embedding
    [gate] gated activation
   *[other] elementwise code
  }
where-text = { $where ->
    [both] {" "}in { $module } ({ $frame })
    [one] {" "}in { $where_one }
   *[none] {""}
  }
run-item = { idiom-name }{ where-text }: { $ops }, { $count }x in the window, { $us } per step
fused-op-item = { $idiom ->
    [rmsnorm] F.rms_norm(x, (d,), weight, eps) or nn.RMSNorm for the RMSNorm (a fused RMSNorm kernel, such as Liger
        Kernel's, in a transformers model)
    [layernorm] F.layer_norm or nn.LayerNorm for the LayerNorm
    [rotary] a fused rotary kernel for the rotary embedding (flash_attn.layers.rotary.apply_rotary_emb, Liger
        Kernel's liger_rotary_pos_emb)
   *[gate] a fused SwiGLU/GeGLU kernel for the gated activation, without a .float()/.to() round trip around it
  }
message = { $form ->
    [written] Eager elementwise, reduction and cast kernels take { $eager_us } per step ({ $eager_share }% of the GPU
        time); { $runs_us } of it ({ $runs_share }%) is code written out op by op, each op a pass over memory:
        { $runs }.{ $has_chains ->
            [yes] {" "}Besides, same-shape chains elsewhere: { $chains }.
           *[no] {""}
        } Fused, each run is about one pass over its largest tensor ({ ceiling-text }): { $fused_us } instead of
        { $runs_us }, about { $saving_us } saved per step, { $step_share }% of the step.
   *[chains] { $chains }. Each kernel runs near the memory bandwidth ({ ceiling-text }), so each is one more pass
        over the tensor: { $kernels } kernels take { $chain_us } per step ({ $gpu_share }% of the GPU time); one
        fused kernel per chain would save about { $saving_us }, { $step_share }% of the step.
  }
advice = { $form ->
    [written] torch.compile the model{ $has_modules ->
            [yes] {" "}(or the modules named: { $modules })
           *[no] {""}
        }: Inductor turns each run into one kernel that reads its inputs once and writes its result once; in-place
        variants do not help (each is still a pass).{ $has_fused ->
            [yes] {" "}Without compile, the fused ops: { $fused_ops }.
           *[no] {" "}Without compile, a hand-written Triton kernel does the same.
        }
   *[chains] { $gelu ->
            [yes] { $gelu_share }% of this is GELU's tanh formula written out (aten::pow, aten::tanh...):
                F.gelu(x, approximate='tanh') is one kernel forward and one backward (transformers:
                activation_function='gelu_pytorch_tanh').{" "}
           *[no] {""}
        }Fuse the chain ({ $chain_ops }): torch.compile the function or module that runs it, so Inductor emits one
        kernel that reads the inputs once and writes the result once; in-place variants do not help (each is still
        a pass). Without compile, a hand-written Triton kernel does the same.
  }
fix = { $form ->
    [written] { $runs_us } per step of elementwise code written out op by op ({ idiom-name }{ where-text } first):
        torch.compile it{ $idiom ->
            [rmsnorm] , or F.rms_norm(x, (d,), weight, eps) or nn.RMSNorm
            [layernorm] , or F.layer_norm or nn.LayerNorm
            [rotary] , or a fused rotary kernel
            [gate] , or a fused SwiGLU/GeGLU kernel
           *[other] {""}
        }
   *[chains] { $first_kernels } elementwise kernels in a row ({ $first_ops }) take { $first_us } per step at the
        bandwidth limit: torch.compile them into one kernel
  }
basis = { $form ->
    [written] per run written out op by op, its kernel time less one fused pass (one read and one write of its
        largest tensor at { ceiling-text }, and no less than its longest kernel), per step{ $has_chains ->
            [yes] ; plus (N-1)/N of each same-shape chain outside them
           *[no] {""}
        }
   *[chains] (N-1)/N of each chain's kernel time per step, the passes a fused kernel saves (upper bound)
  }
run-kernel = { $position } of { $length } in a run written out op by op ({ idiom-name }), launched by { $op }
chain-kernel = { $position } of { $length } in a chain, launched by { $op }, { $tbps } TB/s
