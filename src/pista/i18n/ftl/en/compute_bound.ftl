## compute-bound: the text of its findings, in English
title = Compute bound: the GEMMs against the card's ceiling

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    The verdict is compute-bound (the GPU is busy most of the window and Self CUDA is of the same
    order as Self CPU) with the GPU time spread over many kernels, and the tensor-core GEMMs among them
    run measurably below the card's ceiling (or near it, while other work takes more of the GPU). It
    names the GEMM kernels with the most time to gain: their FLOPs (from the launching ops' recorded
    shapes) over their time, against the ceiling of the card for their dtype (`pista.efficiency`).

    Why:
    When the GPU is the limit, only cheaper GPU work shortens the step, and the GEMMs are where the
    card's peak is known: a GEMM at half the ceiling is time to win back with better shapes or
    kernels; one at the ceiling is not. Saying "the GPU is the limit" alone repeats the verdict.

    Example:
    gpu/gpt_bf16_fused (GPT training step, bf16, H200, compute-bound): its biggest GEMM,
    nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT, runs at 729 TFLOP/s over 75 calls, near the
    H200's measured 757 bf16 ceiling; the GEMMs' time above the ceiling is 52.6 µs of a 16.4 ms step
    (0.3%), so the rule says nothing there: the step's time is in the other kernels.

    Impact:
    Per step: the sum over tensor-core GEMM calls (bf16, fp16, fp8, tf32) of their time minus their
    FLOPs at the card's ceiling (0 for calls above 90% of it, the ceiling's own spread); kernels without
    a FLOP count (conv, attention, elementwise) count nothing, so it is a lower bound for the GPU time
    to gain. fp32 and fp64 GEMMs are left to fp32-gemm/fp64-gemm (their lever is the precision). Under
    1% of the step it is silent. A GEMM kernel at 75% of the ceiling or more (NEAR_PEAK_SHARE, in
    pista.rules._dominant: autotuning measured no gain there) counts nothing; where every GEMM runs
    there and another kind of work takes more of the GPU than they do, the rule says so at info,
    claiming nothing, and points at that work (tl_h100_qwen05: GEMMs at 82% of the ceiling, elementwise
    56% of the GPU time; review 3 of issue 35 marked its "Start with the GEMM ... max-autotune"
    misleading). Where one kernel or op dominates, dominant-event says it (with its efficiency) and
    this rule is silent: one finding, not two (issue 14: it used to print "the GPU is the limit"
    beside dominant-event on every compute-bound trace, always info).

    Fix:
    For the GEMMs named below 75% of the ceiling: shapes that fill the card (multiples of 64; batch
    small GEMMs into one), let `torch.compile(mode="max-autotune")` pick kernels for the shapes, and
    check the rest of the GPU time (elementwise, attention, the optimizer) with the table and Nsight
    Compute. Near the ceiling, leave the GEMMs: the time is in the other work.

kernel-item = { $name } ({ $calls } calls, { $total_us }, { $tflops } TFLOP/s { $dtype }, { $share } of { $ceiling })
how = { $measured ->
    [yes] measured
   *[no] estimated from the datasheet
  }
# the purpose of the GPU work that takes the most time (pista.purpose.PURPOSES)
purpose = { $other ->
    [gemm] gemm
    [conv] conv
    [attention] attention
    [optimizer] optimizer
    [cast] cast
    [elementwise] elementwise
    [reduction] reduction
    [copy] copy
    [memset] memset
    [communication] communication
    [compile] compile
   *[other] other
  }
message = { $kind ->
    [near] The GPU is busy { $busy }% of the window with no single kernel dominating. Its tensor-core GEMMs take
        { $gemm_step_us } per step ({ $gemm_percent }% of the GPU time) at { $span } of this { $card }'s ceilings
        ({ how }): near what a GEMM reaches on this card ({ $kernels }). The larger cost is elsewhere: { purpose }
        kernels take { $other_us } per step, { $other_percent }% of the GPU time.
   *[headroom] The GPU is busy { $busy }% of the window (Self CUDA { $self_device_us }, Self CPU { $self_cpu_us }) with
        no single kernel dominating. Its tensor-core GEMMs take { $gemm_us } and { $headroom_step_us } per step more
        than at this { $card }'s ceilings ({ how }); most to gain in { $kernels }.
  }
advice = { $kind ->
    [near] Leave the GEMMs as they are: at { $span } of the ceiling, torch.compile(mode='max-autotune') finds no faster
        kernel for them; { $named ->
            [yes] start with the { purpose } time ({ $other_percent }% of the GPU time): see { $named_by }
           *[no] the { purpose } time ({ $other_percent }% of the GPU time) is in the table
        }.
   *[headroom] Start with { $top } ({ $top_share } of the { $top_dtype } ceiling): check its shapes (multiples of 64;
        batch small GEMMs into one) and let torch.compile(mode='max-autotune') pick kernels for them; the GPU time
        outside GEMMs (elementwise, attention, the optimizer) is in the table.
  }
fix = { $kind ->
    [near] The GEMMs run at { $span } of the card's ceilings: leave them; the { purpose } kernels ({ $other_percent }%
        of the GPU time) are the larger cost.
   *[headroom] { $top } runs at { $top_tflops } of { $top_ceiling } TFLOP/s ({ $top_dtype }), { $top_headroom_us } per
        step to gain: fix its shapes or autotune it (torch.compile(mode='max-autotune')).
  }
basis = { $kind ->
    [near] none claimed: a GEMM at 75% of the card's ceiling or more runs near what the card gives (max-autotune found
        nothing faster for such GEMMs)
   *[headroom] per tensor-core GEMM call, its time minus its FLOPs at the card's ceiling ({ how }), summed per step;
        kernels without FLOPs count nothing (a lower bound)
  }
slow-call = { $tflops } of { $ceiling } TFLOP/s; { $headroom_us } above the ceiling
