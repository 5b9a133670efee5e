## dead-window: the text of its findings, in English
title = Dead window: a region waits long before its first launch

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    A record_function region (a ProfilerStep, or a user region such as `matmul_add`) runs for a long
    time (over 1 ms) before its first kernel launch (on a CPU-only trace: before its first aten:: op),
    far longer than the same region takes to get there on its other calls (regions seen once: the 1 ms
    alone): one-time set-up inside the window. The first calls later in the same region call (ops
    that load their CUDA kernels) are part of the same set-up and counted with it.

    Why:
    The set-up (cuBLAS handle and workspace allocation, library heuristics, CUDA lazy module loading,
    compiled-graph loading) is paid once, but it sits inside the first call's region and ops, so those
    look slow and the GPU idles through it. It is not what the program costs per step.

    Example:
    `gpu/window_sync_cold` (the process's first `matmul_add`, no schedule): the region ran 95.921 ms
    before its first launch (cuLaunchKernelEx in aten::mm), 91.7 ms of it untraced set-up inside
    aten::mm (cuBLAS), then aten::add's first call took 15.1 ms more (its kernel loaded lazily).
    `gpu/eval_first_call`: an evaluation branch (`eval_metrics`) first run in step 3 waits 19.6 ms in
    its bf16 -> fp32 copy before the first launch, and its first calls (the copy's own kernel load,
    cross-entropy, argmax, eq, mean) take 126.0 ms more.

    Impact:
    One-time: the GPU idle time from the region's start to its first launch, plus that of the later
    first calls in the same region call, less the wait its other calls have, spread over the window's
    steps. gpu/window_sync_cold: 111.1 ms, 99% of its window (critical); gpu/eval_first_call: 145.6 ms
    over 3 steps, 48.5 ms per step against a 3.8 ms median step (critical). The region must wait on its
    own account: the profiler's buffer request inside the wait does not count towards the 1 ms and 5x
    (gpu/window_sync_warm waits 2.0 ms, 1.8 ms of it the profiler's: profiler-overhead's finding), but
    belongs to this finding where it fires. A window inside a cold first step is cold-start's
    (seed_mm64_cold's 107 ms, reported here before), one inside compile spans recompilation's.

    A first call with no load event (older CUPTI, ROCm) counts where it starts CUDA up
    (_one_time.startup_ops) for 1 ms or more past the wait (foreign/hta_alexnet: the first convolution's
    10.0 s past the region's first launch, nobody's before). A wait more than half the profiler's own
    buffer requests is profiler-overhead's, and the first calls after it lazy-loading's (TraceLens'
    tl_b200_eager: 2.6 ms, 1.5 ms of it an Activity Buffer Request; issue 35). A wait more than half the
    host's own work is no set-up either: Python frames, syncs draining work queued before the region, and
    ops whose other calls take as long are what the region does every time (held-out TraceLens traces:
    tl_h100_timesformer's 218 ms of VideoMAE preprocessing per video, 57% of its window 'once' before;
    tl_h100_qwen05's 14.1 ms harness cudaDeviceSynchronize waiting for 500 earlier kernels); below that
    share their time is left out of the impact.

    Fix:
    Warm up outside the profiler: run the step (every shape, every branch) a few times before
    profiling, or use `torch.profiler.schedule(wait=1, warmup=1, active=N)` so the set-up falls outside
    the window.

target = { $target ->
    [launch] kernel launch
   *[aten] aten:: op
  }
in-step = { $in_step ->
    [yes] {" "}(step { $step })
   *[no] {""}
  }
schedule = torch.profiler.schedule(wait=1, warmup=1, active={ $steps })
# the schedule as the other way out, unless the trace's schedule already warmed up
or-schedule = { $warmed_up ->
    [yes] {" "}(the schedule's warm-up steps did not run it)
   *[no] , or profile with { schedule }
  }
call-item = { $name } { $us }
message = '{ $region }'{ in-step } ran { $gap_us } before its first { target } ({ $first_target }{ $has_op ->
        [yes] {" "}inside { $in_op }
       *[no] {""}
    }){ $has_typical ->
        [yes] , { $ratio }x the { $typical_us } its other calls take
       *[no] {""}
    }. { $recorded_us } of it is in recorded calls{ $has_fillers ->
        [yes] {" "}({ $fillers })
       *[no] {""}
    }; { $untraced_us } is untraced set-up{ $has_op ->
        [yes] {" "}inside { $in_op }
       *[no] {""}
    }.{ $has_profiler ->
        [yes] {" "}The profiler's own buffer requests are { $profiler_us } of the wait.
       *[no] {""}
    }{ $has_first_calls ->
        [yes] {" "}Then first calls in the same region (ops loading their CUDA kernels) add { $first_calls_us }:
            { $first_calls }.
       *[no] {""}
    }{ $has_loading ->
        [yes] {" "}CUPTI records { $loading_us } of kernel loading in them; the rest of those calls is set-up it
            does not trace (module loading, allocations).
       *[no] {""}
    }
advice = { $cause ->
    [profiler] Most of the wait is the profiler's own buffer requests, not the program: profile with
        { schedule } so they fall in the warm-up steps.
    [library] { $in_op }'s first call sets up cuBLAS (handle, workspace, kernel choice) and loads its kernels:
        run '{ $region }' once before profiling{ or-schedule }.
    [host] '{ $region }' runs its own code for long before its first op the first time (imports, caches, data
        loader start-up): warm it up before profiling{ or-schedule }.
   *[first-calls] '{ $region }' runs its ops for the first time in the process (CUDA loads their kernels
        lazily): run it once (every branch and shape) before profiling{ or-schedule };
        CUDA_MODULE_LOADING=EAGER moves the loading to start-up.
  }
fix = '{ $region }'{ in-step } waits { $gap_us } before its first { target }{ $has_first_calls ->
        [yes] , and its first calls add { $first_calls_us }
       *[no] {""}
    } (one-time set-up{ $has_op ->
        [yes] {" "}in { $in_op }
       *[no] {""}
    }): run it once before profiling{ or-schedule }.
basis = one-time: the GPU idle from the region's start to its first { target } and in its later first
    calls{ $has_typical ->
        [yes] , less its other calls' usual wait
       *[no] {""}
    }
window-note = from { $region } to its first { target }
region-note = the region
target-note = its first { target }{ $has_op ->
        [yes] {" "}inside { $in_op }
       *[no] {""}
    }
filler-note = in the window, self time { $us }
first-call-note = a first call (its kernel loaded lazily), { $us } after the wait
