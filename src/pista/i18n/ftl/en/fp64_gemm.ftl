## fp64-gemm: the text of its findings, in English
title = GEMMs in double precision (fp64)

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Matrix multiplies and convolutions in double precision: GEMM ops whose `Input type` is double
    (`torch.float64` tensors, often by accident: `torch.from_numpy` of a float64 array, a Python float
    list, `dtype=torch.double`), on kernels such as `sm90_xmma_gemm_f64f64_...`.

    Why:
    fp64 units are a small part of a GPU: on an H200 the fp64 tensor cores peak at 67 TFLOP/s against
    989 for bf16 and 494 for TF32 (about 15x and 7x), and consumer and inference cards (L4, T4) run fp64
    at 1/32-1/64 of fp32. Deep learning rarely needs 53 mantissa bits.

    Example:
    gpu/fp64_gemm on an H200: a 4096x4096x4096 fp64 matmul runs `sm90_xmma_gemm_f64f64_f64f64_...` for
    2.29 ms per call (60 TFLOP/s, above the 56 measured); the same matmul in fp32 with TF32
    (gpu/tf32_gemm) takes 0.343 ms.

    Impact:
    Per step: per call, its time minus its FLOPs at the card's ceiling for the precision it could run in
    (TF32 where the card has it, else fp32 where fp32 is faster than fp64, from `pista.efficiency`), an
    upper bound (the algorithm may need the precision). gpu/fp64_gemm: 1.94 ms of each 2.29 ms call.

    Fix:
    Keep tensors in float32 (`.float()`, `torch.from_numpy(a).float()`, `torch.set_default_dtype(
    torch.float32)`) with `torch.set_float32_matmul_precision("high")`, or bf16 under autocast; keep
    float64 only for the few reductions that need it.

message = { $calls } fp64 GEMM call(s) ({ $ops }; largest { $shape }) take { $gemm_us } on { $kernel } at { $tflops }
    TFLOP/s; in { $target } the { $has_card ->
        [yes] { $card }
       *[no] card
    } reaches { $target_tflops } TFLOP/s, { $saved_us } less per step.
advice = Keep the tensors of { $ops } in { $target_key ->
        [tf32] float32 with TF32 (torch.set_float32_matmul_precision('high'))
       *[fp32] float32
    } (or bf16 under autocast): find where float64 comes in (torch.from_numpy of a float64 array, Python floats,
    dtype=torch.double) and convert once; keep float64 only for the reductions that need it.
fix = { $op } runs in fp64 ({ $shape }, { $tflops } TFLOP/s): cast its inputs to float32 with TF32 or to bf16, saving
    up to { $saved_us } per step.
basis = per call, its time minus its FLOPs at the card's { $target } ceiling ({ $target_tflops } TFLOP/s), per step
    (upper bound: the algorithm may need fp64)
fp64-call = fp64 GEMM at { $tflops } TFLOP/s; { $saved_us } less in a faster precision
