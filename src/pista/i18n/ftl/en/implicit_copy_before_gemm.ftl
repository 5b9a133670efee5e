## implicit-copy-before-gemm: the text of its findings, in English
title = The GEMM library's own memset/copy before each GEMM costs GPU time

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A `Memset` or a `Memcpy DtoD` that the program never asked for, launched by a GEMM op (aten::mm,
    aten::addmm, a cuDNN convolution...) right before that op's own GEMM kernel on the same stream, when
    together they cost a measurable share of the step. Below that the rule is silent: the memset is
    normal.

    Why:
    cuBLAS/cuBLASLt (and cuDNN) clear a few bytes of their workspace before many GEMM kernels: the
    cooperative nvjet kernels (`..._coopA_...`, `..._coopB_...`), segment-K xmma kernels, CUTLASS SIMT
    GEMMs, implicit-GEMM convolutions. It is a 4-byte `Memset (Device)` before every such call, with or
    without an epilogue: plain aten::mm in seed_mm4096_warm has it as much as the compiled addmm with a
    bias in seed_mm4096_compile (this rule's docs used to blame the fused epilogue; they were wrong). On
    the GPU it costs the memset (under 1 µs) and the gap before the GEMM; on the host one more
    cudaMemsetAsync per GEMM, which is host overhead like any launch. For big GEMMs that is nothing; it
    adds up only for many small GEMMs on a GPU-bound stream, and it explains "Memset (Device)" rows in
    the table that no line of the program wrote.

    Example:
    `seed_mm4096_compile` (compiled matmul_add at 4096, addmm with a bias epilogue): in every step
    aten::addmm issues cudaMemsetAsync (13.7-19.4 µs of host time) and a 0.768 µs Memset (Device) on
    stream 7, then nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT starts 19.8-24.0 µs later, when
    the host has launched it: the GPU lost the 0.8 µs memset, 0.2% of the step.

    Impact:
    Per step, what the GPU would gain without the memsets: where the GEMM was already queued when the
    memset ran, the time from the memset's start to the GEMM's start (the memset and the gap it adds);
    where the GPU was waiting for the host to launch the GEMM, the memset's own time only (the host's
    cudaMemsetAsync is host overhead, counted by overhead-bound). Silent under 1.5% of the step, where
    the step is at least the GPU work it holds (a GPU-bound trace's ProfilerStep spans end once the
    host has queued the step: seed_mm4096_warm's are 160 µs for 213 µs of GPU work per step). On the
    fixtures it stays silent everywhere: seed_mm4096_warm 0.9%, gpu/bias_addmm 1.0%, gpu/resnet50_bf16
    0.4%, gpu/gpt_bf16_fused 0.2%, big_gpt_eager_20steps 0.05%; it used to fire (info) on every trace
    with an addmm GEMM.

    Fix:
    Usually nothing. When it matters (many small GEMMs, GPU-bound): capture the step as a CUDA graph
    (`torch.compile(mode="reduce-overhead")`), batch the small GEMMs into one (bmm), or try another
    layout or dtype, which may pick a kernel without the preparatory memset.

group-item = { $count } x { $fill } from { $op } before { $gemm }{ $steps ->
        [one] {" "}in step { $step_list }
        [few] {" "}in steps { $step_list }
        [range] {" "}in steps { $first }-{ $last } ({ $n } steps)
       *[none] {""}
    }
message = { $pairs } memset/copy the program did not write ran right before their op's own GEMM kernel: { $groups }{ $more ->
        [yes] ; and { $more_groups } more kind(s)
       *[no] {""}
    }. { $device_us } on the GPU and { $host_api_us } of host API calls; the GEMM starts { $gap_min_us }-{ $gap_max_us }
    after it, already queued in { $queued } of { $pairs } cases. Without them the GPU would gain { $cost_us } per step,
    { $share }% of the step.
advice = The GEMM library (cuBLAS, cuDNN) clears its workspace before every { $gemm } call; it costs time here because
    the GEMMs are many and short. Batch them into fewer, larger GEMMs (torch.bmm, a larger batch), or capture the step
    as a CUDA graph (torch.compile(mode='reduce-overhead')); another layout or dtype may pick a kernel without the
    memset.
fix = { $op } clears the GEMM library's workspace before each of its { $count } { $gemm } calls, { $cost_us } of GPU
    time per step: batch the small GEMMs or capture the step as a CUDA graph.
basis = the GPU time from each memset's start to its GEMM's start where the GEMM was already queued, the memset alone
    where the GPU waited for the host, per step
fill = launched inside { $op }; costs the GPU { $cost_us }
fill-call = its host API call, { $dur_us }
gemm-after = the GEMM, starts { $gap_us } after it on the same stream{ $queued ->
        [yes] {" "}(already queued)
       *[no] {" "}(launched after it)
    }
