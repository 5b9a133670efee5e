## recompilation: the text of its findings, in English
title = torch.compile compiles inside the profiled window, or nears its recompile limit
severity-exception = at least a warning near the recompile limit: past it the frame runs eagerly

# message, advice, fix, basis, one message per note class: by hand (src/pista/i18n/README.md)

docs =
    What:
    torch.compile compiles inside the profiled window: Dynamo/Inductor compile spans (`dynamo`,
    `entire_frame_compile`, `_compile.compile_inner (dynamo_timed)`, `OutputGraph.call_user_compiler`,
    `CompileTime`, autotuning...) run inside the steps, or one frame shows up under several compile
    ids (`Torch-Compiled Region: 0/1`, `0/2`, ...: the number after the slash counts recompiles), each
    running its own graph (`## Call CompiledFxGraph <hash>` with a new hash). It tells a warm-up (a
    frame's first compile, once) from steady-state recompiles, and warns when a frame nears the
    recompile limit.

    Why:
    A compile costs hundreds of ms to seconds of host time, during which the GPU waits. Compiling once
    at start-up is the deal torch.compile offers; compiling again in the steady state means a guard
    failed: a new input shape (without dynamic shapes), a new dtype or device, a changed Python
    constant or global, a new module instance. Each recompile also adds an entry the guards must
    check on every later call, and past `torch._dynamo.config.recompile_limit` (8) Dynamo gives up and
    runs the frame eagerly.

    Example:
    gpu/recompile on an H200: `torch.compile(fn, dynamic=False)` of `relu(x @ w) + 1` called with a
    new square size each step (96, 128, 160 in the profiled steps): compile ids 0/1, 0/2, 0/3, one
    compile per step (`dynamo` 220-231 ms each) plus Inductor autotuning on each new graph's first call
    (60-68 ms): 865 ms of the 896 ms of steps (96.6%).

    Impact:
    The compile time (the top-level compile spans, autotuning included) during which the GPU ran none
    of the user's work, per step. Steady-state recompiles (compiles in two or more steps) cost that
    each time: gpu/recompile 288 ms per step, 96% (critical), and its frame 0 already holds 4 of its 8
    entries, one more per step. A warm-up (the first compiles of their frames, in one step) or a single
    recompile is spread over the window's steps and its basis says "one-time": warming up before
    profiling fixes it. A frame holding half the limit or more (`Torch-Compiled Region: F/R` with
    R+1 >= 4) is reported even when nothing compiles inside the window, as at least a warning: past
    the limit the frame runs eagerly. It used to be a warning from 1 ms of compile time, whatever
    its share.

    Fix:
    Find what changes with `TORCH_LOGS="recompiles"` (or `torch._dynamo.explain`); mark varying
    dimensions dynamic (`torch._dynamo.mark_dynamic(x, 0)`, `dynamic=True`) or pad/bucket the shapes to
    a few sizes; keep Python scalars that change out of the compiled function (pass them as tensors);
    warm up every shape before profiling or timing.

id-item = frame { $frame }: { $ids }
frame-item = frame { $frame } ({ $ids })
held-item = frame { $frame } holds { $entries }
steps = { $steps_hit ->
    [none] the window
    [one] step { $step_list }
   *[many] steps { $step_list }
  }
what = { $compiles } compile(s){ $has_autotunes ->
    [yes] {" "}and { $autotunes } autotuning run(s)
   *[no] {""}
  }
cost = { what } in { steps }: { $compile_us } of host time, { $exposed_us } of it with the GPU idle, { $share }% of
    the { $kind ->
        [steady] step time
       *[other] window
    }
frames = { $has_frames ->
    [yes] { $frame_list }
   *[no] torch.compile
  }
guard-fix = { $has_shapes ->
    [yes] mark the dimensions that vary dynamic (torch._dynamo.mark_dynamic(x, dim) or torch.compile(dynamic=True))
        or pad/bucket the inputs to a few shapes
   *[no] keep what the failing guard checks fixed (pass changing Python scalars as tensors, reuse one module
        instance, keep dtypes and devices)
  }
near-limit-text = { $near ->
    [yes] {" "}Near the recompile limit: { $held } of the { $limit } compiled entries
        torch._dynamo.config.recompile_limit allows (cache_size_limit before torch 2.7); past it Dynamo stops
        compiling the frame and runs it eagerly.{ $has_rate ->
            [yes] {" "}At { $rate } recompile(s) per step, frame { $rate_frame } reaches it in about { $rate_steps }
                more step(s).
           *[no] {""}
        }
   *[no] {""}
  }
message = { $kind ->
        [steady] torch.compile recompiles in the steady state, { cost }: a guard keeps failing, so this cost comes
            back every time.
        [warmup] torch.compile's first compile runs inside the window, { cost }: a one-time warm-up, not a
            steady-state cost.
        [near-limit] Nothing compiles inside the window, but its compiled regions show how often their frames
            recompiled.
       *[once] torch.compile recompiled once inside the window, { cost }: one-time here, but it comes back whenever
            the same guard fails again.
    }{ $has_frames ->
        [yes] {" "}Compile ids seen: { $ids }.
       *[no] {""}
    }{ $many_graphs ->
        [yes] {" "}{ $graphs } different compiled graphs called (## Call CompiledFxGraph hashes).
       *[no] {""}
    }{ $has_shapes ->
        [yes] {" "}Input shapes per call: { $shapes }.
       *[no] {""}
    }{ near-limit-text }
raising = { $near ->
    [yes] {" "}Raising recompile_limit only postpones the fallback to eager: fix the guard.
   *[no] {""}
  }
advice = { $kind ->
    [warmup] Warm up before profiling or timing: run the compiled step a few times first, or profile with
        torch.profiler.schedule(wait=1, warmup=1, active=N); nothing to change in the model.
    [steady] { $has_shapes ->
            [yes] The input shapes change between calls:
           *[no] A guard fails call after call:
        } { guard-fix }. TORCH_LOGS='recompiles' names the guard that failed.{ raising }
    [near-limit] Find what recompiles with TORCH_LOGS='recompiles' and { guard-fix }.{ raising }
   *[once] Warm up every input shape before profiling; if this one recurs in training, { guard-fix }.
        TORCH_LOGS='recompiles' names the guard that failed.{ raising }
  }
fix = { $kind ->
    [steady] { frames } recompiles in { steps } ({ $has_shapes ->
            [yes] new input shapes
           *[no] a guard fails
        }), { $step_exposed_us } per step: { guard-fix }.
    [warmup] { frames } compiles for the first time inside the window ({ $exposed_us }, one-time): warm up before
        profiling.
    [near-limit] { frames } nears the recompile limit ({ $limit }): { guard-fix }.
   *[once] { frames } recompiles once inside the window ({ $exposed_us }, one-time): warm up every shape before
        profiling.
  }
basis = { $kind ->
    [steady] compile time with the GPU idle, per step: it recurs each time a guard fails
    [near-limit] no compile inside the window; the warning is for the recompile limit
   *[once] one-time: the compile time with the GPU idle, in the whole window (warm up before profiling)
  }
compile-span = { $autotune ->
        [yes] autotuning
       *[no] compile
    }{ $has_id ->
        [yes] {" "}{ $compile_id }
       *[no] {""}
    }: { $dur_us }
region-call = compiled region call: frame { $frame }, compile { $frame }/{ $count }
