## cudnn-setup: the text of its findings, in English
title = cuDNN sets up each new shape on the host while the GPU waits

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    cuDNN calls (convolutions and their backward, scaled_dot_product_attention's cuDNN backend, cuDNN
    RNNs) that hold the host for far longer than a launch, step after step, with the GPU idle: cuDNN
    sets up each new problem shape on the host. Without `cudnn.benchmark` it builds an execution plan
    (for attention, a whole graph, compiled for that sequence length); with it, it times every
    algorithm on the GPU, synchronizing between them. Recorded input shapes show which calls had a
    shape not seen earlier in the trace.

    Why:
    The setup is cached per shape, so fixed shapes pay it once; shapes that change every step pay it
    every step. A KV cache that grows by a token per decoding step gives attention a new sequence
    length every step; multi-scale training or a last, smaller batch gives convolutions new sizes.

    Example:
    `gpu/kv_decode` (GPT-2 124M, fp16, batch 1, greedy decoding with a KV cache, H200, torch 2.11):
    each token's first aten::_cudnn_attention_forward spends ~70 ms on the host building a cuDNN
    graph for the new length, 76% of the 93 ms step. Unprofiled: 70.3 ms per token, 8.2 ms with SDPA
    pinned to the flash/efficient kernels, 7.7 ms on lengths already seen. `gpu/multiscale_benchmark`
    (ResNet-18, bf16, a new input size every step, `cudnn.benchmark=True`): 2.4-3.5 s steps of
    algorithm timing; `gpu/multiscale_plain` (the same without benchmark): ~1.5 ms of plan building in
    every convolution call, 84-105 ms steps.

    Impact:
    The GPU idle inside those calls, less what the same ops' other calls hold it idle (where they
    have any; else an upper bound), per step. Calls inside a cold step, a dead window, compile spans or
    new-shape GEMMs belong to those rules; one call alone is a first call (lazy-loading's).

    In a window without steps, set-up whose every shape (op, where shapes are not recorded) runs
    again after the last set-up call without set-up is a first pass, a cold forward: one-time, and the
    fix is a warm-up, not bucketing (issue 35: foreign/hta_alexnet, 1075.6 ms once, said "per step"
    with "bucket the input sizes" before; gpu/kv_decode without steps stays recurring: each token's
    length is never seen again).

    Fix:
    Attention: pin SDPA to the flash or memory-efficient kernels
    (`torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])`) or
    keep the length fixed (a static KV cache, padding to a few lengths). Convolutions: keep input sizes
    to a few buckets, warmed up before profiling; with `cudnn.benchmark` on and sizes that keep
    changing, turn it off.

steps = { $steps_hit ->
    [none] the window
    [one] step { $step_list }
   *[many] steps { $step_list }
  }
per = { $per_step ->
    [yes] per step
   *[no] in the window
  }
what = { $kind ->
    [attention] cuDNN's attention builds and compiles a graph for each new sequence length (a KV cache that
        grows by a token per step gives it a new one every step)
    [conv] cuDNN builds an execution plan for each new convolution shape
   *[rnn] cuDNN sets up its RNN for each new shape
  }
message = { $calls } calls of { $ops } in { steps } hold the GPU idle { $per_call_us } each (median){ $has_typical ->
        [yes] , against { $typical_us } in their other calls
       *[no] {""}
    }: { $once ->
        [yes] { $idle_us } once: the window's first pass, every shape runs again later without set-up
       *[no] { $step_idle_us } { per }
    }.{ $has_new ->
        [yes] {" "}{ $new_shapes } of them had an input shape not seen earlier in the trace.
       *[no] {""}
    }{ $benchmark ->
        [yes] {" "}They launch { $launches } kernels each and synchronize { $syncs } times: cudnn.benchmark is
            timing every algorithm for each new shape.
       *[no] {" "}{ what }.
    }
advice = { $once ->
    [yes] The shapes repeat: cuDNN set each up once, in the first pass (a cold forward), not in the steady
        state. Run one iteration before profiling, or profile with torch.profiler.schedule(wait=1, warmup=1,
        active=N){ $benchmark ->
            [yes] ; cudnn.benchmark's search pays off on shapes that repeat, keep it.
           *[no] .
        }
   *[no] { $benchmark ->
        [yes] Set torch.backends.cudnn.benchmark = False while input shapes keep changing (it pays only for
            shapes that repeat), or keep them fixed: bucket the sizes to a few and warm each one up before
            profiling.
       *[no] { $kind ->
            [attention] Pin scaled_dot_product_attention to the flash or memory-efficient kernels, which need no
                per-shape graph: with torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION,
                SDPBackend.EFFICIENT_ATTENTION]): around the model call; or keep the length fixed (a static KV
                cache, transformers' cache_implementation='static', or padding to a few lengths).
           *[other] Keep the input shapes to a few sizes (bucket or pad them) and warm each one up before
                profiling: every new shape costs a new cuDNN plan, on the host, with the GPU idle.
        }
    }
  }
fix = { $once ->
    [yes] { $op } sets up each shape once in the window's first pass ({ $idle_us } once); the shapes repeat
        after it: run one iteration before profiling.
   *[no] { $benchmark ->
        [yes] { $op } runs cudnn.benchmark's algorithm search for every new input shape, { $step_idle_us } { per }:
            set torch.backends.cudnn.benchmark = False or keep the shapes fixed.
       *[no] { $kind ->
            [attention] { $op } builds a cuDNN graph for every new sequence length, { $step_idle_us } { per }: pin
                SDPA to flash/efficient (torch.nn.attention.sdpa_kernel) or use a static KV cache.
           *[other] { $op } builds a cuDNN plan for every new shape, { $step_idle_us } { per }: bucket the input
                sizes to a few.
        }
    }
  }
basis = the GPU idle inside the cuDNN calls that set up a shape ({ $idle_us }){ $has_typical ->
        [yes] , less the same ops' idle in their other calls
       *[no] , an upper bound (no other call of these ops to compare with)
    }, { $once ->
        [yes] once, a first pass
       *[no] { $per_step ->
            [yes] per step
           *[no] over the window
        }
    }
call-note = { $idle_us } of GPU idle in this call, { $launches } kernel(s) launched{ $has_dims ->
    [yes] ; input { $dims }
   *[no] {""}
  }
