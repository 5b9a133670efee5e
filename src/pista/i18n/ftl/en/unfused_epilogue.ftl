## unfused-epilogue: the text of its findings, in English
title = A GEMM's bias or activation runs as a separate kernel

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A GEMM followed by a separate elementwise kernel on its output that the GEMM's epilogue could do:
    the op right after an `aten::mm`/`matmul`/`bmm`/`linear`/`addmm` in the same parent is a bias add
    (`aten::add` of a vector the size of the output's last dimension, after a GEMM without a bias of
    its own: a full-size add is a residual, not a bias) or an activation (`aten::relu`, `gelu`, `silu`, `sigmoid`, `tanh`), its first input has the GEMM's output
    shape (from `Input Dims`), and its kernel runs on the GEMM's stream.

    Why:
    cuBLAS(Lt) GEMMs apply a bias (and, through `torch._addmm_activation`, ReLU/GELU) in the epilogue,
    while the tile is still in registers, for almost nothing. As a separate kernel the same bias add
    reads and writes the whole output once more from memory.

    Example:
    seed_mm4096_warm on an H200: `torch.add(torch.matmul(x, w), b)` at 4096 bf16. The GEMM runs at
    803 TFLOP/s (174.5 µs), then `aten::add` launches an `elementwise_kernel` of 41.6 µs, 19.4% of the
    GPU time. gpu/bias_unfused is the same (GEMM 177.7 µs + add 42.1 µs); gpu/bias_addmm,
    `torch.addmm(b, x, w)`, runs one `..._bias_NNT` GEMM of 178.9 µs. Unprofiled the eager pair takes
    217-220 µs per call, `addmm` 175 µs and `F.linear` 176 µs (REVIEW.md).

    Impact:
    Per step: the separate elementwise kernels' time, an upper bound (the epilogue itself costs a
    little: 1.2 µs in gpu/bias_addmm). seed_mm4096_warm 41.3 µs (19.4% of the step, which lasts its
    213 µs of GPU work), gpu/bias_unfused 41.9 µs (19.3%). A residual add after a GEMM with its
    own bias (the GPT blocks' `h + proj(a)`) is not a bias and is not reported. New in issue 15. Silent on
    CPU-only traces: there `addmm` copies the bias into the output before the GEMM accumulates onto it,
    no pass saved (unprofiled on the project's CPU, matmul+add 12.3-13.1 ms, addmm 12.3-14.1 ms,
    F.linear 12.0-12.4 ms at 1024; gpu/cpu_matmul_add's adds took 7.9, 1.0 and 0.2 ms: noise).

    Fix:
    Write the bias into the GEMM: `torch.addmm(b, x, w)` or `F.linear(x, w_t, b)` (nn.Linear does);
    for an activation, `torch.compile` the block so the elementwise op is fused (or use
    `torch._addmm_activation` for ReLU/GELU).

pair-item = { $op } ({ $kind ->
        [bias] bias { $has_other ->
                [yes] { $other_shape }
               *[no] scalar
            }
       *[activation] activation
    }) on the { $has_out ->
        [yes] { $out_shape }
       *[no] scalar
    } output of { $gemm }{ $has_parent ->
        [yes] {" "}in { $parent }
       *[no] {""}
    }, { $calls }x per step: { $us } per step after { $gemm_us } of GEMM
message = { $pairs }. Together { $us } per step, { $gpu_share }% of the GPU time and { $step_share }% of the step,
    in kernels the GEMM's epilogue could have done.
bias-advice = Put the bias into the GEMM: torch.addmm(bias, x, w) or F.linear(x, w.T, bias) (what nn.Linear does)
    runs one GEMM with a bias epilogue instead of a GEMM and an add that reads and writes the whole output again.
activation-advice = For the activation, torch.compile the block (mode='max-autotune' can fuse it into the GEMM's
    epilogue) or call torch._addmm_activation(bias, x, w, use_gelu=...) for relu/gelu.
advice = { $kinds ->
    [both] { bias-advice } { activation-advice }
    [bias] { bias-advice }
    [activation] { activation-advice }
   *[none] {""}
  }
fix = { $op } after { $gemm }{ $has_parent ->
        [yes] {" "}in { $parent }
       *[no] {""}
    } takes { $pair_us } per step: { $kind ->
        [bias] use torch.addmm(bias, x, w) or F.linear(x, w.T, bias) so the bias is added in the GEMM's epilogue
       *[activation] torch.compile the block so { $op } fuses into the GEMM's epilogue (or torch._addmm_activation
            for relu/gelu)
    }
basis = the separate elementwise kernels' time per step (upper bound: the epilogue itself costs a little, 1.2 µs on
    a 4096 bf16 GEMM on the H200)
gemm-call = GEMM kernel { $kernel_us }
epilogue-call = separate { $kind ->
        [bias] bias add
       *[activation] activation
    } on the output of { $gemm }, kernel { $kernel_us }
