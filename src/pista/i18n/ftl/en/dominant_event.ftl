## dominant-event: the text of its findings, in English
title = One kernel, copy or op dominates the GPU time

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    One kernel, copy or memset (or one op, counting the device work it launched) holds most of the
    { -self-cuda-total }, on a trace that is not host-bound. For a GEMM the rule says how fast it runs
    against the card: its FLOPs (2*M*N*K from the launching op's recorded shapes) over its time, beside
    the card's datasheet peak and the ceiling a real GEMM reaches on it (`pista.efficiency`). This is
    also the compute-bound finding: the verdict says the GPU is the limit, this says where its time goes
    and whether there is anything left to gain in it.

    Why:
    Amdahl: shaving 10% off a kernel that is 95% of the GPU time saves 9.5%; making everything else
    free saves 5%. But a kernel already at the card's ceiling has nothing left to give: the only ways
    forward are less work or a lower precision, and saying "optimise it" sends the user after nothing.

    Example:
    `seed_mm4096_warm` (eager matmul_add at 4096, bf16, H200): nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT
    holds 80.3% of the 639.9 µs { -self-cuda-total }, 3 calls of 171.2 µs: 2*4096^3 FLOP each, 803 TFLOP/s,
    81% of the H200's 989 dense bf16 and above its measured 757: leave it (the seed's gain is its separate
    bias add). gpu/fp32_gemm: the 4096 fp32 GEMM at 51.2 TFLOP/s is at the fp32 ceiling (50.9): the
    lever is the precision (fp32-gemm). gpu/pageable_memcpy: a Memcpy DtoH holds 81.7%: a copy, not
    compute.

    Impact:
    What running the kernel at the card's ceiling for its dtype would save: per call, its time minus
    FLOPs / ceiling (0 for a call above 90% of it: the ceiling's own run-to-run spread), summed per
    step; the ceiling is measured on the H200 (bf16 756.7, tf32 355.2, fp32 50.9 TFLOP/s...) and
    estimated from the datasheet elsewhere. seed_mm4096_warm, seed_mm4096_compile,
    gpu/kernel_variability: 0 (info). For an fp32 or fp64 GEMM the saving is the precision's (fp32-gemm,
    fp64-gemm), for a copy the copy rules', for a kernel without a FLOP count (not a GEMM op) it is not
    estimated: 0, said in the basis. On a host-bound trace a faster kernel saves nothing (the GPU waits
    for the host either way): the rule is silent there (it used to speak on gpu/recompile,
    gpu/trailing_sync, seed_mm64_compile). It was always info; now severity follows the impact. The
    separate compute-bound finding is folded in here. A GEMM at 75% of the ceiling or more (NEAR_PEAK_SHARE,
    in pista.rules._dominant) claims nothing: autotuning measured no gain on such GEMMs (-30% to +0.5% on an
    H100 for the shapes of tl_h100_qwen05, tl_compile_triton and tl_sglang_prefilldecode), and review 3 of
    issue 35 marked "let max-autotune pick a better kernel" at 82-88% misleading.

    Fix:
    Fitted to what the numbers say: at the ceiling, leave the kernel (less work or fp8 where accuracy
    allows); near it (75% or more), leave it too and look at the rest of the GPU time and at the GPU's idle
    time; below it, shapes that fill the card (multiples of 64, batched small GEMMs, autotuning with
    `torch.compile(mode="max-autotune")`); fp32/fp64, a lower precision; a copy, fewer bytes from
    pinned memory without blocking. If the trace is host-bound, fix the host side first.

# the profiler's column, as it names it in every language
-self-cuda-total = Self CUDA total
how = { $measured ->
    [yes] measured
   *[no] estimated from the datasheet
  }
shape = { $has_shape ->
    [yes] {" "}({ $shape })
   *[no] {""}
  }
rate = { $has_rate ->
    [yes] {" "}It does { $gflop } GFLOP per call{ shape } at { $tflops } TFLOP/s{ $has_peak ->
        [yes] , { $peak_share } of the { $peak_tflops } TFLOP/s { $dtype } datasheet peak
       *[no] {""}
      }{ $has_ceiling ->
        [yes] {" "}and { $ceiling_share } of the { $ceiling_tflops } TFLOP/s { $dtype } ceiling of this { $card } ({ how })
       *[no] {""}
      }.
   *[no] {""}
  }
verdict = { $verdict_key ->
    [compute-bound] the GPU is the limit
    [balanced] neither side dominates
    [cpu-only] no GPU work
   *[other] { $verdict }
  }
message = { $kind ->
    [kernel] Kernel
    [copy] Copy
    [memset] Memset
   *[op] Op
  } { $name } holds { $share }% of the { $self_total_us } { -self-cuda-total }{ $launched ->
    [yes] , launched by { $launched_by }
   *[no] {""}
  }: { $calls } call{ $plural ->
    [yes] s
   *[no] {""}
  }, { $total_us } in all, { $avg_us } per call on average.{ rate } The GPU is busy { $busy }% of the window
    ({ $verdict }: { verdict }).{ $cause ->
    [below-ceiling] {" "}At the ceiling it would take { $step_headroom_us } less per step.
   *[other] {""}
  }
below-advice = { $below ->
    [tiles] its shape { $mnk } leaves tensor-core tiles partly empty: pad M, N and K to multiples of 64
        (vocabulary, hidden and batch sizes)
    [small] each call is too small to fill the card: batch such GEMMs into one (torch.bmm, a larger batch),
        or capture them in a CUDA graph
   *[autotune] let torch.compile(mode='max-autotune') pick a better kernel for this shape, or try the other
        layout (transpose an operand); confirm with Nsight Compute (ncu) what bounds it
  }
idle-part = the { $idle_pct }% of the window the GPU is idle
elsewhere = { $other_share ->
    [yes] ; look next at the other { $other_pct }% of the GPU time{ $idle_named ->
        [yes] {" "}and at { idle-part }
       *[no] {""}
      }
   *[no] { $idle_named ->
        [yes] ; look next at { idle-part }
       *[no] {""}
      }
  }
kind-word = { $kind ->
    [kernel] kernel
    [copy] copy
    [memset] memset
   *[op] op
  }
advice = { $cause ->
    [transfer] { $short } is a { kind-word }, not compute: move fewer bytes (keep tensors on the GPU, copy once, a
        smaller dtype), copy from pinned memory with non_blocking=True so it overlaps compute (see pageable-memcpy),
        and batch many small copies into one.
    [at-ceiling] Leave { $short } as it is: at { $tflops } TFLOP/s it runs as fast as this card runs { $dtype }.
        Only less work makes it faster (fewer or smaller GEMMs){ $lower ->
            [fp8] {" "}or fp8 (torch._scaled_mm, TransformerEngine) where accuracy allows
            [bf16] {" "}or bf16 (torch.autocast) where accuracy allows
           *[none] {""}
        }{ $other_share ->
            [yes] ; the other { $other_pct }% of the GPU time is where to look next
           *[no] {""}
        }.
    [near-ceiling] Leave { $short } as it is: at { $tflops } TFLOP/s, { $ceiling_share } of the card's { $dtype }
        ceiling, it runs near what a GEMM reaches on this card, and torch.compile(mode='max-autotune') finds no
        faster kernel for such GEMMs{ elsewhere }.
    [below-ceiling] { $short } runs at { $ceiling_share } of the card's { $dtype } ceiling: { below-advice }.
    [precision] { $short } runs in { $dtype } at { $tflops1 } TFLOP/s; the lever is its precision, not the kernel
        (see { $precision ->
            [fp32] fp32-gemm: TF32
           *[fp64] fp64-gemm: fp32/TF32
        } or bf16, where accuracy allows).
    [unknown-card] { $short } runs at { $tflops } TFLOP/s in { $has_dtype ->
            [yes] { $dtype }
           *[no] an unknown dtype
        }; compare that with your card's datasheet ({ $has_device ->
            [yes] { $device }
           *[no] the trace names no GPU
        } is not in pista's peak table).
   *[other] { $elementwise ->
        [yes] { $short } is not a GEMM: a memory-bound kernel is as fast as the bytes it moves; fuse it with its
            neighbours (torch.compile) or avoid the pass, and check its bandwidth with Nsight Compute (ncu).
       *[no] { $short } is not a GEMM op pista can count FLOPs for: check what bounds it with Nsight Compute (ncu)
            before changing it.
    }
  }
fix = { $cause ->
    [at-ceiling] { $short } runs at { $tflops } TFLOP/s, at this card's { $dtype } ceiling: leave it, nothing to
        gain in this kernel.
    [near-ceiling] { $short } runs at { $tflops } of { $ceiling_tflops } TFLOP/s ({ $dtype }), near this card's
        ceiling: leave it{ elsewhere }.
    [below-ceiling] { $short } runs at { $tflops } of { $ceiling_tflops } TFLOP/s ({ $dtype }),
        { $step_headroom_us } per step to gain: { below-advice }.
    [transfer] { $short } is { $share0 }% of the GPU time: move fewer bytes, from pinned memory with
        non_blocking=True.
    [precision] { $short } runs in { $dtype }: lower its precision (see { $precision }-gemm).
   *[other] { $short } is { $share0 }% of the GPU time: check what bounds it with Nsight Compute (ncu).
  }
basis = { $cause ->
    [at-ceiling] { basis-ceiling }
    [below-ceiling] { basis-ceiling }
    [near-ceiling] none claimed: at { $ceiling_share } of the card's { $dtype } ceiling a GEMM runs near what the
        card gives (max-autotune found nothing faster for such GEMMs)
    [precision] not counted here: what a lower precision saves is { $precision }-gemm's
    [transfer] not estimated here: a copy's cost is the copy rules' (pageable-memcpy, host-sync)
    [unknown-card] not estimated: the GPU ({ $has_device ->
            [yes] { $device }
           *[no] unnamed
        }) is not in pista's peak table
   *[other] not estimated: no FLOP count for this kernel (pista counts the FLOPs of GEMM ops only)
  }
basis-ceiling = per call, its time minus its FLOPs at the card's { $dtype } ceiling ({ $ceiling_tflops }
    TFLOP/s, { how }), summed per step
instance = longest instance{ $has_tflops ->
    [yes] , { $tflops } TFLOP/s
   *[no] {""}
  }
