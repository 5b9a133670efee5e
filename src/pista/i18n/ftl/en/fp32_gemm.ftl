## fp32-gemm: the text of its findings, in English
title = GEMMs in full fp32 without tensor cores

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    Matrix multiplies in full fp32 on the CUDA cores instead of the tensor cores: GEMM ops
    (aten::mm, addmm, bmm, matmul, linear...) whose `Input type` is float and whose kernels are
    of the SIMT fp32 family (`sgemm`, `gemmSN`, `cutlass_80_simt_sgemm_*`, cuBLAS `xmma_gemm_f32f32_
    f32f32_f32_..._ffma_...`), not the TF32 (`..._tf32f32_...`), bf16/fp16 (`nvjet_..._h_`/`_bf16`) ones.

    Why:
    PyTorch's default for fp32 matmuls is full precision (`torch.get_float32_matmul_precision() ==
    "highest"`), which keeps them off the tensor cores. On Hopper that caps a large GEMM near 51
    TFLOP/s, while TF32 runs the same call several times faster and bf16 faster again; for training
    and most inference the lost mantissa bits do not matter. Cards before Ampere (V100, Turing) have
    no TF32: there the way onto the tensor cores is fp16 mixed precision; Pascal and older have no
    tensor cores at all, and the rule says nothing there. GeForce Ampere and Ada cards (RTX 30xx/40xx)
    run TF32 at their CUDA cores' fp32 rate (NVIDIA's GA102 and Ada whitepapers: RTX 3090 35.6 and
    35.6, RTX 4090 82.6 and 82.6 TFLOP/s): TF32 saves nothing there, bf16 autocast doubles the rate.

    Example:
    gpu/fp32_gemm on an H200: a 4096x4096x4096 fp32 matmul with TF32 off runs
    `sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_...` for 2.684 ms (51.2 TFLOP/s). With
    `torch.set_float32_matmul_precision("high")` (gpu/tf32_gemm) the same matmul picks
    `sm90_xmma_gemm_f32f32_tf32f32_f32_...` and takes 0.343 ms (400 TFLOP/s), 7.8x faster.

    Impact:
    Per step: what the fp32 GEMMs would save at the card's TF32 ceiling (fp16 on cards without TF32, bf16
    on cards where TF32 is no faster than fp32):
    per call, its time minus its FLOPs at that ceiling (`pista.efficiency`; a call without recorded
    shapes is taken to run at the card's fp32 ceiling). gpu/fp32_gemm: 2.30 ms of each 2.68 ms call at
    the H200's measured 355 TFLOP/s TF32 (the real TF32 run saved 2.34 ms), critical. An upper bound
    where the trace is host-bound (the GPU then waits for the host anyway). Under 1% of the step it is
    silent. It used to be a warning whatever it cost. The engine's replay then says what the step gains:
    where it gains nothing (the host sets the step's pace) and the GPU time freed is at least 10% of the step,
    the finding stays as information, at no step saving, saying so (pista.engine KEEP_OFF_PATH; review 4:
    a4000_sevit_warm's SIMT SGEMMs, 27% of the window on an RTX A4000 with the GPU idle 51%, and
    hta_v100_dfidx's volta_sgemm, 23% of a V100 step, were silent).

    Fix:
    `torch.set_float32_matmul_precision("high")` (or `torch.backends.cuda.matmul.allow_tf32 = True`)
    to use TF32, or run the model under `torch.autocast("cuda", dtype=torch.bfloat16)`; keep
    "highest" only where the extra precision is really needed. On V100/Turing: fp16 autocast with a
    GradScaler.

this-gpu = { $has_card ->
    [yes] { $card }
   *[no] this GPU
  }
target-text = { $known ->
    [yes] this { $card }'s { $target_name } ceiling of { $target_tflops } TFLOP/s ({ $measured ->
            [yes] measured
           *[no] estimated from the datasheet
        })
   *[no] { $target_name } (assumed { $speedup }x faster: { this-gpu } is not in pista's peak table)
  }
message = { $kernels } GEMM kernel(s){ $has_conv ->
        [yes] {" "}({ $conv_kernels } of them cuDNN's, for convolutions)
       *[no] {""}
    } ran in full fp32 on the CUDA cores{ $has_ops ->
        [yes] {" "}for { $ops }
       *[no] {""}
    }{ $has_shape ->
        [yes] {" "}(the longest { $batched ->
                [yes] { $b } x{" "}
               *[no] {""}
            }{ $m }x{ $n }x{ $k })
       *[no] {""}
    }: { $gemm_us }, { $share }% of the GPU time{ $has_rate ->
        [yes] {" "}at { $rate } TFLOP/s
       *[no] {""}
    }. At { target-text } they would take { $saved_us } less GPU time per step.{ $off_path ->
        [yes] {" "}As profiled the step does not wait for them: the GPU is busy { $busy }% of the window and waits
            for the host the rest, so the step gets shorter only once the host keeps the GPU busy (fix that first,
            then this).
       *[no] {""}
    }
advice = { $target ->
    [bf16] On { this-gpu } (a GeForce card) TF32 runs at the CUDA cores' fp32 rate, so
        torch.set_float32_matmul_precision('high') saves nothing: run the GEMMs under torch.autocast('cuda',
        dtype=torch.bfloat16), twice the fp32 rate on its tensor cores.
    [fp16] { $has_card ->
            [yes] { $card }
           *[no] This GPU
        } has no TF32: move the GEMMs onto its fp16 tensor cores with mixed precision, torch.autocast('cuda',
        dtype=torch.float16) and a torch.cuda.amp.GradScaler for training.
   *[tf32] Allow TF32 with torch.set_float32_matmul_precision('high') (or torch.backends.cuda.matmul.allow_tf32 =
        True), or run under torch.autocast('cuda', dtype=torch.bfloat16) so the GEMMs use the tensor cores.
  }
fix = { $has_ops ->
        [yes] { $ops }
       *[no] the GEMMs
    } { $single_op ->
        [yes] runs
       *[no] run
    } in full fp32{ $has_rate ->
        [yes] {" "}at { $rate_round } TFLOP/s
       *[no] {""}
    }, { $gemm_step_us } per step: { $target ->
        [fp16] torch.autocast('cuda', dtype=torch.float16)
        [bf16] torch.autocast('cuda', dtype=torch.bfloat16)
       *[tf32] torch.set_float32_matmul_precision('high')
    } saves about { $saved_us } of GPU time per step.
basis = { $off_path ->
    [yes] the replay of the profiled steps with the GEMMs at { $target_name } saves none of the step: they free
        { $saved_us } of GPU time per step that the host does not use yet
   *[no] per fp32 GEMM call, its time minus its FLOPs { $ceiling ->
            [yes] at the card's { $target_name } ceiling
           *[no] { $target_name } assumed { $speedup }x faster (GPU not in the peak table)
        }, summed per step (an upper bound: small GEMMs do not reach the ceiling, and where the host is the limit
        part of it stays hidden)
  }
simt-kernel = fp32 SIMT GEMM kernel{ $has_rate ->
        [yes] , { $rate } TFLOP/s
       *[no] {""}
    }
float-op = { $has_dims ->
    [yes] { "Input type float" }, dims { $dims }
   *[no] its input types were not recorded (record_shapes=False)
  }
