## cpu-fp32-gemm: the text of its findings, in English
title = fp32 GEMMs on a CPU with native bf16
severity-exception = info where the trace does not say the CPU has native bf16 GEMMs (no pista_host), or does not hold the GEMMs' dtype (record_shapes off): the saving is conditional

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    On a CPU-only trace, matrix multiplies (aten::mm, addmm, bmm, baddbmm, addbmm) run in fp32 on a CPU
    that has native bf16 GEMMs (AVX512-BF16 or AMX), and they hold a large share of the step. The CPU's
    abilities are not in a Kineto trace: pista's capture (`pista run`, `pista profile`, the training
    callbacks) writes them into the trace as `pista_host`. Without it (a trace from elsewhere) the rule
    speaks only where the fp32 GEMMs hold MIN_UNKNOWN_CPU_SHARE of the step, at info, and says how to
    check the CPU; where `pista_host` says the CPU has no bf16 GEMMs it is silent. A trace recorded
    without record_shapes holds no dtype for any op: its GEMMs are taken as fp32 (torch's default) and
    the finding, at info, says the dtype was not recorded.

    Why:
    oneDNN runs bf16 GEMMs on AVX512-BF16 (`vdpbf16ps`) or AMX tiles at two to many times the fp32
    rate, and moves half the bytes. Under `torch.autocast("cpu", dtype=torch.bfloat16)` the GEMMs run in
    bf16 while the parameters, the loss and the reductions autocast keeps in fp32 stay fp32; for
    training and most inference the lost mantissa bits do not matter.

    Example:
    gpu/cpu_linear_host (`{ "pista run linear" } --device cpu`: nn.Linear 1024, fp32, on a 2-core AMD EPYC
    with AVX512-BF16): aten::addmm and aten::mm take 24.3 ms of a 26.9 ms step. The same step in bf16
    (gpu/cpu_linear_bf16, `--dtype bf16`) takes 14.3 ms, its GEMMs 12.0 ms (2.03x); unprofiled, the
    step went 37.6 to 18.6 ms under autocast.

    Impact:
    The fp32 GEMMs' own CPU time per step times 1 - 1/CPU_BF16_SPEEDUP (2.0, the pair above; a bare
    1024^3 matmul ran 2.4-3.1x faster). Where cpu-threads finds idle cores the GEMM time is first
    scaled to the full thread count, so the two findings do not count the same time twice
    (gpu/cpu_linear_1thread: threads 24.1 ms, then bf16 12.1 ms, not 24.4 ms). An estimate: AMX CPUs
    gain more, the casts autocast adds cost a little, and SDPA or convolutions autocast also lowers
    are not counted. Silent under MIN_STEP_SHARE. New in the issue "Your code and your memory".

    Fix:
    Run the forward pass under `with torch.autocast("cpu", dtype=torch.bfloat16):` (or keep the model
    in bf16 for inference: `model.to(torch.bfloat16)`); `{ "pista run WORKLOAD" } --device cpu --dtype bf16`
    measures it on the built-in workloads.

check = lscpu | grep -oE 'avx512_bf16|amx_bf16'
message = { $ops } run in fp32{ $has_rate ->
        [yes] {" "}at { $rate } GFLOP/s
       *[no] {""}
    }: { $gemm_us } per step, { $share }% of the step{ $dtype_known ->
        [no] {" "}(their dtype was not recorded: record_shapes was off; fp32 is torch's default)
       *[yes] {""}
    }{ $known_cpu ->
        [no] . The trace does not say which CPU recorded it: if that CPU has AVX512-BF16 or AMX ({ check }), bf16
            GEMMs ran { $speedup }x faster on such a CPU, about { $saved_us } less per step; without them bf16 is
            slower.
       *[yes] , on a CPU with { $isa } where bf16 GEMMs ran { $speedup }x faster: about { $saved_us } less per
            step{ $threads ->
                [yes] {" "}(counted after cpu-threads' fix: { $threads_scale } of the GEMM time is left on all
                    cores)
               *[no] {""}
            }.
    }
advice = Run the forward pass under `with torch.autocast("cpu", dtype=torch.bfloat16):` (the backward follows it);
    for inference you can keep the model in bf16 (model.to(torch.bfloat16)). Check the loss curve or the outputs
    once: bf16 keeps fp32's range with fewer mantissa bits.
fix = { $known_cpu ->
    [no] { $op } runs in fp32: if the CPU has AVX512-BF16 or AMX ({ check }), torch.autocast("cpu",
        dtype=torch.bfloat16) saves up to { $saved_us } per step
   *[yes] { $op } runs in fp32 on a CPU with { $isa }: torch.autocast("cpu", dtype=torch.bfloat16) saves about
        { $saved_us } per step
  }
basis = the fp32 GEMMs' own CPU time per step times 1 - 1/{ $speedup }, the bf16 speed-up of the GEMMs measured on
    a 2-core AMD EPYC with AVX512-BF16 (gpu/cpu_linear_host vs gpu/cpu_linear_bf16); an estimate for other CPUs and
    shapes{ $threads ->
        [yes] ; the GEMM time first scaled by { $threads_scale }, the threads cpu-threads would add
       *[no] {""}
    }{ $known_cpu ->
        [no] ; conditional: the trace does not say the CPU has bf16 GEMMs
       *[yes] {""}
    }
fp32-call = fp32 GEMM{ $has_dims ->
        [yes] , inputs { $dims }
       *[no] {""}
    }{ $has_rate ->
        [yes] , { $rate } GFLOP/s
       *[no] {""}
    }
